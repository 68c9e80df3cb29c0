#!/usr/bin/env bash
# A program that reads the clock far more often than it communicates, under the trace module:
# the figures behind docs/PERFORMANCE.md ("Tracing", cheap calls).
#
#   bash bench/run_trace_timer.sh [BUILD_DIR]      (default ./build)
#
# Runs the tests' timer_loop_c on 2 ranks (ROUNDS rounds of READS MPI_Wtime and READS
# MPI_Comm_rank a rank, a message each way and a barrier between rounds), interleaved: natively,
# under `strata run --tools trace` of BUILD_DIR and, with BASE=<another build>, of that build (the
# one before a change). Prints one line per run: the wall time of the whole job, the time the
# rounds took (the program's own MPI_Wtime), the events written and dropped; then the medians.
#
# Knobs (environment): FLAVOR=openmpi|mpich, ROUNDS=4, READS=2000000 (8 M MPI_Wtime a rank),
# REPS=5, BASE=<build dir>.
set -euo pipefail
source "$(dirname "$0")/lock.sh"
BUILD=$(cd "${1:-build}" && pwd)
FLAVOR=${FLAVOR:-openmpi}
ROUNDS=${ROUNDS:-4}
READS=${READS:-2000000}
REPS=${REPS:-5}
prog=$BUILD/tests/$FLAVOR/timer_loop_c
[[ -x $prog ]] || { echo "no $prog" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
configs="native trace"
[[ -n ${BASE:-} ]] && configs="native base trace"
for rep in $(seq "$REPS"); do
  for cfg in $configs; do
    rm -rf "$tmp/trace"
    start=$(date +%s.%N)
    case $cfg in
      native) out=$("mpirun.$FLAVOR" $([[ $FLAVOR == openmpi ]] && echo --allow-run-as-root) -np 2 \
                    "$prog" "$ROUNDS" "$READS" 2>&1) ;;
      base) out=$(STRATA_TRACE_DIR=$tmp/trace "$BASE/bin/strata" run --mpi "$FLAVOR" -np 2 \
                  --tools trace -- "$prog" "$ROUNDS" "$READS" 2>&1) ;;
      trace) out=$(STRATA_TRACE_DIR=$tmp/trace "$BUILD/bin/strata" run --mpi "$FLAVOR" -np 2 \
                   --tools trace -- "$prog" "$ROUNDS" "$READS" 2>&1) ;;
    esac
    end=$(date +%s.%N)
    loop=$(sed -n 's/.* reads in \([0-9.]*\) s/\1/p' <<<"$out")
    events=$(sed -n 's/.*trace: \([0-9]*\) events of.*/\1/p' <<<"$out")
    dropped=$(sed -n 's/.*(\([0-9]*\) dropped at the size limit).*/\1/p' <<<"$out")
    echo "bench timer flavor=$FLAVOR cfg=$cfg rep=$rep wall_s=$(echo "$end - $start" | bc)" \
         "loop_s=$loop events=${events:-0} dropped=${dropped:-0}"
  done
done | tee "$tmp/raw"
for cfg in $configs; do
  for key in wall_s loop_s; do
    median=$(grep "cfg=$cfg " "$tmp/raw" | sed -n "s/.* $key=\([0-9.]*\).*/\1/p" | sort -g |
             awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}')
    echo "median flavor=$FLAVOR cfg=$cfg $key=$median"
  done
done
