#!/usr/bin/env bash
# Tracing overhead on the Lennard-Jones example (the HieraAnalyses paper, Tables 5 and 9): run time of
# examples/ljmd with no Strata at all (plain mpirun), with the Strata core and no module, and
# under a tool stack (default: the trace module), interleaved, repeated; medians and the overhead.
#
#   bash bench/run_ljmd_trace.sh [BUILD_DIR]          (default ./build)
#
# Knobs: FLAVOR=openmpi|mpich (default openmpi), TOOLS=trace, RANKS=4 (a square), CELLS=6,
# STEPS=300, RUNS=11, VERSIONS="ljmd_mpi ljmd_oo". Two figures per run: the program's own step-loop
# time (slowest rank, what the tracer costs while the application runs) and the launch's wall time
# (also MPI_Init, finalize and the trace's write). Prints a markdown table for docs/PERFORMANCE.md.
#
# MODE=callgrind counts instructions instead (valgrind --tool=callgrind, summed over the ranks),
# which a shared machine does not disturb: the marginal cost of STEPS2 - STEPS steps with and
# without the tool (so MPI_Init, finalize and the trace's write drop out) and the tool's fixed
# cost at STEPS. Deterministic on 1 rank; on more, MPI's polling while a rank waits adds a few
# 0.1 % of noise. Knobs: RANKS, CELLS=4, STEPS=50, STEPS2=150, RUNS=3 (median).
set -euo pipefail
source "$(dirname "$0")/lock.sh"
BUILD=$(cd "${1:-build}" && pwd)
FLAVOR=${FLAVOR:-openmpi}
TOOLS=${TOOLS:-trace}
RANKS=${RANKS:-4}
CELLS=${CELLS:-6}
STEPS=${STEPS:-300}
RUNS=${RUNS:-11}
VERSIONS=${VERSIONS:-"ljmd_mpi ljmd_oo"}
STRATA=$BUILD/bin/strata
source "$(dirname "$0")/../scripts/mpi-env.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export HOME=$tmp STRATA_SPOOL=$tmp/spool STRATA_TRACE_DIR=$tmp/trace  # no user config, no litter
mpirun=(mpirun."$FLAVOR" -np "$RANKS")

if [[ ${MODE:-time} == callgrind ]]; then
  CELLS=${CELLS_CG:-4}
  STEPS2=${STEPS2:-150}
  STEPS=${STEPS_CG:-50}
  RUNS=${RUNS_CG:-3}
  instructions() { # label version steps -> total Ir over the ranks
    local prog=$BUILD/examples/$FLAVOR/$2 vg
    rm -rf "$tmp/cg" "$tmp/trace"
    mkdir -p "$tmp/cg"
    vg=(valgrind -q --tool=callgrind "--callgrind-out-file=$tmp/cg/out.%p")
    if [[ $1 == none ]]; then
      "${mpirun[@]}" "${vg[@]}" "$prog" "$CELLS" "$3" "$3" >/dev/null 2>&1
    else
      "$STRATA" run --mpi "$FLAVOR" -np "$RANKS" --tools "$TOOLS" -- "${vg[@]}" "$prog" "$CELLS" \
        "$3" "$3" >/dev/null 2>&1
    fi
    cat "$tmp"/cg/out.* | awk '/^summary:/ {s += $2} END {printf "%.0f\n", s}'
  }
  : >"$tmp/ir"
  for ((i = 0; i < RUNS; ++i)); do
    for version in $VERSIONS; do
      for label in none tool; do
        for steps in "$STEPS" "$STEPS2"; do
          echo "$label $version $steps $(instructions "$label" "$version" "$steps")" >>"$tmp/ir"
        done
      done
    done
  done
  python3 - "$tmp/ir" "$TOOLS" "$FLAVOR" "$RANKS" "$CELLS" "$STEPS" "$STEPS2" "$RUNS" <<'PY'
import statistics, sys
path, tools, flavor, ranks, cells, s1, s2, runs = sys.argv[1:]
rows = [l.split() for l in open(path)]
ir = lambda label, version, steps: statistics.median(
    int(r[3]) for r in rows if r[:3] == [label, version, steps])
print(f"LJ example, instructions (callgrind, all ranks), {flavor}, {ranks} ranks, "
      f"{4 * int(cells) ** 3} atoms, median of {runs}\n")
print(f"| version | per step, no Strata | per step, --tools {tools} | overhead per step | "
      f"fixed cost of {tools} at {s1} steps |")
print("|---|---:|---:|---:|---:|")
n = int(s2) - int(s1)
for version in dict.fromkeys(r[1] for r in rows):
    base = (ir("none", version, s2) - ir("none", version, s1)) / n
    tool = (ir("tool", version, s2) - ir("tool", version, s1)) / n
    fixed = ir("tool", version, s1) - ir("none", version, s1)
    print(f"| {version} | {base / 1e6:.3f} M | {tool / 1e6:.3f} M | "
          f"{100 * (tool / base - 1):+.2f} % | {fixed / 1e6:.0f} M |")
PY
  exit 0
fi

one_run() { # label version -> appends "label version loop_s wall_s" to $tmp/times
  local label=$1 prog=$BUILD/examples/$FLAVOR/$2 out start end
  rm -rf "$tmp/spool" "$tmp/trace"
  start=$(date +%s.%N)
  case $label in
    none) out=$("${mpirun[@]}" "$prog" "$CELLS" "$STEPS" "$STEPS") ;;
    core) out=$("$STRATA" run -np "$RANKS" -- "$prog" "$CELLS" "$STEPS" "$STEPS") ;;
    tool) out=$("$STRATA" run -np "$RANKS" --tools "$TOOLS" -- "$prog" "$CELLS" "$STEPS" "$STEPS") ;;
  esac
  end=$(date +%s.%N)
  local loop
  loop=$(awk '$1 == "time" {print $2}' <<<"$out")
  echo "$label $2 $loop $(echo "$end - $start" | bc -l)" >>"$tmp/times"
}

for version in $VERSIONS; do
  one_run none "$version" # warm-up: page cache, first start of the MPI
done
: >"$tmp/times"
for ((i = 0; i < RUNS; ++i)); do
  for version in $VERSIONS; do
    for label in none core tool; do
      one_run "$label" "$version"
    done
  done
done

python3 - "$tmp/times" "$TOOLS" "$FLAVOR" "$RANKS" "$CELLS" "$STEPS" "$RUNS" <<'PY'
import statistics, sys
path, tools, flavor, ranks, cells, steps, runs = sys.argv[1:]
rows = [l.split() for l in open(path)]
atoms = 4 * int(cells) ** 3
print(f"LJ example, {flavor}, {ranks} ranks, {atoms} atoms, {steps} steps, {runs} interleaved runs; "
      f"medians (min-max)\n")
print(f"| version | figure | no Strata (s) | Strata core (s) | --tools {tools} (s) | overhead (medians) "
      "| overhead (minima) |")
print("|---|---|---:|---:|---:|---:|---:|")
for version in dict.fromkeys(r[1] for r in rows):
    for index, figure in ((2, "step loop"), (3, "wall")):
        cols = {}
        for label in ("none", "core", "tool"):
            xs = [float(r[index]) for r in rows if r[0] == label and r[1] == version]
            cols[label] = (statistics.median(xs), min(xs), max(xs))
        cell = lambda c: f"{c[0]:.3f} ({c[1]:.3f}-{c[2]:.3f})"
        overhead = [100 * (cols["tool"][k] / cols["none"][k] - 1) for k in (0, 1)]
        print(f"| {version} | {figure} | {cell(cols['none'])} | {cell(cols['core'])} | "
              f"{cell(cols['tool'])} | {overhead[0]:+.1f} % | {overhead[1]:+.1f} % |")
PY
