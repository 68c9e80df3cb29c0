#!/usr/bin/env bash
# Trace module cost: the figures behind docs/PERFORMANCE.md ("Tracing").
#
#   bash bench/run_trace.sh [BUILD_DIR]      (default ./build; a few minutes)
#
# For each MPI flavor built it runs BUILD_DIR/bench/<flavor>/trace_cost on 2 ranks bound to cores:
#   native   no Strata (plain mpirun)
#   0        Strata preloaded, no module
#   profile  Strata with the profile module (for comparison: the same core path, counters only)
#   trace    Strata with the trace module (every call and region recorded, archive written;
#            cheap_calls=record, since MPI_Comm_test_inter is a call it would only count)
# and prints, per traced MPI_Comm_test_inter (one record, two OTF2 events: Enter with its call
# site, Leave) and per region begin or end (one record, one OTF2 event), the time over the MPI
# library's own entry in the same process; the instructions of the same loops under callgrind
# (--toggle-collect on the loop functions, singleton), and of a loop of wrapped completions
# (Irecv and Isend to self, Waitall, Wait on the null request); and the archive's bytes per
# event for the benchmark and for a program of collectives inside regions (tests' traced_c).
#
# Knobs (environment): FLAVORS="openmpi mpich", ROUNDS=3 (best round kept; 0: instructions and
# archive sizes only), BATCH=10000, CALLGRIND=0 to skip valgrind, CG_ITERS=100000, RAW=<file> to
# keep the raw lines.
set -euo pipefail
source "$(dirname "$0")/lock.sh"

BUILD=$(cd "${1:-build}" && pwd)
FLAVORS=${FLAVORS:-"openmpi mpich"}
ROUNDS=${ROUNDS:-3}
BATCH=${BATCH:-10000}
CALLGRIND=${CALLGRIND:-1}
CG_ITERS=${CG_ITERS:-100000}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=${RAW:-$tmp/raw.txt}
: >"$raw"

# launch FLAVOR TOOLS(native|""|trace) PROGRAM ARGS...
launch() {
  local flavor=$1 tools=$2
  shift 2
  local lib=$BUILD/lib/strata/$flavor/libstrata.so env=()
  if [[ $tools != native ]]; then
    if [[ $flavor == openmpi ]]; then
      env=(-x "LD_PRELOAD=$lib" -x "STRATA_TOOLS=$tools" -x "STRATA_TRACE_DIR=$tmp/trace"
        -x "STRATA_SPOOL=$tmp/spool" -x STRATA_TRACE_CHEAP_CALLS=record)
    else
      env=(-genv LD_PRELOAD "$lib" -genv STRATA_TOOLS "$tools" -genv STRATA_TRACE_DIR "$tmp/trace"
        -genv STRATA_SPOOL "$tmp/spool" -genv STRATA_TRACE_CHEAP_CALLS record)
    fi
  fi
  if [[ $flavor == openmpi ]]; then
    mpirun.openmpi --bind-to core -np 2 "${env[@]}" "$@"
  else
    mpirun.mpich -np 2 -bind-to core "${env[@]}" "$@"
  fi
}

# archive_bytes FLAVOR LABEL PROGRAM ARGS... : one traced run, its archive's size and events
archive_bytes() {
  local flavor=$1 label=$2
  shift 2
  rm -rf "$tmp/trace"
  local events
  events=$(launch "$flavor" trace "$@" 2>&1 >/dev/null | sed -n 's/.*trace: \([0-9]*\) events of.*/\1/p')
  local bytes
  bytes=$(du -sb "$tmp/trace" | cut -f1)
  echo "bench trace flavor=$flavor label=$label call=archive events=$events bytes=$bytes"
}

# callgrind_ir FLAVOR TOOLS FUNCTION -> Ir inside FUNCTION (CG_ITERS iterations)
callgrind_ir() {
  local flavor=$1 tools=$2 fn=$3 out=$tmp/cg.$1.$3.${2:-none}
  LD_PRELOAD=$BUILD/lib/strata/$flavor/libstrata.so STRATA_TOOLS=$tools \
    STRATA_TRACE_DIR=$tmp/cgtrace STRATA_TRACE_CHEAP_CALLS=record valgrind --tool=callgrind --collect-atstart=no \
    --toggle-collect="$fn" --callgrind-out-file="$out" \
    "$BUILD/bench/$flavor/trace_cost" --callgrind-iters "$CG_ITERS" >"$out.log" 2>&1 || {
    echo "callgrind run failed ($flavor, '$tools', $fn)" >&2
    tail -5 "$out.log" >&2
    return 1
  }
  awk '/^totals:/ {print $2}' "$out"
}

for flavor in $FLAVORS; do
  prog=$BUILD/bench/$flavor/trace_cost
  if [[ ! -x $prog ]] || ! command -v "mpirun.$flavor" >/dev/null; then
    echo "skipping $flavor (no $prog or mpirun.$flavor)" >&2
    continue
  fi
  for ((round = 1; round <= ROUNDS; round++)); do
    echo "== $flavor: timing, round $round/$ROUNDS" >&2
    for tools in native "" profile trace; do
      launch "$flavor" "$tools" "$prog" --batch "$BATCH" --label "${tools:-0}" 2>/dev/null |
        grep '^bench trace' | tee -a "$raw" >&2
    done
  done
  echo "== $flavor: archive size" >&2
  archive_bytes "$flavor" trace_cost "$prog" --batch "$BATCH" | tee -a "$raw" >&2
  if [[ -x $BUILD/tests/$flavor/traced_c ]]; then
    archive_bytes "$flavor" traced_c "$BUILD/tests/$flavor/traced_c" 20000 | tee -a "$raw" >&2
  fi
  if [[ $CALLGRIND == 1 ]] && command -v valgrind >/dev/null; then
    echo "== $flavor: callgrind ($CG_ITERS iterations per loop, singleton)" >&2
    for fn in loop_native loop_symbol loop_regions loop_completions; do
      for tools in "" trace; do
        echo "bench trace flavor=$flavor label=${tools:-0} call=callgrind fn=$fn ir=$(callgrind_ir "$flavor" "$tools" "$fn") n=$CG_ITERS" |
          tee -a "$raw" >&2
      done
    done
  fi
done

python3 - "$raw" <<'PY'
import re, sys
from collections import defaultdict

best = {}                # (flavor, label, call) -> dict
archive = {}             # (flavor, label) -> (events, bytes)
ir = defaultdict(dict)   # (flavor, label) -> fn -> ir per iteration
for line in open(sys.argv[1]):
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    if "flavor" not in kv:
        continue
    f, label, call = kv["flavor"], kv["label"], kv["call"]
    if call == "archive":
        archive[(f, label)] = (int(kv["events"]), int(kv["bytes"]))
    elif call == "callgrind":
        ir[(f, label)][kv["fn"]] = int(kv["ir"]) / int(kv["n"])
    elif call == "Comm_test_inter":
        key = (f, label, call)
        d = float(kv["delta_ns"])
        if key not in best or d < best[key]:
            best[key] = d
    elif call == "region_event":
        key = (f, label, call)
        v = float(kv["ns"])
        if key not in best or v < best[key]:
            best[key] = v

flavors = {k[0] for k in best} | {k[0] for k in ir} | {k[0] for k in archive}
for f in sorted(flavors, key=lambda x: x != "openmpi"):
    print(f"\n### {f}\n")
    if any(k[0] == f for k in best):
        print("| configuration | traced MPI call: symbol - direct, ns | per OTF2 event (/2), ns | region begin or end, ns |")
        print("|---|---:|---:|---:|")
    names = {"native": "native (no Strata)", "0": "Strata, no module", "profile": "`profile` (reference)",
             "trace": "`trace`"}
    for label in ("native", "0", "profile", "trace"):
        c = best.get((f, label, "Comm_test_inter"))
        r = best.get((f, label, "region_event"))
        if c is None:
            continue
        print(f"| {names[label]} | {c:+.2f} | {c / 2:.2f} | {r:.2f} |")
    cg0, cgt = ir.get((f, "0")), ir.get((f, "trace"))
    if cg0 and cgt:
        call = cgt["loop_symbol"] - cgt["loop_native"]
        call0 = cg0["loop_symbol"] - cg0["loop_native"]
        print(f"\ncallgrind, instructions per iteration: traced MPI_Comm_test_inter "
              f"{cgt['loop_symbol']:.1f} against {cgt['loop_native']:.1f} direct "
              f"(**+{call:.1f}**; no module: +{call0:.1f}); region begin+end pair "
              f"{cgt['loop_regions']:.1f} with `trace`, {cg0['loop_regions']:.1f} without "
              f"(**{(cgt['loop_regions']) / 2:.1f} per region event**); Irecv, Isend to self, "
              f"Waitall and Wait on the null request {cgt['loop_completions']:.1f} with `trace`, "
              f"{cg0['loop_completions']:.1f} without (**+{cgt['loop_completions'] - cg0['loop_completions']:.1f}**)\n")
    for label in ("trace_cost", "traced_c"):
        if (f, label) in archive:
            e, b = archive[(f, label)]
            print(f"archive of {label}: {e} events, {b} bytes: **{b / e:.1f} bytes per event**\n")
PY
