#!/usr/bin/env bash
# The fixed cost per job: what the profile and `strata run` add to a 2-rank job that only
# starts and ends MPI (BUILD_DIR/bench/<flavor>/init_finalize). Figures behind
# docs/PERFORMANCE.md ("Profiler", "The fixed cost per job").
#
#   bash bench/run_job_cost.sh [BUILD_DIR]     (RUNS=15: about a minute)
#
# RUNS rounds, each running every configuration once (interleaved), wall time per job:
#   mpirun      mpirun -np RANKS init_finalize
#   mpi-t       the same with MPI_T_FIRST=1: no tool, the program itself starts MPI_T before
#               MPI_Init (what the library charges any tool that reads its variables)
#   preload     the same with the core preloaded by the launcher and STRATA_TOOLS=profile
#   no-mpi-t    the same with STRATA_TOOLS=profile:mpi_t=0 (what reading MPI_T adds)
#   run-none    strata run -np RANKS --tools "" -- init_finalize   (the command's own cost)
#   run         strata run -np RANKS --tools profile -- init_finalize
# and the medians with their differences: preload - mpirun is the profile's start-up and
# finalize, run-none - mpirun is `strata run`'s own start, preload - mpi-t what the profile adds
# beyond the library's own MPI_T start.
# Knobs: FLAVOR=openmpi|mpich, RANKS=2, RUNS=15; BASE=OTHER_BUILD_DIR runs the profile of that
# build too (preload, no-mpi-t, run), interleaved, for a before/after in the same run.
set -euo pipefail
source "$(dirname "$0")/lock.sh"

BUILD=$(cd "${1:-build}" && pwd)
FLAVOR=${FLAVOR:-openmpi}
RANKS=${RANKS:-2}
RUNS=${RUNS:-15}
PROG=$BUILD/bench/$FLAVOR/init_finalize
BASE=${BASE:+$(cd "$BASE" && pwd)}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
unset STRATA_TOOLS STRATA_CONFIG STRATA_PROFILE_OUT STRATA_PROFILE_JSON LD_PRELOAD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export STRATA_SPOOL=$tmp/spool

preload_args() { # BUILD TOOLS -> the launcher's arguments that preload BUILD's core with TOOLS
  local lib=$1/lib/strata/$FLAVOR/libstrata.so
  if [[ $FLAVOR == openmpi ]]; then
    echo -x "LD_PRELOAD=$lib" -x "STRATA_TOOLS=$2"
  else
    echo -genv LD_PRELOAD "$lib" -genv STRATA_TOOLS "$2"
  fi
}
env_args() { # NAME VALUE -> the launcher's arguments that set NAME=VALUE in every rank
  if [[ $FLAVOR == openmpi ]]; then echo -x "$1=$2"; else echo -genv "$1" "$2"; fi
}
if [[ $FLAVOR == openmpi ]]; then
  launch=(mpirun.openmpi --oversubscribe -np "$RANKS")
else
  launch=(mpirun.mpich -np "$RANKS")
fi

ms() { # CMD... -> wall ms
  local s e
  s=$(date +%s%N)
  "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
  e=$(date +%s%N)
  echo $(((e - s) / 1000))
}

for ((r = 1; r <= RUNS; r++)); do
  # The build that runs first in a round tends to be slower: each goes first every other round.
  order=("$BUILD" ${BASE:+"$BASE"})
  ((r % 2 == 0)) && [[ -n $BASE ]] && order=("$BASE" "$BUILD")
  for build in "${order[@]}"; do
    tag=${BASE:+$([[ $build == "$BASE" ]] && echo base- || echo new-)}
    # shellcheck disable=SC2046 # the arguments are words without blanks
    echo "${tag}preload $(ms "${launch[@]}" $(preload_args "$build" profile) "$PROG")"
    # shellcheck disable=SC2046
    echo "${tag}no-mpi-t $(ms "${launch[@]}" $(preload_args "$build" profile:mpi_t=0) "$PROG")"
    echo "${tag}run $(ms "$build/bin/strata" run -np "$RANKS" --tools profile -- "$PROG")"
  done
  echo "mpirun $(ms "${launch[@]}" "$PROG")"
  # shellcheck disable=SC2046
  echo "mpi-t $(ms "${launch[@]}" $(env_args MPI_T_FIRST 1) "$PROG")"
  echo "run-none $(ms "$BUILD/bin/strata" run -np "$RANKS" --tools "" -- "$PROG")"
done >"$tmp/raw"

python3 - "$tmp/raw" "$FLAVOR" "$RANKS" "$RUNS" "${BASE:+1}" <<'PY'
import statistics, sys
from collections import defaultdict
t = defaultdict(list)
for line in open(sys.argv[1]):
    k, v = line.split()
    t[k].append(int(v) / 1000)
m = {k: statistics.median(v) for k, v in t.items()}
print(f"{sys.argv[2]}, {sys.argv[3]} ranks, medians of {sys.argv[4]} interleaved runs (ms):")
for k in sorted(m, key=lambda k: (k.split("-")[0] not in ("mpirun",), k)):
    print(f"  {k:14} {m[k]:7.1f}")
for tag in (["base-", "new-"] if sys.argv[5] else [""]):
    if tag:
        print(f"{'before' if tag == 'base-' else 'after'} ({tag[:-1]}):")
    print(f"  profile's start-up + finalize (preload - mpirun): {m[tag + 'preload'] - m['mpirun']:+.1f} ms")
    print(f"  of which reading MPI_T (preload - no-mpi-t):       {m[tag + 'preload'] - m[tag + 'no-mpi-t']:+.1f} ms")
    print(f"  beyond the library's own MPI_T (preload - mpi-t):  {m[tag + 'preload'] - m['mpi-t']:+.1f} ms")
    print(f"  strata run --tools profile over mpirun:           {m[tag + 'run'] - m['mpirun']:+.1f} ms")
print(f"the library's own MPI_T start, no tool (mpi-t - mpirun): {m['mpi-t'] - m['mpirun']:+.1f} ms")
print(f"strata run's own start (run-none - mpirun):         {m['run-none'] - m['mpirun']:+.1f} ms")
PY
