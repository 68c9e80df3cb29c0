#!/usr/bin/env bash
# Programs nobody here wrote under the trace module, against native: the figures behind
# docs/PERFORMANCE.md ("Tracing", applications).
#
#   bash bench/run_trace_apps.sh [BUILD_DIR]      (default ./build; about 2 minutes on an idle machine)
#
# HPCC (Debian's hpcc; the Debian example hpccinf.txt with N=HPCC_N on a 1 x 2 grid) and LAMMPS
# (Debian's lmp; a Lennard-Jones melt of 4 x LMP_BOX^3 atoms, LMP_STEPS steps), both on 2 ranks,
# run natively (plain mpirun), under `strata run --tools trace` and, with BEFORE=path/to/trace.so,
# under another build of the module, interleaved, RUNS times each. Neither package is in
# scripts/setup.sh (CI does not need them): the script installs them with apt-get when missing.
# Per run: the wall time, HPCC's own RandomAccess and HPL times, the trace's events and drops
# (rank 0's line), the archive's bytes, and whether `strata analyze` reads it (its time and
# warnings). The report gives medians and the ratio to native.
#
# CONFIGS="native monitor monitor-yielding" measures the monitor's tool rank on the full machine
# instead: `--tools monitor` as `strata run` sets it up, and with every rank yielding when idle
# (OMPI_MCA_mpi_yield_when_idle=1, what Open MPI does by itself once oversubscribed, and what
# `strata run` did before it kept the application's ranks polling).
#
# Knobs (environment): APPS="hpcc lammps", CONFIGS="native trace", RUNS=3, HPCC_N=5000,
# LMP_BOX=16, LMP_STEPS=1000, LIMIT= (trace:limit=, default the module's 256M), BEFORE=,
# RAW=<file> to keep the raw lines.
set -euo pipefail
source "$(dirname "$0")/lock.sh"

BUILD=$(cd "${1:-build}" && pwd)
APPS=${APPS:-"hpcc lammps"}
CONFIGS=${CONFIGS:-"native trace"}
RUNS=${RUNS:-3}
HPCC_N=${HPCC_N:-5000}
LMP_BOX=${LMP_BOX:-16}
LMP_STEPS=${LMP_STEPS:-1000}
LIMIT=${LIMIT:-}
BEFORE=${BEFORE:-}
STRATA=$BUILD/bin/strata

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=${RAW:-$tmp/raw.txt}
: >"$raw"

source "$(dirname "$0")/apps.sh"

now() { date +%s.%N; }


# run_app NAME CONFIG DIR PROG ARGS...
run_app() {
  local name=$1 config=$2 dir=$3 prog=$4
  shift 4
  local flavor tools="" trace=$dir/trace
  flavor=$(flavor_of "$prog")
  local -a cmd setting=()
  case $config in
    native) cmd=("mpirun.$flavor" -np 2) ;;
    trace) tools=trace ;;
    before) tools=$BEFORE ;;
    monitor) tools=monitor ;;
    monitor-yielding) tools=monitor setting=(OMPI_MCA_mpi_yield_when_idle=1) ;;
  esac
  [[ $tools == monitor ]] && setting+=("STRATA_MONITOR_OUT=$dir/rounds.jsonl")
  [[ -n ${tools:-} && -n $LIMIT ]] && tools+=":limit=$LIMIT"
  [[ -n ${tools:-} ]] && cmd=("$STRATA" run -np 2 --tools "$tools" --)
  rm -rf "$trace" "$dir/hpccoutf.txt"
  local t0 t1 rc=0
  t0=$(now)
  local TIMEFORMAT='user_s=%U sys_s=%S' # the job's processes, mpirun's and the ranks'
  { time { (cd "$dir" && env STRATA_TRACE_DIR="$trace" "${setting[@]}" "${cmd[@]}" "$prog" "$@") \
    >"$dir/out.$config" 2>&1; }; } 2>"$dir/time.$config" || rc=$?
  t1=$(now)
  local ok=1 extra=""
  ((rc == 0)) || ok=0
  case $name in
    hpcc)
      grep -q 'End of HPC Challenge tests' "$dir/hpccoutf.txt" 2>/dev/null || ok=0
      extra+=" ra_s=$(sed -n 's/^MPIRandomAccess_time=//p' "$dir/hpccoutf.txt" | head -1)"
      extra+=" hpl_s=$(sed -n 's/^HPL_time=//p' "$dir/hpccoutf.txt" | head -1)"
      ;;
    lammps) grep -q 'Total wall time' "$dir/out.$config" || ok=0 ;;
  esac
  extra+=" $(tail -1 "$dir/time.$config")"
  if [[ $config != native && $config != monitor* ]]; then
    local line events dropped bytes a0 a1 arc=0
    line=$(grep 'strata: trace: .* events of' "$dir/out.$config" | tail -1)
    events=$(sed -n 's/.*trace: \([0-9]*\) events of.*/\1/p' <<<"$line")
    dropped=$(sed -n 's/.*(\([0-9]*\) dropped at the size limit).*/\1/p' <<<"$line")
    bytes=$(du -sb "$trace" 2>/dev/null | cut -f1)
    a0=$(now)
    "$STRATA" analyze --json "$trace" >"$dir/analysis.json" 2>"$dir/analysis.err" || arc=$?
    a1=$(now)
    local warnings
    warnings=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["warnings"]))' \
      "$dir/analysis.json" 2>/dev/null || echo "-")
    extra+=" events=${events:-0} dropped=${dropped:-0} bytes=${bytes:-0} analyze_rc=$arc"
    extra+=" analyze_s=$(echo "$a1 - $a0" | bc) warnings=$warnings"
    ((arc == 0)) || { echo "strata analyze failed on $name $config:" >&2; head -3 "$dir/analysis.err" >&2; }
  fi
  ((ok)) || { echo "run failed: $name $config (rc=$rc)" >&2; tail -5 "$dir/out.$config" >&2; }
  echo "bench tapp app=$name config=$config ok=$ok wall_s=$(echo "$t1 - $t0" | bc)$extra" |
    tee -a "$raw" >&2
}

for app in $APPS; do
  dir=$tmp/$app
  mkdir -p "$dir"
  case $app in
    hpcc)
      ensure_package hpcc hpcc || { echo "skipping hpcc: could not install it" >&2; continue; }
      prog=$(command -v hpcc)
      hpcc_input "$dir"
      args=()
      ;;
    lammps)
      ensure_package lammps lmp || { echo "skipping lammps: could not install it" >&2; continue; }
      prog=$(command -v lmp)
      lammps_input "$dir"
      args=(-in in.melt -log none)
      ;;
    *) echo "unknown app $app" >&2; continue ;;
  esac
  read -r -a configs <<<"$CONFIGS"
  [[ -n $BEFORE ]] && configs+=(before)
  for ((i = 1; i <= RUNS; i++)); do
    for c in "${configs[@]}"; do
      echo "== $app: run $i/$RUNS, $c" >&2
      run_app "$app" "$c" "$dir" "$prog" "${args[@]}"
    done
  done
done

python3 - "$raw" <<'PY'
import re, statistics, sys
from collections import defaultdict
runs = defaultdict(list)
for line in open(sys.argv[1]):
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    if kv.get("ok") == "1":
        runs[(kv["app"], kv["config"])].append(kv)
def med(rows, key):
    vals = [float(r[key]) for r in rows if r.get(key) not in (None, "", "-")]
    return statistics.median(vals) if vals else float("nan")
print("| program | configuration | wall, s | / native | user / system CPU, s | HPCC RandomAccess / HPL, s | events | dropped | archive, MB | strata analyze |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
for app in ("hpcc", "lammps"):
    native = med(runs[(app, "native")], "wall_s")
    for config in ("native", "trace", "before", "monitor", "monitor-yielding"):
        rows = runs[(app, config)]
        if not rows:
            continue
        wall = med(rows, "wall_s")
        inner = f"{med(rows, 'ra_s'):.2f} / {med(rows, 'hpl_s'):.2f}" if app == "hpcc" else ""
        cpu = f"{med(rows, 'user_s'):.1f} / {med(rows, 'sys_s'):.1f}"
        if config == "native" or config.startswith("monitor"):
            ratio = f"{wall / native:.2f}" if config != "native" else "1"
            print(f"| {app} | {config} | {wall:.1f} | {ratio} | {cpu} | {inner} | | | | |")
            continue
        ok = all(r.get("analyze_rc") == "0" for r in rows)
        analysis = (f"reads it in {med(rows, 'analyze_s'):.1f} s, {rows[-1].get('warnings')} warnings"
                    if ok else "refuses it")
        print(f"| {app} | {config} | {wall:.1f} | {wall / native:.2f} | {cpu} | {inner} | "
              f"{int(med(rows, 'events')):,} | {int(med(rows, 'dropped')):,} | "
              f"{med(rows, 'bytes') / 1e6:.1f} | {analysis} |")
PY
