#!/usr/bin/env bash
# A real Slurm on this machine for trying Strata's Slurm integration and for its tests: munged,
# slurmctld and two slurmd (nodes n1 and n2, both this machine, 4 CPUs each whatever it has),
# with the SPANK plugin enabled in the sandbox's own plugstack.conf. Nothing outside the state
# directory is changed, and `stop` ends only the daemons this script started (their pid files).
#
#   bash scripts/slurm-sandbox.sh start|stop|status [--dir DIR] [--plugin PATH] [--args "..."]
#
# DIR defaults to /tmp/strata-slurm (STRATA_SLURM_DIR); PATH to the plugin of ./build
# (build/lib/strata/slurm/strata_spank.so), --args are the plugin's arguments in
# plugstack.conf (default: none). Clients use the sandbox with `export SLURM_CONF=DIR/slurm.conf`
# (printed by start). Run as root (slurmd starts the tasks as the job's user).
set -euo pipefail
cd "$(dirname "$0")/.."

action=${1:-status}
shift || true
dir=${STRATA_SLURM_DIR:-/tmp/strata-slurm}
plugin=$PWD/${STRATA_BUILD_DIR:-build}/lib/strata/slurm/strata_spank.so
plugin_args=""
while (($#)); do
  case $1 in
  --dir) dir=$2; shift 2 ;;
  --plugin) plugin=$(realpath -m "$2"); shift 2 ;;
  --args) plugin_args=$2; shift 2 ;;
  *) echo "slurm-sandbox: unknown argument $1" >&2; exit 2 ;;
  esac
done
nodes=(n1 n2)
ctld_port=${STRATA_SLURM_PORT:-16817}

die() { echo "slurm-sandbox: $*" >&2; exit 1; }

# The pid in FILE when that process is alive and runs PROGRAM; else nothing.
live_pid() {
  local file=$1 program=$2 pid
  [[ -s $file ]] || return 1
  pid=$(<"$file")
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  [[ $(readlink "/proc/$pid/exe" 2>/dev/null) == *"$program"* ]] || return 1
  echo "$pid"
}

daemons() { # name pidfile program
  echo "munged $dir/munge/munged.pid munged"
  echo "slurmctld $dir/slurmctld.pid slurmctld"
  for n in "${nodes[@]}"; do echo "slurmd-$n $dir/slurmd-$n.pid slurmd"; done
}

status() {
  local up=0 name file program
  while read -r name file program; do
    if pid=$(live_pid "$file" "$program"); then
      echo "$name: running (pid $pid)"
      up=$((up + 1))
    else
      echo "$name: stopped"
    fi
  done < <(daemons)
  ((up == 2 + ${#nodes[@]}))
}

# Cancels the sandbox's jobs and waits (at most 30 s) until Slurm has ended them: a job step's
# slurmstepd and srun outlive the daemons and would wait for them forever.
cancel_jobs() {
  live_pid "$dir/slurmctld.pid" slurmctld >/dev/null || return 0
  local jobs
  jobs=$(SLURM_CONF=$dir/slurm.conf squeue -h -o %F 2>/dev/null | sort -u) || return 0
  [[ -n $jobs ]] || return 0
  # shellcheck disable=SC2086 # one word per job
  SLURM_CONF=$dir/slurm.conf scancel $jobs 2>/dev/null || true
  for _ in $(seq 60); do
    [[ -z $(SLURM_CONF=$dir/slurm.conf squeue -h 2>/dev/null) ]] && return 0
    sleep 0.5
  done
  echo "slurm-sandbox: jobs still ending after 30 s: ${jobs//$'\n'/ }" >&2
}

stop() {
  local name file program pid
  cancel_jobs
  # slurmd first (it may still run job steps), munged last (the others authenticate through it).
  while read -r name file program; do
    pid=$(live_pid "$file" "$program") || continue
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
    rm -f "$file"
  done < <(daemons | tac)
}

write_config() {
  local cpus=4 user
  user=$(id -un)
  mkdir -p "$dir/munge" "$dir/state" "$dir/log"
  for n in "${nodes[@]}"; do mkdir -p "$dir/spool-$n" "$dir/tmp-$n"; chmod 1777 "$dir/tmp-$n"; done
  chmod 700 "$dir/munge"
  [[ -s $dir/munge/munge.key ]] || { dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none; }
  chmod 400 "$dir/munge/munge.key"
  {
    echo "# Strata's Slurm sandbox (scripts/slurm-sandbox.sh): two nodes on this machine"
    echo "ClusterName=strata"
    echo "SlurmctldHost=localhost"
    echo "SlurmctldPort=$ctld_port"
    echo "SlurmUser=$user"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "AuthInfo=socket=$dir/munge/munge.socket"
    echo "CredType=cred/munge"
    echo "StateSaveLocation=$dir/state"
    echo "SlurmdSpoolDir=$dir/spool-%n"
    # PMIx's client directories are made under TmpFS: one per node, or the two slurmd collide.
    echo "TmpFS=$dir/tmp-%n"
    echo "SlurmctldPidFile=$dir/slurmctld.pid"
    echo "SlurmdPidFile=$dir/slurmd-%n.pid"
    echo "SlurmctldLogFile=$dir/log/slurmctld.log"
    echo "SlurmdLogFile=$dir/log/slurmd-%n.log"
    echo "PlugStackConfig=$dir/plugstack.conf"
    echo "Epilog=$dir/epilog.sh"
    echo "TaskProlog=$dir/task-prolog.sh"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    # Backfill: slurmctld schedules heterogeneous jobs (srun A : B, sbatch hetjob) with it
    # only; every second, so that they start as soon as a plain job would.
    echo "SchedulerType=sched/backfill"
    echo "SchedulerParameters=bf_interval=1"
    echo "MpiDefault=none"
    echo "ReturnToService=2"
    echo "SlurmdParameters=config_overrides"
    # Short ticks: a job over its time limit ends within seconds, not a minute.
    echo "KillWait=2"
    echo "OverTimeLimit=0"
    echo "MinJobAge=30"
    echo "InactiveLimit=0"
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=30"
    echo "MessageTimeout=20"
    local port=$((ctld_port + 1))
    for n in "${nodes[@]}"; do
      echo "NodeName=$n NodeHostname=localhost NodeAddr=127.0.0.1 Port=$port CPUs=$cpus State=UNKNOWN"
      port=$((port + 1))
    done
    echo "PartitionName=debug Nodes=$(IFS=,; echo "${nodes[*]}") Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
  } >"$dir/slurm.conf"
  if [[ -f $plugin ]]; then
    echo "optional $plugin $plugin_args" >"$dir/plugstack.conf"
  else
    echo "slurm-sandbox: no plugin at $plugin (build it: cmake --build build --target strata_spank); jobs run without it" >&2
    : >"$dir/plugstack.conf"
  fi
  # Both nodes are this machine: Open MPI takes ranks of one host name for one node and its
  # shared-memory transport then mixes up the two nodes' local ranks (a crash in vader), so the
  # ranks of a sandbox job talk over TCP.
  cat >"$dir/task-prolog.sh" <<EOF
#!/bin/sh
echo "export TMPDIR=$dir/tmp-\$SLURMD_NODENAME"
echo "export OMPI_MCA_btl=self,tcp"
EOF
  chmod 755 "$dir/task-prolog.sh"
  # The epilog runs the job's collection when the sandbox's environment names one.
  cat >"$dir/epilog.sh" <<EOF
#!/bin/sh
[ -x "$dir/epilog.d/collect" ] && exec "$dir/epilog.d/collect"
exit 0
EOF
  chmod 755 "$dir/epilog.sh"
}

start() {
  [[ $(id -u) -eq 0 ]] || die "run as root (slurmd starts tasks as the job's user)"
  for p in munged slurmctld slurmd srun; do
    command -v "$p" >/dev/null || die "$p not found: install Debian's slurmctld slurmd slurm-client munge (scripts/setup.sh)"
  done
  if status >/dev/null; then
    echo "slurm-sandbox: already running in $dir"
    return 0
  fi
  stop # what is left of a sandbox half started
  write_config
  export SLURM_CONF=$dir/slurm.conf
  munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" || die "munged did not start ($dir/log/munged.log)"
  slurmctld -c -f "$dir/slurm.conf" || die "slurmctld did not start ($dir/log/slurmctld.log)"
  for n in "${nodes[@]}"; do
    slurmd -N "$n" -f "$dir/slurm.conf" || die "slurmd -N $n did not start ($dir/log/slurmd-$n.log)"
  done
  for _ in $(seq 100); do
    if [[ $(sinfo -h -o '%T' -N 2>/dev/null | grep -c -E '^idle') -eq ${#nodes[@]} ]]; then
      echo "slurm-sandbox: running in $dir (nodes ${nodes[*]}); export SLURM_CONF=$dir/slurm.conf"
      return 0
    fi
    sleep 0.2
  done
  sinfo -N >&2 || true
  die "the nodes did not come up within 20 s (logs in $dir/log)"
}

case $action in
start) start ;;
stop) stop; echo "slurm-sandbox: stopped" ;;
status) status ;;
*) die "usage: slurm-sandbox.sh start|stop|status [--dir DIR] [--plugin PATH] [--args ARGS]" ;;
esac
