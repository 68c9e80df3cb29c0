#!/usr/bin/env bash
# Strata core overhead: the matrix behind docs/PERFORMANCE.md ("Core").
#
#   bash bench/run_core.sh [BUILD_DIR]      (default ./build; takes a few minutes)
#
# For each MPI flavor built (openmpi, mpich) it runs BUILD_DIR/bench/<flavor>/core_overhead, a
# plain MPI program, on 2 ranks:
#   native   no Strata at all (plain mpirun)
#   0        Strata preloaded, STRATA_TOOLS="" (nothing wraps: the unwrapped path)
#   1..100   Strata with 1, 2, 8, 32, 100 `empty` layers
# and prints ns per MPI_Comm_test_inter and per 0-byte ping-pong half round trip, the per-layer
# slope (least squares over 1..100 layers), MPI_Init time against the number of modules, and the
# instructions per call under callgrind (singleton runs, two-run difference).
#
# Environment knobs: FLAVORS="openmpi mpich", ROUNDS=3 (whole timing matrix repeated, best round
# kept per figure), CALLGRIND=0 to skip valgrind, CG_ITERS=100000, RAW=<file> to keep the raw
# "bench core" lines.
set -euo pipefail
source "$(dirname "$0")/lock.sh"

BUILD=$(cd "${1:-build}" && pwd)
FLAVORS=${FLAVORS:-"openmpi mpich"}
CALLGRIND=${CALLGRIND:-1}
CG_ITERS=${CG_ITERS:-100000}
ROUNDS=${ROUNDS:-3}
LAYERS=(0 1 2 8 32 100)
INIT_LAYERS=(0 1 10 100)

# Open MPI refuses root without these; vader's CMA single copy fails in containers.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=${RAW:-$tmp/raw.txt}
: >"$raw"

tools_for() { # N -> "empty,empty,..." (N times; "" for 0)
  local n=$1 s=""
  for ((i = 0; i < n; i++)); do s+="${s:+,}empty"; done
  printf '%s' "$s"
}

iters_for() { # keep every configuration to about a second of timed loop
  case $1 in
    native | 0 | 1 | 2) echo 3000000 ;;
    8) echo 1000000 ;;
    32) echo 400000 ;;
    *) echo 150000 ;;
  esac
}

# run FLAVOR LABEL LAYERS(native|N) ARGS... : 2 ranks under that flavor's own launcher
run() {
  local flavor=$1 label=$2 layers=$3
  shift 3
  local prog=$BUILD/bench/$flavor/core_overhead lib=$BUILD/lib/strata/$flavor/libstrata.so
  local env=()
  if [[ $layers != native ]]; then
    local tools
    tools=$(tools_for "$layers")
    if [[ $flavor == openmpi ]]; then
      env=(-x "LD_PRELOAD=$lib" -x "STRATA_TOOLS=$tools")
    else
      env=(-genv LD_PRELOAD "$lib" -genv STRATA_TOOLS "$tools")
    fi
  fi
  if [[ $flavor == openmpi ]]; then
    mpirun.openmpi --oversubscribe --bind-to core -np 2 "${env[@]}" "$prog" --label "$label" "$@"
  else
    mpirun.mpich -np 2 -bind-to core "${env[@]}" "$prog" --label "$label" "$@"
  fi
}

# callgrind FLAVOR LAYERS ITERS -> total Ir of a singleton run
callgrind_ir() {
  local flavor=$1 layers=$2 n=$3
  local prog=$BUILD/bench/$flavor/core_overhead lib=$BUILD/lib/strata/$flavor/libstrata.so
  local out=$tmp/cg.$flavor.$layers.$n
  local env=()
  [[ $layers != native ]] && env=(LD_PRELOAD="$lib" STRATA_TOOLS="$(tools_for "$layers")")
  env "${env[@]}" valgrind --tool=callgrind --trace-children=no --callgrind-out-file="$out" \
    "$prog" --callgrind-iters "$n" >"$out.log" 2>&1 || {
    echo "callgrind run failed ($flavor, $layers layers, $n iters):" >&2
    tail -5 "$out.log" >&2
    return 1
  }
  awk '/^totals:/ {print $2}' "$out"
}

for flavor in $FLAVORS; do
  if [[ ! -x $BUILD/bench/$flavor/core_overhead ]] || ! command -v "mpirun.$flavor" >/dev/null; then
    echo "skipping $flavor (no $BUILD/bench/$flavor/core_overhead or mpirun.$flavor)" >&2
    continue
  fi
  # Rounds outermost, so that a burst of noise from the VM's neighbours hits one round of every
  # configuration rather than every round of one; the report keeps each figure's best round.
  for ((round = 1; round <= ROUNDS; round++)); do
    echo "== $flavor: timing, round $round/$ROUNDS" >&2
    for l in native "${LAYERS[@]}"; do
      run "$flavor" "$l" "$l" --iters "$(iters_for "$l")" --reps 5 --pp-iters 40000 | tee -a "$raw" >&2
    done
  done
  echo "== $flavor: MPI_Init vs modules" >&2
  for l in native "${INIT_LAYERS[@]}"; do
    for _ in 1 2 3; do
      run "$flavor" "init$l" "$l" --iters 1000 --reps 1 --pp-iters 0 | grep 'call=MPI_Init' >>"$raw"
    done
  done
  if [[ $CALLGRIND == 1 ]] && command -v valgrind >/dev/null; then
    echo "== $flavor: callgrind (${CG_ITERS} calls vs 0, singleton)" >&2
    for l in native 0 1 2 8; do
      # The two runs are independent: use both cores.
      callgrind_ir "$flavor" "$l" 0 >"$tmp/ir0" &
      p0=$!
      callgrind_ir "$flavor" "$l" "$CG_ITERS" >"$tmp/irn" &
      pn=$!
      wait "$p0"
      wait "$pn"
      echo "bench core flavor=$flavor label=$l call=callgrind ir0=$(cat "$tmp/ir0") irn=$(cat "$tmp/irn") n=$CG_ITERS" |
        tee -a "$raw" >&2
    done
  fi
done

python3 - "$raw" <<'EOF'
import re, sys
from collections import defaultdict

rows = defaultdict(dict)   # (flavor, label, call) -> fields
inits = defaultdict(list)  # (flavor, layers) -> [ms]
for line in open(sys.argv[1]):
    if not line.startswith("bench core "):
        continue
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    f, label, call = kv["flavor"], kv["label"], kv["call"]
    if call == "MPI_Init":
        if label.startswith("init"):
            inits[(f, label[4:])].append(float(kv["init_ms"]))
        continue
    prev = rows.get((f, label, call))
    if prev is not None and "native_ns" in kv:
        # several rounds: keep the best of each path separately
        nat = min(float(prev["native_ns"]), float(kv["native_ns"]))
        sym = min(float(prev["strata_ns"]), float(kv["strata_ns"]))
        kv = dict(kv, native_ns=str(nat), strata_ns=str(sym), delta_ns=str(sym - nat))
    rows[(f, label, call)] = kv

def slope(points):
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx
    return b, my - b * mx

flavors = sorted({k[0] for k in rows}, key=lambda f: f != "openmpi")
labels = ["native", "0", "1", "2", "8", "32", "100"]
name = {"native": "native (no Strata)", "0": "Strata, no module"}
for f in flavors:
    print(f"\n### {f}\n")
    for call, unit in (("Comm_test_inter", "MPI_Comm_test_inter"), ("pingpong0", "0-byte ping-pong, half round trip")):
        have = [l for l in labels if (f, l, call) in rows]
        if not have:
            continue
        base = rows.get((f, "native", call))
        print(f"{unit} (ns per call; best over rounds of the best of 5 medians; 'direct' = the MPI "
              f"library's own PMPI_ through a pointer, same process)\n")
        print("| configuration | direct ns | via MPI_ symbol ns | symbol - direct | vs native run |")
        print("|---|---:|---:|---:|---:|")
        pts = []
        for l in have:
            r = rows[(f, l, call)]
            nat, sym, d = float(r["native_ns"]), float(r["strata_ns"]), float(r["delta_ns"])
            vs = sym - float(base["strata_ns"]) if base else float("nan")
            lab = name.get(l, f"{l} empty layer" + ("s" if l != "1" else ""))
            print(f"| {lab} | {nat:.2f} | {sym:.2f} | {d:+.2f} | {vs:+.2f} |")
            if l not in ("native", "0"):
                pts.append((int(l), d))
        if len(pts) >= 2:
            b, a = slope(pts)
            print(f"\nper-layer slope (least squares of symbol - direct over {pts[0][0]}..{pts[-1][0]} "
                  f"layers): **{b:.2f} ns/layer** (intercept {a:.2f} ns)\n")
    if any(k[0] == f for k in inits):
        print("MPI_Init (ms, slowest of 2 ranks, min of 3 runs)\n")
        print("| modules | MPI_Init ms |")
        print("|---|---:|")
        for l in ["native", "0", "1", "10", "100"]:
            v = inits.get((f, l))
            if v:
                print(f"| {name.get(l, l + ' x empty')} | {min(v):.1f} |")
        print()
    cg = [(l, rows[(f, l, "callgrind")]) for l in labels if (f, l, "callgrind") in rows]
    if cg:
        print("callgrind (instructions per MPI_Comm_test_inter call = (Ir(N calls) - Ir(0)) / N, "
              "singleton)\n")
        print("| configuration | instructions/call | vs native |")
        print("|---|---:|---:|")
        base = None
        pts = []
        for l, r in cg:
            ipc = (int(r["irn"]) - int(r["ir0"])) / int(r["n"])
            if l == "native":
                base = ipc
            rel = ipc - base if base is not None else float("nan")
            print(f"| {name.get(l, l + ' empty layer' + ('s' if l != '1' else ''))} | {ipc:.1f} | {rel:+.1f} |")
            if l not in ("native", "0"):
                pts.append((int(l), ipc))
        if len(pts) >= 2:
            b, _ = slope(pts)
            print(f"\nper-layer slope: **{b:.1f} instructions/layer**\n")
EOF
