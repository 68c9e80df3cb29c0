#!/usr/bin/env bash
# Case study for binary PMPI tools (docs/pmpi-tools.md): mpiP, a third-party PMPI tool built
# outside this repository, patched with `strata patch` and chained with Strata's own `profile`
# and `trace` modules in one run of LAMMPS (Debian's lmp, a program nobody here wrote).
#
#   MPIP_LIB=/path/to/libmpiP.so bash bench/run_pmpi_case.sh [BUILD_DIR]
#
# 1. Counts: LAMMPS's Lennard-Jones melt (bench/apps.sh) on 2 ranks (Open MPI) under "profile,mpiP,trace" and under
#    "trace,mpiP,profile"; per MPI routine, mpiP's count (its report, callsite statistics summed
#    over sites and ranks), the profile's (the job record) and the trace's (`strata analyze`).
# 2. Cost of each layer: LAMMPS's own "Loop time", RUNS interleaved runs of each stack (no
#    Strata, Strata without modules, each layer alone, all three), median; and instructions per
#    MPI_Comm_test_inter under callgrind for each layer (bench/<flavor>/core_overhead, singleton).
#
# Knobs: PARTS="counts cost callgrind", RUNS=3, LMP_STEPS=1000, LMP_BOX=10, CG_ITERS=20000. Needs lmp, valgrind, and mpiP built against
# Open MPI (see docs/PERFORMANCE.md, "How to read the figures", peers).
set -euo pipefail
source "$(dirname "$0")/lock.sh"

BUILD=$(cd "${1:-build}" && pwd)
STRATA=$BUILD/bin/strata
RUNS=${RUNS:-3}
LMP_STEPS=${LMP_STEPS:-1000}
LMP_BOX=${LMP_BOX:-10}
CG_ITERS=${CG_ITERS:-20000}
: "${MPIP_LIB:?set MPIP_LIB to the path of libmpiP.so, built against Open MPI}"
source "$(dirname "$0")/../scripts/mpi-env.sh"
source "$(dirname "$0")/apps.sh"
ensure_package lammps lmp || { echo "needs Debian's lammps (lmp)" >&2; exit 2; }

tmp=$(mktemp -d /tmp/strata-pmpi-case.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/modules"
"$STRATA" patch "$MPIP_LIB" "$tmp/modules/mpiP.so" | tail -1
lammps_input "$tmp"

run_stack() { # TOOLS DIR -> runs LAMMPS under the stack ("native" = no Strata), prints Loop time
  local tools=$1 dir=$2
  rm -rf "$dir" && mkdir -p "$dir/spool" "$dir/mpip"
  local cmd
  if [[ $tools == native ]]; then
    cmd=(mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 lmp -in "$tmp/in.melt" -log none)
  else
    cmd=("$STRATA" run -np 2 --tools "$tools" -- lmp -in "$tmp/in.melt" -log none)
  fi
  (cd "$dir" && STRATA_MODULE_PATH=$tmp/modules STRATA_SPOOL=$dir/spool MPIP="-f $dir/mpip" \
    STRATA_TRACE_DIR=$dir/trace "${cmd[@]}" >"$dir/out" 2>"$dir/err") ||
    { echo "run failed: $tools" >&2; tail -5 "$dir/err" >&2; return 1; }
  awk '/^Loop time of/ {print $4}' "$dir/out"
}

PARTS=${PARTS:-"counts cost callgrind"}
want() { [[ " $PARTS " == *" $1 "* ]]; }

want counts && echo "== counts"
want counts && for order in "profile,mpiP,trace" "trace,mpiP,profile"; do
  dir=$tmp/counts.${order//,/_}
  run_stack "$order" "$dir" >/dev/null
  "$STRATA" analyze --json "$dir/trace" >"$dir/analyze.json"
  python3 - "$order" "$dir" <<'EOF'
import glob, json, sys
order, d = sys.argv[1], sys.argv[2]
mpip = {}
report = open(glob.glob(d + "/mpip/*.mpiP")[0]).read().split("@--- Callsite Time statistics")[1]
for line in report.split("@---")[0].splitlines():
    f = line.split()
    if len(f) >= 4 and f[2] == "*":
        mpip["MPI_" + f[0]] = mpip.get("MPI_" + f[0], 0) + int(f[3])
record = json.load(open(glob.glob(d + "/spool/*.json")[0]))["routines"]
trace = {t["operation"]: t["count"] for t in json.load(open(d + "/analyze.json"))["totals"]}
# Each layer sees the application's calls and the MPI calls that the layers above it make
# themselves (at finalize: the profile's reductions, the trace's clock and definition exchange,
# mpiP's report collection). So mpiP must agree exactly with the Strata module below it, which
# sees the same stream; the top layer sees the application's calls alone.
top, _, bottom = order.split(",")
counts = {"profile": lambda n: record.get(n, {}).get("calls", 0), "trace": lambda n: trace.get(n, 0)}
print(f"\nstack {order} (top first): mpiP against {bottom} (the same stream); {top}: the application's calls\n")
print(f"| routine | mpiP | {bottom} | agree | {top} (application) | calls of layers above mpiP |")
print("|---|---:|---:|---|---:|---:|")
for name in sorted(mpip):
    b, t = counts[bottom](name), counts[top](name)
    print(f"| {name} | {mpip[name]} | {b} | {'yes' if mpip[name] == b else 'NO'} | {t} | {mpip[name] - t} |")
EOF
done

if want cost; then
echo "== cost of each layer (LAMMPS loop time, s, median of $RUNS interleaved runs)"
stacks=(native "" profile mpiP trace "profile,mpiP,trace")
declare -A times
for ((r = 1; r <= RUNS; r++)); do
  for s in "${stacks[@]}"; do
    t=$(run_stack "$s" "$tmp/cost")
    times[${s:-none}]+="$t "
  done
done
for s in "${stacks[@]}"; do
  echo "bench pmpi stack=${s:-none} loop_s=\"${times[${s:-none}]}\""
done >"$tmp/cost.txt"
python3 - "$tmp/cost.txt" <<'EOF'
import re, statistics, sys
rows = []
for line in open(sys.argv[1]):
    m = re.match(r'bench pmpi stack=(\S+) loop_s="(.*)"', line)
    rows.append((m.group(1), [float(x) for x in m.group(2).split()]))
base = statistics.median(rows[0][1])
print("\n| stack | loop s (runs) | median | vs native |\n|---|---|---:|---:|")
for name, v in rows:
    med = statistics.median(v)
    runs = ", ".join(f"{x:.3f}" for x in v)
    print(f"| {name} | {runs} | {med:.3f} | {100 * (med / base - 1):+.1f} % |")
EOF

fi

want callgrind || exit 0
echo "== instructions per MPI_Comm_test_inter (callgrind, singleton, (Ir(N) - Ir(0)) / N)"
prog=$BUILD/bench/openmpi/core_overhead
core=$BUILD/lib/strata/openmpi/libstrata.so
ir() { # TOOLS N
  local out=$tmp/cg.$RANDOM
  (cd "$tmp" && LD_PRELOAD=$core STRATA_TOOLS=$1 STRATA_MODULE_PATH=$tmp/modules \
    STRATA_SPOOL=$tmp/cg-spool MPIP="-f $tmp" STRATA_TRACE_DIR=$tmp/cg-trace \
    valgrind --tool=callgrind --callgrind-out-file="$out" "$prog" --callgrind-iters "$2" \
    >/dev/null 2>&1)
  awk '/^totals:/ {print $2}' "$out"
}
echo
echo "| stack | instructions per call | over Strata without modules |"
echo "|---|---:|---:|"
none=""
for s in "" profile mpiP trace "profile,mpiP,trace"; do
  per=$(python3 -c "print(($(ir "$s" "$CG_ITERS") - $(ir "$s" 0)) / $CG_ITERS)")
  [[ -z $s ]] && none=$per
  python3 -c "print(f'| ${s:-none} | {$per:.1f} | {$per - $none:+.1f} |')"
done
