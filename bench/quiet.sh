#!/usr/bin/env bash
# Runs one benchmark command with the rest of the machine paused, for figures that a second
# process on this 2-core VM would spoil (docs/PERFORMANCE.md, "Lean polls"):
#
#   bash bench/quiet.sh COMMAND [ARGS...]
#
# Takes an exclusive lock on /tmp/strata-quiet.lock (builds and other benchmarks that take it
# shared or exclusive wait; they should: `flock -s /tmp/strata-quiet.lock make ...`), then
# stops (SIGSTOP) every process of every other session except the kernel's and the init's, runs
# the command, and continues them (SIGCONT) when it ends, however it ends. Processes started by
# the command are its own session's and keep running. Never use it around anything that another
# session must answer while it runs (a server the command talks to, for instance).
set -uo pipefail
exec 9>/tmp/strata-quiet.lock
flock -x 9
mysid=$(ps -o sid= -p $$ | tr -d ' ')
mapfile -t paused < <(ps -eo pid=,sid=,comm= |
  awk -v me="$mysid" '$2 != 0 && $2 != me && $1 != 1 && $3 !~ /^(kworker|ksoftirq)/ {print $1}')
resume() { ((${#paused[@]})) && kill -CONT "${paused[@]}" 2>/dev/null; }
trap resume EXIT
((${#paused[@]})) && kill -STOP "${paused[@]}" 2>/dev/null
sleep 0.5 # let what was running leave the cores and the memory bus
"$@"
