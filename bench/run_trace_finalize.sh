#!/usr/bin/env bash
# The trace module's finalize against the number of ranks: the figures behind docs/PERFORMANCE.md
# ("Tracing", finalize).
#
#   bash bench/run_trace_finalize.sh [BUILD_DIR]      (default ./build; a few minutes)
#
# For P = 2, 4, ..., 64 ranks (oversubscribed beyond 2: these are the growth of the work, not
# what an idle machine of P cores would take) it runs bench/finalize_time.c natively and under
# `--tools trace` (and, with BEFORE=path/to/trace.so, under another build of the module, e.g.
# the one before the tree), REPS times each, interleaved, and prints the median time from the
# last rank entering MPI_Finalize to the last rank leaving it, the traced minus native, and the
# parts of rank 0's finalize the module reports (clock offsets and definitions: the tree's
# rounds, which must grow as log P; call sites and writing: local work and OTF2's files).
# Then build/bench/trace_finalize_sim projects the tree and the flat scheme to 100,000 ranks.
#
# Knobs (environment): FLAVOR=openmpi, RANKS="2 4 8 16 32 64", REPS=5, ROUNDS=20 (rounds of the
# program's call mix), BEFORE= (a trace module .so to compare), SIM_RANKS=2,...,100000.
set -euo pipefail
source "$(dirname "$0")/lock.sh"

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-build}" && pwd)
FLAVOR=${FLAVOR:-openmpi}
RANKS=${RANKS:-"2 4 8 16 32 64"}
REPS=${REPS:-5}
ROUNDS=${ROUNDS:-20}
BEFORE=${BEFORE:-}
SIM_RANKS=${SIM_RANKS:-2,4,8,16,32,64,256,1024,4096,16384,100000}
STRATA=$BUILD/bin/strata

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prog=$tmp/finalize_time
"mpicc.$FLAVOR" -O2 -o "$prog" "$HERE/finalize_time.c"
raw=$tmp/raw.txt
: >"$raw"

# one CONFIG P : the finalize time in ns (max return - max enter over the ranks)
one() {
  local config=$1 p=$2 out=$tmp/out
  local -a cmd
  case $config in
    native) cmd=("mpirun.$FLAVOR" -np "$p") ;;
    trace) cmd=("$STRATA" run -np "$p" --tools trace --) ;;
    before) cmd=("$STRATA" run -np "$p" --tools "$BEFORE" --) ;;
  esac
  [[ $FLAVOR == openmpi && $config == native ]] && cmd+=(--oversubscribe)
  rm -rf "$tmp/trace"
  STRATA_TRACE_DIR=$tmp/trace "${cmd[@]}" "$prog" --rounds "$ROUNDS" >"$out" 2>"$out.err" || {
    echo "run failed: $config P=$p" >&2
    tail -3 "$out.err" >&2
    return 1
  }
  local parts
  parts=$(sed -n 's/.*finalize [0-9.]* ms (clock offsets \([0-9.]*\), call sites \([0-9.]*\), definitions \([0-9.]*\), writing \([0-9.]*\)).*/clock_ms=\1 sites_ms=\2 defs_ms=\3 write_ms=\4/p' "$out.err")
  awk -v parts="$parts" '/^bench fin/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
         if (v["enter_ns"] > e) e = v["enter_ns"]; if (v["return_ns"] > r) r = v["return_ns"] }
       END { printf "%.0f %s\n", r - e, parts }' "$out"
}

configs=(native trace)
[[ -n $BEFORE ]] && configs+=(before)
for p in $RANKS; do
  for ((i = 1; i <= REPS; i++)); do
    for c in "${configs[@]}"; do
      read -r ns parts < <(one "$c" "$p") || continue
      echo "bench tfin flavor=$FLAVOR config=$c ranks=$p ns=$ns $parts" | tee -a "$raw" >&2
    done
  done
done

python3 - "$raw" <<'PY'
import re, statistics, sys
from collections import defaultdict
t = defaultdict(list)
parts = defaultdict(lambda: defaultdict(list))
for line in open(sys.argv[1]):
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    t[(kv["config"], int(kv["ranks"]))].append(int(kv["ns"]))
    for k in ("clock_ms", "sites_ms", "defs_ms", "write_ms"):
        if k in kv:
            parts[int(kv["ranks"])][k].append(float(kv[k]))
ranks = sorted({p for _, p in t})
configs = [c for c in ("native", "trace", "before") if any(k[0] == c for k in t)]
print("| ranks | " + " | ".join(f"{c}, ms" for c in configs) +
      (" | trace - native, ms" if "trace" in configs else "") +
      (" | before - native, ms" if "before" in configs else "") +
      " | trace's rank 0: clock offsets / definitions / call sites / writing, ms |")
print("|---:|" + "---:|" * (len(configs) + ("trace" in configs) + ("before" in configs) + 1))
for p in ranks:
    med = {c: statistics.median(t[(c, p)]) / 1e6 for c in configs if t[(c, p)]}
    row = [f"{med.get(c, float('nan')):.1f}" for c in configs]
    for c in ("trace", "before"):
        if c in med and "native" in med:
            row.append(f"{med[c] - med['native']:+.1f}")
    pm = {k: statistics.median(v) for k, v in parts[p].items()}
    row.append(" / ".join(f"{pm.get(k, float('nan')):.1f}"
                          for k in ("clock_ms", "defs_ms", "sites_ms", "write_ms")))
    print(f"| {p} | " + " | ".join(row) + " |")
PY

if [[ -x $BUILD/bench/trace_finalize_sim ]]; then
  echo
  "$BUILD/bench/trace_finalize_sim" --ranks "$SIM_RANKS" >"$tmp/sim.txt"
  python3 - "$tmp/sim.txt" <<'PY'
import re, sys
print("| ranks | rounds | tree: definitions, s | bytes at rank 0 | flat (before): definitions, s | bytes at rank 0 | clock offsets, tree / flat, s |")
print("|---:|---:|---:|---:|---:|---:|---:|")
for line in open(sys.argv[1]):
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    print(f"| {kv['ranks']} | {kv['rounds']} | {float(kv['tree_s']):.4f} | {int(kv['tree_root_bytes']):,} | "
          f"{float(kv['flat_s']):.4f} | {float(kv['flat_root_bytes']):,.0f} | "
          f"{float(kv['clock_tree_s']):.6f} / {float(kv['clock_flat_s']):.4f} |")
PY
fi
