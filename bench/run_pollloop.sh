#!/usr/bin/env bash
# What a layer in the poll costs a memory-bound loop (docs/PERFORMANCE.md, "Lean polls"):
# BUILD_DIR/bench/<flavor>/poll_update_loop, one random table update and one MPI_Test
# per iteration (HPCC's MPIRandomAccess in miniature), on 2 ranks, in interleaved rounds of
#   native    plain mpirun
#   nomodule  Strata loaded with an empty stack (STRATA_DISABLE=1: the entry point only)
#   empty     one `empty` wrapper layer
#   profile   the profile (its default poll sampling)
#   untimed   the profile with no poll timed (STRATA_PROFILE_POLL_SAMPLE=1000000)
#   exact     the profile with exact polls (STRATA_PROFILE_POLLS=exact: the untimed polls'
#             completions read after the call)
# and prints the median ns per iteration of each against native.
#
# PAIRS=P (> 0) runs the program's paired mode instead: in each run, P pairs of blocks poll
# through MPI_X (the configuration's tool) and through the MPI library's own PMPI_X, in turns,
# and the run reports the median of the pairs' ratios. The machine's drift between runs (the
# memory of a shared host) cancels; what stays is the run-to-run spread of the ratio itself,
# which is large where the loop sits at the edge of overlapping its cache misses
# (docs/PERFORMANCE.md, "Lean polls"). The table then gives each configuration's ratios, run
# by run, sorted.
#
#   bash bench/run_pollloop.sh [BUILD_DIR]
#
# Knobs: FLAVORS="openmpi mpich", ROUNDS=5, LOG2_WORDS=24 (a 128 MiB table per rank, far past
# the caches, as HPCC's), ITERATIONS=10000000, POLL_EVERY=1 (0: no polls), HUGE_PAGES=0 (1: the
# table on transparent huge pages), TESTANY=0 (N: MPI_Testany over N receives), CONFIGS (the list
# above), NP=2 (ranks; 1 leaves a core to whatever else runs), PAIRS=0, RAW=<file> to keep the
# "bench pollloop" / "bench pollpairs" lines.
set -euo pipefail
source "$(dirname "$0")/lock.sh"

BUILD=$(cd "${1:-build}" && pwd)
FLAVORS=${FLAVORS:-"openmpi mpich"}
ROUNDS=${ROUNDS:-5}
LOG2_WORDS=${LOG2_WORDS:-24}
ITERATIONS=${ITERATIONS:-10000000}
POLL_EVERY=${POLL_EVERY:-1}
HUGE_PAGES=${HUGE_PAGES:-0}
TESTANY=${TESTANY:-0}
CONFIGS=${CONFIGS:-"native nomodule empty profile untimed"}
NP=${NP:-2}
PAIRS=${PAIRS:-0}
STRATA=$BUILD/bin/strata

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=${RAW:-$tmp/raw.txt}
: >"$raw"

run() { # FLAVOR CONFIG : one run, its "bench pollloop" line tagged and appended to the raw file
  local flavor=$1 config=$2 prog=$BUILD/bench/$1/poll_update_loop
  local args=("$prog" "$LOG2_WORDS" "$ITERATIONS" "$POLL_EVERY" "$HUGE_PAGES" "$TESTANY" "$PAIRS") cmd env=(STRATA_SPOOL="$tmp/spool")
  local strata=("$STRATA" run -np "$NP" --mpi "$flavor")
  case $config in
    native)
      cmd=("mpirun.$flavor" -np "$NP")
      [[ $flavor == openmpi ]] && cmd+=(--allow-run-as-root)
      cmd+=("${args[@]}")
      ;;
    nomodule) env+=(STRATA_DISABLE=1) && cmd=("${strata[@]}" --tools profile -- "${args[@]}") ;;
    empty) cmd=("${strata[@]}" --tools empty -- "${args[@]}") ;;
    profile) cmd=("${strata[@]}" --tools profile -- "${args[@]}") ;;
    untimed)
      env+=(STRATA_PROFILE_POLL_SAMPLE=1000000)
      cmd=("${strata[@]}" --tools profile -- "${args[@]}")
      ;;
    exact)
      env+=(STRATA_PROFILE_POLLS=exact)
      cmd=("${strata[@]}" --tools profile -- "${args[@]}")
      ;;
    *) echo "run_pollloop: unknown configuration '$config'" >&2 && exit 2 ;;
  esac
  mkdir -p "$tmp/spool"
  env "${env[@]}" "${cmd[@]}" | grep -E '^bench poll(loop|pairs)' | sed "s/^/flavor=$flavor config=$config /" >>"$raw"
}

for flavor in $FLAVORS; do
  [[ -x $BUILD/bench/$flavor/poll_update_loop ]] || { echo "skipping $flavor (not built)" >&2; continue; }
  for ((round = 1; round <= ROUNDS; round++)); do
    for config in $CONFIGS; do
      echo "== $flavor round $round/$ROUNDS: $config" >&2
      run "$flavor" "$config"
    done
  done
done

python3 - "$raw" <<'PY'
import re, statistics, sys
runs, ratios = {}, {}
for line in open(sys.argv[1]):
    f = dict(re.findall(r"(\w+)=(\S+)", line))
    if "median_ratio" in f:
        ratios.setdefault((f["flavor"], f["config"]), []).append(float(f["median_ratio"]))
        continue
    runs.setdefault((f["flavor"], f["config"]), []).append(float(f["ns_per_iteration"]))
configs = ("native", "nomodule", "empty", "profile", "untimed", "exact")
for flavor in sorted({k[0] for k in ratios}):
    print(f"\n{flavor}: tool / library poll, median of each run's pairs, runs sorted")
    print("| configuration | runs | ratios | runs over 1.25 |")
    print("|---|---:|---|---:|")
    for config in configs:
        v = sorted(ratios.get((flavor, config), []))
        if v:
            print(f"| {config} | {len(v)} | {' '.join(f'{x:.3f}' for x in v)} | {sum(x > 1.25 for x in v)} |")
for flavor in sorted({k[0] for k in runs}):
    print(f"\n{flavor}: ns per iteration (one random update + one poll), median of runs")
    print("| configuration | runs | median | min | max | vs native (medians) |")
    print("|---|---:|---:|---:|---:|---:|")
    native = statistics.median(runs.get((flavor, "native"), [float("nan")]))
    for config in configs:
        v = runs.get((flavor, config))
        if not v:
            continue
        m = statistics.median(v)
        print(f"| {config} | {len(v)} | {m:.1f} | {min(v):.1f} | {max(v):.1f} | {100 * (m / native - 1):+.1f} % |")
PY
