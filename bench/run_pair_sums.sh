#!/usr/bin/env bash
# What the profile's communication matrix costs a call, in ns: the figures behind
# docs/PERFORMANCE.md ("The communication matrix").
#
#   bash bench/run_pair_sums.sh [BUILD_DIR]      (default ./build; about a minute a flavor)
#
# BUILD_DIR/bench/<flavor>/pair_sums (bench/pair_sums.cpp, Google Benchmark): the core's sums per
# peer as the summed path runs them (a send's message to its destination's world rank; the two
# starts of a persistent send and its receive looked up in the table of requests) against a loop
# that does the same work minus the sums. Each benchmark REPS times, interleaved at random,
# pinned to one CPU (CPU=1), the median of the thread's CPU time (wall time means nothing on a
# loaded machine; CPU time does). Two settings: "bare", the sums back to back (an upper bound:
# the adds to one pair chain from call to call), and "in a call", the sums beside 32 dependent
# multiplies carried from call to call (about 33 ns, a barrier on MPI_COMM_SELF), whose latency
# the sums' loads and adds overlap as in a real call.
#
# Knobs: FLAVORS="openmpi mpich", REPS=15, MIN_TIME=0.1 (seconds per repetition), CPU=1.
set -euo pipefail
source "$(dirname "$0")/lock.sh"
build=${1:-build}
flavors=${FLAVORS:-openmpi mpich}
reps=${REPS:-15}
min_time=${MIN_TIME:-0.1}
cpu=${CPU:-1}
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), load $(cut -d' ' -f1-3 /proc/loadavg)"
for flavor in $flavors; do
  out=$(mktemp)
  taskset -c "$cpu" "$build/bench/$flavor/pair_sums" --benchmark_repetitions="$reps" \
    --benchmark_enable_random_interleaving=true --benchmark_min_time="$min_time" \
    --benchmark_report_aggregates_only=true --benchmark_format=json >"$out" 2>/dev/null
  python3 - "$flavor" "$out" <<'PY'
import json, sys
flavor, path = sys.argv[1], sys.argv[2]
median = {b["run_name"]: b["cpu_time"] for b in json.load(open(path))["benchmarks"]
          if b.get("aggregate_name") == "median"}
rows = [("send: its message to the matrix", "send_summed", "send_baseline"),
        ("two starts (a send's, a receive's)", "start_summed", "start_baseline")]
print(f"{flavor}: ns per call, median CPU time; the baseline with 32 multiplies "
      f"{median['send_baseline/32']:.1f} ns ({96 / median['send_baseline/32']:.2f} GHz "
      "at 3 cycles each)")
print(f"  {'sums':36} {'bare':>6} {'in a call':>10}")
for label, summed, base in rows:
    bare = median[summed + "/0"] - median[base + "/0"]
    in_call = median[summed + "/32"] - median[base + "/32"]
    print(f"  {label:36} {bare:6.2f} {in_call:10.2f}")
PY
  rm -f "$out"
done
