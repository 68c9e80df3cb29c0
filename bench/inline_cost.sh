# Sourced by bench/run_pair_sums.sh and bench/run_where_note.sh, after lock.sh: their common run.
# inline_cost_run BUILD PROGRAM KIND ROW... runs BUILD/bench/<flavor>/PROGRAM (Google Benchmark)
# for each of FLAVORS, each benchmark REPS times interleaved at random, pinned to CPU, and prints
# per ROW ("label|measured|baseline", benchmark names without their /0 or /32 argument) the
# median CPU time of `measured` minus that of `baseline`, bare (argument 0) and in a call (32
# dependent multiplies, 96 cycles: the first ROW's baseline also gives the clock it implies).
# KIND heads the label column. Knobs: FLAVORS="openmpi mpich", REPS=15, MIN_TIME=0.1 (seconds
# per repetition), CPU=1.
inline_cost_run() {
  local build=$1 program=$2 kind=$3
  shift 3
  local flavor out
  echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), load $(cut -d' ' -f1-3 /proc/loadavg)"
  for flavor in ${FLAVORS:-openmpi mpich}; do
    out=$(mktemp)
    taskset -c "${CPU:-1}" "$build/bench/$flavor/$program" --benchmark_repetitions="${REPS:-15}" \
      --benchmark_enable_random_interleaving=true --benchmark_min_time="${MIN_TIME:-0.1}" \
      --benchmark_report_aggregates_only=true --benchmark_format=json >"$out" 2>/dev/null
    python3 - "$flavor" "$out" "$kind" "$@" <<'PY'
import json, sys
flavor, path, kind, *specs = sys.argv[1:]
median = {b["run_name"]: b["cpu_time"] for b in json.load(open(path))["benchmarks"]
          if b.get("aggregate_name") == "median"}
rows = [spec.split("|") for spec in specs]
clock = median[rows[0][2] + "/32"]
print(f"{flavor}: ns per call, median CPU time; the baseline with 32 multiplies "
      f"{clock:.1f} ns ({96 / clock:.2f} GHz at 3 cycles each)")
print(f"  {kind:36} {'bare':>6} {'in a call':>10}")
for label, measured, base in rows:
    bare = median[measured + "/0"] - median[base + "/0"]
    in_call = median[measured + "/32"] - median[base + "/32"]
    print(f"  {label:36} {bare:6.2f} {in_call:10.2f}")
PY
    rm -f "$out"
  done
}
