#!/usr/bin/env bash
# Statistical bottleneck detection (Kluge, Knuepfer and Nagel, "Statistical Methods for Automatic
# Performance Bottleneck Detection in MPI Based Programs"): the figures behind docs/PERFORMANCE.md
# ("Overhead"). Needs a build with tests and examples.
#
#   bash bench/run_overhead.sh [BUILD_DIR]      (default ./build; a few minutes)
#
# 1. time to build a machine model with `strata bench` for P = 2 and 4;
# 2. a program with a known injected delay (tests/programs/injected_delay.c) under the overhead
#    module: the call site that comes first and its wasted time against the injected total;
# 3. a program without injected delay (the ring): charged waste as a fraction of MPI time;
# 4. the paper's Tables 1-2 on the Sweep3D-like example: communication time and the waste of
#    its send and receive lines for 2, 4 and 8 ranks, blocking and non-blocking.
# Knobs: FLAVOR=openmpi|mpich (default openmpi), RUNS=3, MODEL_PS="2 4" (the model of the last
# one is used for parts 2-4; MPICH with 4 ranks polling on 2 cores takes over 15 minutes).
set -euo pipefail
source "$(dirname "$0")/lock.sh"
BUILD=$(cd "${1:-build}" && pwd)
FLAVOR=${FLAVOR:-openmpi}
RUNS=${RUNS:-3}
STRATA=$BUILD/bin/strata
source "$(dirname "$0")/../scripts/mpi-env.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "## Overhead (issue: statistical bottleneck detection), $FLAVOR"
echo
echo "### Time to build a machine model (strata bench, default operations and sizes)"
echo
echo "| P | seconds | points | rejected fits |"
echo "|---:|---:|---:|---:|"
for p in ${MODEL_PS:-2 4}; do
  start=$(date +%s.%N)
  "$STRATA" bench -np "$p" --mpi "$FLAVOR" -o "$tmp/model$p.json" >/dev/null 2>&1
  end=$(date +%s.%N)
  python3 - "$tmp/model$p.json" "$p" "$start" "$end" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
points = [pt for op in m["operations"].values() for pt in op["points"]]
rejected = sum(1 for pt in points if not pt["accepted"])
print(f"| {sys.argv[2]} | {float(sys.argv[4]) - float(sys.argv[3]):.1f} | {len(points)} | {rejected} |")
PY
done
model=$tmp/model${p}.json

summarise() { # record.json -> "top_function top_line top_wasted total_wasted mpi_time"
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
sites = r.get("callsites", [])
top = sites[0] if sites else {"function": "-", "line": 0, "wasted_s": 0}
print(top["function"], top["line"], top["wasted_s"], sum(c["wasted_s"] for c in sites),
      r["job"]["mpi_time_s"])
PY
}

run_overhead() { # ranks prog args... -> record path
  local ranks=$1
  shift
  rm -rf "$tmp/spool"
  STRATA_SPOOL=$tmp/spool STRATA_MODEL=$model "$STRATA" run -np "$ranks" --tools overhead -- "$@" \
    >/dev/null
  ls "$tmp"/spool/*.json
}

echo
echo "### A known injected delay (rank 1 computes 50 ms before every 4th of 40 sends)"
echo
echo "| run | first call site | its wasted s | injected s | vs injected | rank 0's own wait s | vs its wait |"
echo "|---:|---|---:|---:|---:|---:|---:|"
for run in $(seq "$RUNS"); do
  rm -rf "$tmp/spool"
  waited=$(STRATA_SPOOL=$tmp/spool STRATA_MODEL=$model "$STRATA" run -np 2 --tools overhead -- \
    "$BUILD/tests/$FLAVOR/injected_delay_c" 40 50 | awk '/^waited/ {print $2 / 1000}')
  read -r fn line wasted total mpi < <(summarise "$(ls "$tmp"/spool/*.json)")
  python3 -c "print(f'| $run | $fn line $line | {$wasted:.3f} | 0.500 | {100*($wasted-0.5)/0.5:+.1f} % | {$waited:.3f} | {100*($wasted-$waited)/$waited:+.1f} % |')"
done

echo
echo "### No injected delay (ring, 2 ranks, 2000 iterations): waste charged anyway"
echo
echo "| run | charged waste s | MPI time s | fraction |"
echo "|---:|---:|---:|---:|"
for run in $(seq "$RUNS"); do
  rec=$(run_overhead 2 "$BUILD/tests/$FLAVOR/ring_c" 2000)
  read -r fn line wasted total mpi < <(summarise "$rec")
  python3 -c "print(f'| $run | {$total:.5f} | {$mpi:.5f} | {100*$total/$mpi:.1f} % |')"
done

echo
echo "### Sweep3D-like wavefront (examples/sweep.c): the paper's Tables 1 and 2"
echo
echo "| ranks | variant | communication s | wasted at receive lines s | wasted at send lines s |"
echo "|---:|---|---:|---:|---:|"
for ranks in 2 4 8; do
  for variant in blocking nonblocking; do
    flag=""
    [[ $variant == nonblocking ]] && flag=--nonblocking
    rec=$(run_overhead "$ranks" "$BUILD/examples/$FLAVOR/sweep" $flag)
    python3 - "$rec" "$ranks" "$variant" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
sites = r.get("callsites", [])
recv = sum(c["wasted_s"] for c in sites if c["function"] in ("MPI_Recv", "MPI_Irecv", "MPI_Waitall") and "sweep.c" in c["file"] and c["function"] != "MPI_Waitall")
wait = sum(c["wasted_s"] for c in sites if c["function"] == "MPI_Waitall")
send = sum(c["wasted_s"] for c in sites if c["function"] in ("MPI_Send", "MPI_Isend"))
print(f"| {sys.argv[2]} | {sys.argv[3]} | {r['job']['mpi_time_s']:.3f} | {recv + wait:.3f} | {send:.3f} |")
PY
  done
done
