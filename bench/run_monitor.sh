#!/usr/bin/env bash
# Monitoring (the TAU over MRNet paper, Nataraj et al.): the figures behind docs/PERFORMANCE.md ("Monitoring").
#
#   bash bench/run_monitor.sh [BUILD_DIR]          (default ./build; about 5 minutes)
#
# Parts (PARTS="sim offload perturb reduction"):
#
# sim        BUILD_DIR/bench/monitor_sim: one round of synthetic 20-event profiles through the
#            overlay in one process (the tool ranks' filter and node code), N = 64 ... 100,000
#            ranks, fanouts SIM_FANOUTS; root bytes per round, reduction factor against raw,
#            all nodes' work and the critical path (slowest node per level, summed).
# offload    The paper's Fig. 8 benchmark (bench/monitor_offload.c): work PERIOD us, offload,
#            barrier; mean worst time per round beyond the work, minus the same loop without
#            offloads. OFFLOAD_CASES="P:fanout ..." (default 4:2 4:4 16:8 32:16: fanouts 2 to 16,
#            oversubscribed past 2 processes), filters raw (no reduction) and histogram.
# perturb    The paper's Table 1: examples/sweep on PERTURB_NP ranks (default 4; 2 leaves a core
#            per application rank, the tool ranks idle in back-off), RUNS runs each interleaved: native,
#            monitor tree (histogram, fanout 2), monitor tree (raw), monitor file transport; a
#            round every 10 ms on every rank.
# reduction  Bytes at the front end per round, raw against histogram, from real jobs (P=2..4).
# callgrind  Instructions per cheap MPI call (MPI_Comm_test_inter) the monitor adds, in a
#            singleton under callgrind (stable on a busy machine, unlike wall time): no Strata
#            module, `profile`, `monitor` (file transport: the call path is the same for every
#            transport) without and with a period; two runs (0 and N calls) differenced.
#
# Knobs: FLAVOR=openmpi, RUNS=5, PERTURB_NP=4, SWEEP_ARGS="40 16 200" (iterations blocks work), SIM_FANOUTS=2,8,16, PERIODS="0 100 1000 10000".
set -euo pipefail
source "$(dirname "$0")/lock.sh"
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
flavor=${FLAVOR:-openmpi}
parts=${PARTS:-sim offload perturb reduction callgrind}
runs=${RUNS:-5}
strata=$build/bin/strata
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"

if [[ $parts == *sim* ]]; then
  echo "## sim"
  "$build/bench/monitor_sim" --ranks 64,256,1024,4096,16384,65536,100000 \
    --fanout "${SIM_FANOUTS:-2,8,16}"
fi

if [[ $parts == *offload* ]]; then
  echo "## offload ($flavor; cases application ranks:fanout = ${OFFLOAD_CASES:-4:2 4:4 16:8 32:16})"
  echo "| P | fanout | tool ranks | filter | period us | iterations | worst time beyond work us/round | same, no offload | in dump us (mean rank) | in dump us (worst rank) |"
  echo "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"
  for case in ${OFFLOAD_CASES:-4:2 4:4 16:8 32:16}; do
    np=${case%%:*}
    fanout=${case##*:}
    for filter in raw histogram; do
      for period in ${PERIODS:-0 100 1000 10000}; do
        iterations=$(( period >= 10000 ? 100 : 400 ))
        line=$(STRATA_MONITOR_OUT=$tmp/offload.jsonl "$strata" run -np "$np" \
          --tools "monitor:filter=$filter:policy=block:fanout=$fanout" \
          -- "$build/bench/$flavor/monitor_offload" "$period" "$iterations" | grep '^offload:')
        worst=$(sed -E 's/.*worst_us_per_round=([0-9.]+).*/\1/' <<<"$line")
        barrier=$(sed -E 's/.*barrier_us=([0-9.]+).*/\1/' <<<"$line")
        dmean=$(sed -E 's/.*dump_us_mean=([0-9.]+).*/\1/' <<<"$line")
        dworst=$(sed -E 's/.*dump_us_worst_rank=([0-9.]+).*/\1/' <<<"$line")
        tools=$("$strata" monitor plan -np "$np" --fanout "$fanout" | sed -E 's/.*: ([0-9]+) tool.*/\1/')
        echo "| $np | $fanout | $tools | $filter | $period | $iterations | $worst | $barrier | $dmean | $dworst |"
      done
    done
  done
fi

if [[ $parts == *perturb* ]]; then
  np=${PERTURB_NP:-4}
  echo "## perturbation (examples/sweep, $np ranks, $flavor, $runs runs each, interleaved)"
  sweep=("$build/examples/$flavor/sweep" ${SWEEP_ARGS:-40 16 200})
  declare -A times
  configs=(native tree_histogram tree_raw file)
  for ((r = 0; r < runs; ++r)); do
    for c in "${configs[@]}"; do
      case $c in
      native) cmd=("$strata" run -np "$np" --tools "" -- "${sweep[@]}") ;;
      tree_histogram) cmd=("$strata" run -np "$np" \
        --tools "monitor:filter=histogram:period=0.01:fanout=2" -- "${sweep[@]}") ;;
      tree_raw) cmd=("$strata" run -np "$np" --tools "monitor:filter=raw:period=0.01:fanout=2" \
        -- "${sweep[@]}") ;;
      file) cmd=("$strata" run -np "$np" --tools "monitor:transport=file:dir=$tmp/files:period=0.01" \
        -- "${sweep[@]}") ;;
      esac
      t=$(STRATA_MONITOR_OUT=$tmp/perturb.jsonl "${cmd[@]}" | sed -nE 's/.*, ([0-9.]+) s$/\1/p')
      times[$c]+="$t "
      if [[ $c != native ]]; then
        rounds=$(wc -l <"$tmp/perturb.jsonl")
        times[${c}_rounds]+="$rounds "
      fi
    done
  done
  echo "| configuration | sweep's own time s (runs) | median s | overhead vs native (medians) | rounds at the front end |"
  echo "|---|---|---:|---:|---|"
  median() { tr ' ' '\n' | grep -v '^$' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  base=$(median <<<"${times[native]}")
  for c in "${configs[@]}"; do
    m=$(median <<<"${times[$c]}")
    over=$(awk -v m="$m" -v b="$base" 'BEGIN {printf "%+.1f %%", 100 * (m - b) / b}')
    echo "| $c | ${times[$c]} | $m | $over | ${times[${c}_rounds]:-} |"
  done
fi

if [[ $parts == *reduction* ]]; then
  echo "## reduction factor from real jobs ($flavor, monitor_app 20 iterations, final round)"
  echo "| P | fanout | raw root bytes | histogram root bytes | factor |"
  echo "|---:|---:|---:|---:|---:|"
  for p in 2 4; do
    for f in raw histogram; do
      STRATA_MONITOR_OUT=$tmp/red_$f.jsonl "$strata" run -np "$p" \
        --tools "monitor:filter=$f:fanout=2" -- "$build/tests/$flavor/monitor_app" 20 >/dev/null
    done
    raw=$(python3 -c "import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-1]['root_bytes'])" "$tmp/red_raw.jsonl")
    hist=$(python3 -c "import json,sys; print([json.loads(l) for l in open(sys.argv[1])][-1]['root_bytes'])" "$tmp/red_histogram.jsonl")
    echo "| $p | 2 | $raw | $hist | $(awk -v a="$raw" -v b="$hist" 'BEGIN {printf "%.2f", a / b}') |"
  done
fi

if [[ $parts == *callgrind* ]]; then
  echo "## instructions per MPI call ($flavor, singleton, callgrind)"
  echo "| stack | instructions per MPI_Comm_test_inter | added to Strata with no module |"
  echo "|---|---:|---:|"
  n=100000
  core=$build/lib/strata/$flavor/libstrata.so
  ir() { # TOOLS CALLS
    (cd "$tmp" && env LD_PRELOAD="$core" STRATA_TOOLS="$1" STRATA_MONITOR_DIR="$tmp/cg-rounds" \
      STRATA_MONITOR_OUT="$tmp/cg.jsonl" STRATA_SPOOL="$tmp/spool" valgrind --tool=callgrind \
      --callgrind-out-file="$tmp/cg.out" "$build/bench/$flavor/core_overhead" --callgrind-iters "$2" \
      >"$tmp/cg.log" 2>&1)
    awk '/^totals:/ {print $2}' "$tmp/cg.out"
  }
  base=""
  for tools in "" "profile" "monitor:transport=file" "monitor:transport=file:period=1"; do
    a=$(ir "$tools" 0)
    b=$(ir "$tools" "$n")
    per=$(awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN {printf "%.1f", (b - a) / n}')
    [[ -z $base ]] && base=$per
    echo "| ${tools:-(no module)} | $per | $(awk -v p="$per" -v b="$base" 'BEGIN {printf "%+.1f", p - b}') |"
  done
fi
