#!/usr/bin/env bash
# Strata `profile` module overhead: the matrix behind docs/PERFORMANCE.md ("Profiler").
#
#   bash bench/run_profile.sh [BUILD_DIR]      (default ./build; about 10 minutes, 19 with MPIP_LIB)
#
# Three parts (PARTS="calls apps finalize"):
#
# calls     Per-call cost on a cheap call. BUILD_DIR/bench/<flavor>/core_overhead (the program
#           behind bench/run_core.sh) on 2 ranks: native (no Strata), Strata with no module
#           (STRATA_TOOLS=""), `profile`, and `profile` with STRATA_PROFILE_CALLSITES=1 when the
#           module knows that variable. Prints ns per MPI_Comm_test_inter and per 0-byte
#           ping-pong half round trip (symbol - direct, in one process, best of ROUNDS), and the
#           instructions per MPI_Comm_test_inter under callgrind (singletons, two-run difference).
# apps      Wall time of programs nobody here wrote, 2 ranks: HPCC (Debian's hpcc, a small
#           hpccinf.txt) and LAMMPS (Debian's lmp, its examples/melt/in.melt scaled up), RUNS
#           runs of each configuration interleaved (native, profile, native, profile, ...);
#           medians and overhead, plus what the job record says (MPI %, calls, the profiler's
#           own overhead estimate). Native: mpirun.openmpi exactly as `strata run` calls it;
#           profile: `strata run -np 2 --tools profile -- PROG`.
# finalize  Time in MPI_Finalize, native and with `profile` (which reduces its counters over
#           the ranks and writes the job record there), for FIN_RANKS ranks (oversubscribed past
#           the cores, as `strata run` does), FIN_REPS runs each, with bench/finalize_time.c
#           (compiled here with mpicc.<flavor>): from the last rank entering MPI_Finalize to the
#           last rank leaving it, and to the last rank reaching exit(); the record's own figure
#           (job.profiler_finalize_s); and, in one more run per rank count, the collectives the
#           profile makes inside MPI_Finalize (bench/count_collectives.c, preloaded after
#           libstrata).
#
# Optional: MPIP_LIB=/path/to/libmpiP.so (mpiP built against Open MPI, outside this repository)
# adds mpiP with its default options (1-level call-site stack walk) and with MPIP="-k 0" to the
# calls part (Open MPI) and to the HPCC runs (MPIP_RUNS runs each).
#
# Environment knobs: FLAVORS="openmpi mpich" (calls part), FIN_FLAVORS=openmpi, ROUNDS=3,
# CALLGRIND=0 to skip valgrind, CG_ITERS=100000, CG_CALL=iprobe|test|testany (callgrind an
# MPI_Iprobe that finds nothing, or HPCC's polls, MPI_Test and MPI_Testany with a status on a
# receive never matched, instead of MPI_Comm_test_inter; STRATA_PROFILE_POLL_SAMPLE=1 times
# every poll), RUNS=5, APPS="hpcc lammps", HPCC_N=5000, HPCC_EXACT=0 (1: HPCC also with
# STRATA_PROFILE_POLLS=exact; every HPCC line also gives its MPIRandomAccess_time,
# MPIRandomAccess_LCG_time and HPL_time),
# LMP_BOX=20 (fcc cells per side; 4*LMP_BOX^3 atoms), LMP_STEPS=2000,
# FIN_RANKS="2 4 8 16 32 64", FIN_REPS=3, MPIP_LIB=, MPIP_RUNS=3, QUIET_WAIT=60 (s to wait
# for an idle machine before each run), QUIET_MAX_BUSY=10 (% of all CPUs counted as idle),
# QUIET_OTHERS=0.05 (CPU-s/s others may use for a run to count as quiet), PARTS, RAW=<file> to
# keep the raw "bench prof" lines, APPEND=1 to add to RAW instead of starting it afresh (the
# report covers all of it: run parts separately, or PARTS=none to only print the report).
set -euo pipefail
source "$(dirname "$0")/lock.sh"

BUILD=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
PARTS=${PARTS:-"calls apps finalize"}
FLAVORS=${FLAVORS:-"openmpi mpich"}
FIN_FLAVORS=${FIN_FLAVORS:-openmpi}
ROUNDS=${ROUNDS:-3}
CALLGRIND=${CALLGRIND:-1}
CG_ITERS=${CG_ITERS:-100000}
CG_CALL=${CG_CALL:-test_inter}
RUNS=${RUNS:-5}
APPS=${APPS:-"hpcc lammps"}
HPCC_N=${HPCC_N:-5000}
HPCC_EXACT=${HPCC_EXACT:-0}
LMP_BOX=${LMP_BOX:-20}
LMP_STEPS=${LMP_STEPS:-2000}
FIN_RANKS=${FIN_RANKS:-"2 4 8 16 32 64"}
FIN_REPS=${FIN_REPS:-3}
MPIP_LIB=${MPIP_LIB:-}
MPIP_RUNS=${MPIP_RUNS:-3}
QUIET_WAIT=${QUIET_WAIT:-60}
QUIET_MAX_BUSY=${QUIET_MAX_BUSY:-10}
QUIET_OTHERS=${QUIET_OTHERS:-0.05}
STRATA=$BUILD/bin/strata
CORES=$(nproc)

# Open MPI refuses root without these; vader's CMA single copy fails in containers.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
unset STRATA_PROFILE_OUT STRATA_PROFILE_JSON STRATA_COUNTERS STRATA_PROFILE_CALLSITES

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=${RAW:-$tmp/raw.txt}
[[ ${APPEND:-0} == 1 ]] || : >"$raw"
log() { echo "== [${SECONDS}s] $*" >&2; }
want() { [[ " $PARTS " == *" $1 "* ]]; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }

if [[ -n $MPIP_LIB && ! -f $MPIP_LIB ]]; then
  echo "MPIP_LIB=$MPIP_LIB: no such file" >&2
  exit 2
fi

# The module knows STRATA_PROFILE_CALLSITES (a call-site key per call) if the string is in it.
has_callsites() { # FLAVOR
  grep -aq STRATA_PROFILE_CALLSITES "$BUILD/lib/strata/$1/modules/profile.so" 2>/dev/null
}

# ---- calls: core_overhead under each configuration ------------------------------------------

configs_for() { # FLAVOR -> configuration names
  local c="native none profile"
  has_callsites "$1" && c+=" profile_cs"
  [[ $1 == openmpi && -n $MPIP_LIB ]] && c+=" mpip mpip_k0"
  printf '%s' "$c"
}

env_for() { # FLAVOR CONFIG -> NAME=VALUE lines for the ranks (none for native)
  local flavor=$1 config=$2 lib=$BUILD/lib/strata/$1/libstrata.so
  mkdir -p "$tmp/spool" "$tmp/mpip"
  case $config in
    native) ;;
    none) printf '%s\n' "LD_PRELOAD=$lib" "STRATA_TOOLS=" ;;
    profile) printf '%s\n' "LD_PRELOAD=$lib" "STRATA_TOOLS=profile" "STRATA_SPOOL=$tmp/spool" ;;
    profile_cs)
      printf '%s\n' "LD_PRELOAD=$lib" "STRATA_TOOLS=profile" "STRATA_SPOOL=$tmp/spool" \
        "STRATA_PROFILE_CALLSITES=1"
      ;;
    mpip) printf '%s\n' "LD_PRELOAD=$MPIP_LIB" "MPIP=-f $tmp/mpip" ;;
    mpip_k0) printf '%s\n' "LD_PRELOAD=$MPIP_LIB" "MPIP=-k 0 -f $tmp/mpip" ;;
  esac
}

calls_iters() { # CONFIG -> --iters (about a second of timed loop at most)
  case $1 in
    mpip) echo 100000 ;;
    mpip_k0) echo 1000000 ;;
    *) echo 3000000 ;;
  esac
}

pp_iters() { # CONFIG -> --pp-iters
  case $1 in
    mpip) echo 4000 ;;
    *) echo 40000 ;;
  esac
}

run_core() { # FLAVOR CONFIG : 2 ranks under that flavor's own launcher, bound to cores
  local flavor=$1 config=$2 prog=$BUILD/bench/$1/core_overhead
  local args=() kv
  while IFS= read -r kv; do
    [[ -z $kv ]] && continue
    if [[ $flavor == openmpi ]]; then
      args+=(-x "$kv")
    else
      args+=(-genv "${kv%%=*}" "${kv#*=}")
    fi
  done < <(env_for "$flavor" "$config")
  local common=(--label "$config" --iters "$(calls_iters "$config")" --reps 5
    --pp-iters "$(pp_iters "$config")")
  if [[ $flavor == openmpi ]]; then
    (cd "$tmp" && mpirun.openmpi --oversubscribe --bind-to core -np 2 "${args[@]}" "$prog" "${common[@]}")
  else
    (cd "$tmp" && mpirun.mpich -np 2 -bind-to core "${args[@]}" "$prog" "${common[@]}")
  fi
}

callgrind_ir() { # FLAVOR CONFIG ITERS -> total Ir of a singleton run
  local flavor=$1 config=$2 n=$3 prog=$BUILD/bench/$1/core_overhead
  local out=$tmp/cg.$flavor.$config.$n kv
  local envs=()
  while IFS= read -r kv; do
    [[ -n $kv ]] && envs+=("$kv")
  done < <(env_for "$flavor" "$config")
  # The calling thread's instructions only (thread 1's file): the profile's hang watch and the
  # MPI library's threads run as often as the wall time, which the load decides, allows.
  (cd "$tmp" && env "${envs[@]}" valgrind --tool=callgrind --trace-children=no --separate-threads=yes \
    --callgrind-out-file="$out" "$prog" --callgrind-iters "$n" --callgrind-call "$CG_CALL") \
    >"$out.log" 2>&1 || {
    echo "callgrind run failed ($flavor, $config, $n iters):" >&2
    tail -5 "$out.log" >&2
    return 1
  }
  awk '/^totals:/ {print $2}' "$out-01"
}

if want calls; then
  for flavor in $FLAVORS; do
    if [[ ! -x $BUILD/bench/$flavor/core_overhead ]] || ! command -v "mpirun.$flavor" >/dev/null; then
      echo "skipping $flavor (no $BUILD/bench/$flavor/core_overhead or mpirun.$flavor)" >&2
      continue
    fi
    has_callsites "$flavor" || echo "bench prof flavor=$flavor part=calls callsites=absent" >>"$raw"
    for ((round = 1; round <= ROUNDS; round++)); do
      log "$flavor: per-call timing, round $round/$ROUNDS"
      for c in $(configs_for "$flavor"); do
        run_core "$flavor" "$c" | grep '^bench core' | sed 's/^bench core/bench prof part=calls/' |
          tee -a "$raw" >&2
      done
    done
    if [[ $CALLGRIND == 1 ]] && command -v valgrind >/dev/null; then
      for c in $(configs_for "$flavor"); do
        n=$CG_ITERS
        [[ $c == mpip ]] && n=$((CG_ITERS / 10))
        log "$flavor: callgrind $c ($n calls vs 0, singleton)"
        # The two runs are independent: use both cores.
        callgrind_ir "$flavor" "$c" 0 >"$tmp/ir0" &
        p0=$!
        callgrind_ir "$flavor" "$c" "$n" >"$tmp/irn" &
        pn=$!
        wait "$p0"
        wait "$pn"
        echo "bench prof part=callgrind flavor=$flavor label=$c call=$CG_CALL ir0=$(cat "$tmp/ir0") irn=$(cat "$tmp/irn") n=$n" |
          tee -a "$raw" >&2
      done
    fi
  done
fi

# ---- noise: other users of the machine ---------------------------------------------------------
#
# The machine may be shared: each application run first waits (up to QUIET_WAIT s) until the
# CPUs are nearly idle, and records how much CPU time others used while it ran (all busy time
# from /proc/stat minus the job's own user+sys time): the report gives medians over all runs and
# over the quiet ones (others used less than QUIET_OTHERS of one CPU on average).
HZ=$(getconf CLK_TCK)
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
quiet_gate() { # -> busy % of all CPUs over the last 2 s when it stopped waiting
  local waited=0 a b pct
  while :; do
    a=$(busy_ticks)
    sleep 2
    b=$(busy_ticks)
    pct=$(awk -v a="$a" -v b="$b" -v hz="$HZ" -v n="$CORES" 'BEGIN { printf "%.0f", 100 * (b - a) / hz / 2 / n }')
    ((pct <= QUIET_MAX_BUSY || waited >= QUIET_WAIT)) && break
    waited=$((waited + 2))
  done
  echo "${pct}%"
}
timed() { # OUT CMD... : runs CMD, writes its user+sys CPU seconds (children included) to OUT
  local out=$1
  shift
  if [[ -x /usr/bin/time ]]; then
    /usr/bin/time -f '%U %S' -o "$out" "$@"
  else
    echo "0 0" >"$out"
    "$@"
  fi
}
contention() { # B0 B1 CPUFILE -> "cpu_s=.. others_s=.."
  awk -v a="$1" -v b="$2" -v hz="$HZ" '{ cpu = $1 + $2 } END {
    printf "cpu_s=%.2f others_s=%.2f", cpu, (b - a) / hz - cpu }' "$3"
}

# ---- apps: HPCC and LAMMPS, native against profile ------------------------------------------

source "$(dirname "$0")/apps.sh"

launcher() { # FLAVOR RANKS -> the launcher words `strata run` uses
  local words=("mpirun.$1")
  if [[ $1 == openmpi ]]; then
    [[ $(id -u) == 0 ]] && words+=(--allow-run-as-root)
    (($2 > CORES)) && words+=(--oversubscribe)
  fi
  words+=(-np "$2")
  printf '%s\n' "${words[@]}"
}

# summarize_record SPOOL -> "ok key=value ..." from the one job record in SPOOL, else "none(N)"
cat >"$tmp/record_summary.py" <<'EOF'
import glob, json, sys
recs = glob.glob(sys.argv[1] + "/*.json")
if len(recs) != 1:
    print(f"none({len(recs)})")
    sys.exit()
d = json.load(open(recs[0]))
j, r = d["job"], d["routines"]
calls = sum(v.get("calls", 0) for v in r.values())
top = sorted((kv for kv in r.items() if not kv[0].startswith("MPI_Init")),
             key=lambda kv: -kv[1].get("time_s", 0))
print(f"ok status={j['status']} ranks={j['ranks']} mpi_pct={j['mpi_percent']:.2f} "
      f"rec_wall_s={j['wall_time_s']:.3f} overhead_s={j['profiler_overhead_s']:.4f} calls={calls} "
      f"routines={len(r)} top={','.join(k for k, _ in top[:3])}")
EOF
summarize_record() { python3 "$tmp/record_summary.py" "$1"; }

# run_app NAME CONFIG DIR PROG ARGS... : one timed run in DIR; appends a "bench prof" line
run_app() {
  local name=$1 config=$2 dir=$3 prog=$4
  shift 4
  local flavor spool=$tmp/spool.$name.$config
  flavor=$(flavor_of "$prog")
  rm -rf "$spool" "$dir/mpip" && mkdir -p "$spool" "$dir/mpip"
  local -a cmd
  mapfile -t cmd < <(launcher "$flavor" 2)
  case $config in
    native) cmd+=("$prog" "$@") ;;
    profile) cmd=("$STRATA" run -np 2 --tools profile -- "$prog" "$@") ;;
    profile_exact) cmd=(env STRATA_PROFILE_POLLS=exact "$STRATA" run -np 2 --tools profile -- "$prog" "$@") ;;
    mpip) cmd+=(-x "LD_PRELOAD=$MPIP_LIB" -x "MPIP=-f $dir/mpip" "$prog" "$@") ;;
    mpip_k0) cmd+=(-x "LD_PRELOAD=$MPIP_LIB" -x "MPIP=-k 0 -f $dir/mpip" "$prog" "$@") ;;
  esac
  [[ $name == hpcc ]] && rm -f "$dir/hpccoutf.txt"
  local t0 t1 b0 b1 rc=0 gate
  gate=$(quiet_gate)
  b0=$(busy_ticks)
  t0=$(now)
  (cd "$dir" && STRATA_SPOOL=$spool timed "$tmp/cpu" "${cmd[@]}") >"$dir/out.$config" 2>&1 || rc=$?
  t1=$(now)
  b1=$(busy_ticks)
  local ok=1
  ((rc == 0)) || ok=0
  case $name in
    hpcc) grep -q 'End of HPC Challenge tests' "$dir/hpccoutf.txt" 2>/dev/null || ok=0 ;;
    lammps) grep -q 'Total wall time' "$dir/out.$config" || ok=0 ;;
  esac
  local extra=""
  # HPCC's own time for its RandomAccess test, where a poll's cost shows (docs/PERFORMANCE.md,
  # "Lean polls"); the whole run's time is mostly HPL, which swings by itself.
  # HPL's own time too: it is most of the run and jumps between two speeds by itself, so a
  # difference of whole runs can be told apart from one in the polls.
  # RandomAccess's second variant (LCG) polls as much as the first.
  [[ $name == hpcc ]] && extra=" ra_s=$(sed -n 's/^MPIRandomAccess_time=//p' "$dir/hpccoutf.txt" 2>/dev/null | head -1) ra_lcg_s=$(sed -n 's/^MPIRandomAccess_LCG_time=//p' "$dir/hpccoutf.txt" 2>/dev/null | head -1) hpl_s=$(sed -n 's/^HPL_time=//p' "$dir/hpccoutf.txt" 2>/dev/null | head -1)"
  if [[ $config == profile* ]]; then
    local record
    record=$(summarize_record "$spool")
    extra+=" record=$record"
    [[ $record == "ok "* ]] || ok=0
  elif [[ $config == mpip* ]]; then
    compgen -G "$dir/mpip/*.mpiP" >/dev/null || ok=0
  fi
  ((ok)) || {
    echo "run failed: $name $config (rc=$rc); last lines:" >&2
    tail -5 "$dir/out.$config" >&2
  }
  echo "bench prof part=app app=$name config=$config ok=$ok wall_s=$(elapsed "$t0" "$t1")" \
    "$(contention "$b0" "$b1" "$tmp/cpu") before=$gate$extra" | tee -a "$raw" >&2
}

if want apps; then
  for app in $APPS; do
    dir=$tmp/$app
    mkdir -p "$dir"
    case $app in
      hpcc)
        ensure_package hpcc hpcc && prog=$(command -v hpcc) && hpcc_input "$dir" ||
          { echo "skipping hpcc: could not install it" >&2; continue; }
        args=()
        ;;
      lammps)
        ensure_package lammps lmp && prog=$(command -v lmp) && lammps_input "$dir" ||
          { echo "skipping lammps: could not install it" >&2; continue; }
        args=(-in in.melt -log none)
        ;;
      *) echo "unknown app $app" >&2; continue ;;
    esac
    configs=(native profile)
    [[ $app == hpcc && $HPCC_EXACT == 1 ]] && configs+=(profile_exact)
    [[ $app == hpcc && -n $MPIP_LIB && $(flavor_of "$prog") == openmpi ]] && configs+=(mpip mpip_k0)
    echo "bench prof part=appinfo app=$app prog=$prog flavor=$(flavor_of "$prog") size=$([[ $app == hpcc ]] && echo "N=$HPCC_N" || echo "box=$LMP_BOX,steps=$LMP_STEPS")" >>"$raw"
    for ((i = 1; i <= RUNS; i++)); do
      for c in "${configs[@]}"; do
        [[ $c == mpip* ]] && ((i > MPIP_RUNS)) && continue
        log "$app: run $i/$RUNS, $c"
        run_app "$app" "$c" "$dir" "$prog" "${args[@]}"
      done
    done
  done
fi

# ---- finalize: time in MPI_Finalize against the number of ranks -----------------------------

if want finalize; then
  for flavor in $FIN_FLAVORS; do
    command -v "mpicc.$flavor" >/dev/null || { echo "skipping finalize for $flavor" >&2; continue; }
    prog=$tmp/finalize_time.$flavor
    "mpicc.$flavor" -O2 -o "$prog" "$HERE/finalize_time.c"
    counter=$tmp/count_collectives.$flavor.so
    "mpicc.$flavor" -O2 -shared -fPIC -o "$counter" "$HERE/count_collectives.c" -ldl
    for n in $FIN_RANKS; do
      # The profile's collectives inside MPI_Finalize, counted, and the modules' part of
      # MPI_Finalize timed inside the run (max over ranks), FIN_REPS runs.
      for ((i = 1; i <= FIN_REPS; i++)); do
        spool=$tmp/spool.count && rm -rf "$spool" && mkdir -p "$spool"
        (cd "$tmp" && LD_PRELOAD=$counter STRATA_SPOOL=$spool "$STRATA" run --mpi "$flavor" -np "$n" \
          --tools profile -- "$prog") >"$tmp/count.out" 2>&1 || echo "collective count failed ($n ranks)" >&2
        python3 - "$tmp/count.out" "$flavor" "$n" <<'EOF' | tee -a "$raw" >&2
import sys
path, flavor, n = sys.argv[1:]
rows = [dict(kv.split("=") for kv in l.split()[2:]) for l in open(path)
        if l.startswith("bench collectives ")]
totals = sorted({int(r["after_barrier"]) for r in rows})
rank0 = next((r for r in rows if r["rank"] == "0"), {})
detail = ",".join(f"{k}={v}" for k, v in rank0.items() if k not in ("rank", "after_barrier", "modules_ns"))
modules_ms = max((int(r["modules_ns"]) for r in rows), default=0) / 1e6
print(f"bench prof part=fincount flavor={flavor} ranks={n} ranks_seen={len(rows)} "
      f"collectives={'/'.join(map(str, totals)) or 'none'} detail={detail or 'none'} "
      f"modules_ms={modules_ms:.3f}")
EOF
      done
      for ((i = 1; i <= FIN_REPS; i++)); do
        gate=$(quiet_gate)
        for c in native profile; do
          spool=$tmp/spool.fin
          rm -rf "$spool" && mkdir -p "$spool"
          mapfile -t cmd < <(launcher "$flavor" "$n")
          if [[ $c == native ]]; then
            cmd+=("$prog")
          else
            cmd=("$STRATA" run --mpi "$flavor" -np "$n" --tools profile -- "$prog")
          fi
          t0=$(now)
          (cd "$tmp" && STRATA_SPOOL=$spool "${cmd[@]}") >"$tmp/fin.out" 2>&1 || {
            echo "finalize run failed ($flavor, $n ranks, $c):" >&2
            tail -5 "$tmp/fin.out" >&2
            continue
          }
          t1=$(now)
          rec=0
          [[ $c == profile ]] && rec=$(ls "$spool"/*.json 2>/dev/null | wc -l)
          python3 - "$tmp/fin.out" "$flavor" "$n" "$c" "$(elapsed "$t0" "$t1")" "$rec" "$gate" "$spool" <<'EOF' | tee -a "$raw" >&2
import glob, json, re, sys
path, flavor, n, config, job_s, rec, gate, spool = sys.argv[1:]
# The record's own figure (job.profiler_finalize_s, rank 0's time up to the totals), if any.
own = "none"
for record in glob.glob(spool + "/*.json") if config == "profile" else []:
    value = json.load(open(record))["job"].get("profiler_finalize_s")
    own = f"{value * 1e3:.3f}" if value is not None else "none"
rows = [dict(re.findall(r"(\w+)=(\d+)", l)) for l in open(path) if l.startswith("bench fin ")]
if len(rows) != int(n):
    sys.exit(f"finalize: {len(rows)} of {n} ranks reported")
enter = max(int(r["enter_ns"]) for r in rows)
ret = max(int(r["return_ns"]) for r in rows)
ex = max(int(r["exit_ns"]) for r in rows)
per_rank = max(int(r["return_ns"]) - int(r["enter_ns"]) for r in rows)
print(f"bench prof part=finalize flavor={flavor} ranks={n} config={config} "
      f"fin_ms={(ret - enter) / 1e6:.3f} exit_ms={(ex - enter) / 1e6:.3f} "
      f"rank_fin_ms={per_rank / 1e6:.3f} job_s={float(job_s):.3f} records={rec} "
      f"record_fin_ms={own} before={gate}")
EOF
        done
      done
    done
  done
fi

# ---- report -----------------------------------------------------------------------------------

QUIET_OTHERS=$QUIET_OTHERS python3 - "$raw" <<'EOF'
import os, re, statistics, sys
from collections import defaultdict

lines = [l for l in open(sys.argv[1]) if l.startswith("bench prof ")]
kvs = [dict(re.findall(r"(\w+)=(\S+)", l)) for l in lines]
name = {"native": "native (no Strata)", "none": "Strata, no module", "profile": "`profile`",
        "profile_cs": "`profile`, STRATA_PROFILE_CALLSITES=1",
        "profile_exact": "`profile`, STRATA_PROFILE_POLLS=exact",
        "mpip": "mpiP, default (`-k 1`: 1-level call-site stack walk)", "mpip_k0": "mpiP, `-k 0`"}
order = ["native", "none", "profile", "profile_exact", "profile_cs", "mpip", "mpip_k0"]

# calls
best = {}  # (flavor, label, call) -> (direct, symbol)
for kv in kvs:
    if kv.get("part") != "calls" or "native_ns" not in kv:
        continue
    key = (kv["flavor"], kv["label"], kv["call"])
    d, s = float(kv["native_ns"]), float(kv["strata_ns"])
    if key in best:
        d, s = min(d, best[key][0]), min(s, best[key][1])
    best[key] = (d, s)
cg = {(kv["flavor"], kv["label"], kv.get("call", "test_inter")): kv
      for kv in kvs if kv.get("part") == "callgrind"}
absent = {kv["flavor"] for kv in kvs if kv.get("callsites") == "absent"}
flavors = sorted({k[0] for k in best} | {k[0] for k in cg}, key=lambda f: f != "openmpi")
cg_calls = {"test_inter": "MPI_Comm_test_inter", "iprobe": "MPI_Iprobe that finds nothing",
            "test": "MPI_Test of a receive never matched",
            "testany": "MPI_Testany of one receive never matched"}
for f in flavors:
    print(f"\n### Per call, {f}\n")
    if f in absent:
        print("STRATA_PROFILE_CALLSITES: not implemented yet in this build's profile module "
              "(not measured).\n")
    for call, unit in (("Comm_test_inter", "MPI_Comm_test_inter"),
                       ("Iprobe_empty", "MPI_Iprobe that finds nothing"),
                       ("pingpong0", "0-byte ping-pong, half round trip")):
        have = [c for c in order if (f, c, call) in best]
        if not have:
            continue
        print(f"{unit}: ns per call, best over rounds of the best of 5 medians; direct = "
              "the MPI library's own PMPI_ through a pointer in the same process\n")
        print("| configuration | direct ns | via MPI_ symbol ns | symbol - direct | "
              "vs Strata, no module |")
        print("|---|---:|---:|---:|---:|")
        base = best.get((f, "none", call))
        for c in have:
            d, s = best[(f, c, call)]
            vs = (s - d) - (base[1] - base[0]) if base else float("nan")
            print(f"| {name[c]} | {d:.2f} | {s:.2f} | {s - d:+.2f} | {vs:+.2f} |")
        print()
    for cg_call, cg_unit in cg_calls.items():
        have = [c for c in order if (f, c, cg_call) in cg]
        if not have:
            continue
        print(f"callgrind: instructions per {cg_unit} = (Ir(N) - Ir(0)) / N, singleton\n")
        print("| configuration | instructions/call | vs native | vs Strata, no module |")
        print("|---|---:|---:|---:|")
        ipc = {c: (int(cg[(f, c, cg_call)]["irn"]) - int(cg[(f, c, cg_call)]["ir0"])) /
               int(cg[(f, c, cg_call)]["n"]) for c in have}
        for c in have:
            nat = ipc[c] - ipc["native"] if "native" in ipc else float("nan")
            non = ipc[c] - ipc["none"] if "none" in ipc else float("nan")
            print(f"| {name[c]} | {ipc[c]:.1f} | {nat:+.1f} | {non:+.1f} |")
        print()

# apps
quiet_limit = float(os.environ.get("QUIET_OTHERS", "0.05"))
runs = defaultdict(list)    # (app, config) -> [(wall, cpu, quiet)]
records = defaultdict(list)
random_access = defaultdict(list)  # (app, config) -> HPCC's MPIRandomAccess_time, s
hpl = defaultdict(list)  # (app, config) -> HPCC's HPL_time, s
random_access_lcg = defaultdict(list)  # (app, config) -> HPCC's MPIRandomAccess_LCG_time, s
info = {kv["app"]: kv for kv in kvs if kv.get("part") == "appinfo"}
failed = defaultdict(int)
for kv in kvs:
    if kv.get("part") != "app":
        continue
    if kv["ok"] != "1":
        failed[(kv["app"], kv["config"])] += 1
        continue
    wall = float(kv["wall_s"])
    quiet = float(kv.get("others_s", 0)) <= quiet_limit * wall
    runs[(kv["app"], kv["config"])].append((wall, float(kv.get("cpu_s", 0)), quiet))
    if kv["config"] == "profile":
        records[kv["app"]].append(kv)
    if kv.get("ra_s"):
        random_access[(kv["app"], kv["config"])].append(float(kv["ra_s"]))
    if kv.get("hpl_s"):
        hpl[(kv["app"], kv["config"])].append(float(kv["hpl_s"]))
    if kv.get("ra_lcg_s"):
        random_access_lcg[(kv["app"], kv["config"])].append(float(kv["ra_lcg_s"]))
apps = [a for a in ("hpcc", "lammps") if (a, "native") in runs]
med = statistics.median
if apps:
    print("\n### Real programs, 2 ranks, Open MPI\n")
    print("Wall time of the whole `mpirun` (s), runs interleaved. 'quiet' = runs during which other "
          f"processes used less than {quiet_limit:g} CPU-seconds per second; overhead = median / "
          "native median - 1 (all runs; quiet runs); CPU = user+sys of the job, median.\n")
    print("| program | configuration | runs (quiet) | median s | min s | max s | overhead | "
          "quiet median s | quiet overhead | CPU s | CPU overhead |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for a in apps:
        nat = runs[(a, "native")]
        nat_m = med(w for w, _, _ in nat)
        nat_q = [w for w, _, q in nat if q]
        nat_cpu = med(c for _, c, _ in nat)
        label = {"hpcc": "HPCC", "lammps": "LAMMPS"}[a]
        size = info.get(a, {}).get("size", "")
        for c in order:
            v = runs.get((a, c))
            if not v:
                continue
            walls = [w for w, _, _ in v]
            quiet = [w for w, _, q in v if q]
            m = med(walls)
            qm = f"{med(quiet):.2f}" if quiet else "-"
            qo = f"{(med(quiet) / med(nat_q) - 1) * 100:+.1f} %" if quiet and nat_q else "-"
            cpu = med(cc for _, cc, _ in v)
            co = f"{(cpu / nat_cpu - 1) * 100:+.1f} %" if nat_cpu > 0 else "-"
            fl = f" ({failed[(a, c)]} failed)" if failed[(a, c)] else ""
            print(f"| {label} ({size}) | {name[c]}{fl} | {len(v)} ({len(quiet)}) | {m:.2f} | "
                  f"{min(walls):.2f} | {max(walls):.2f} | {(m / nat_m - 1) * 100:+.1f} % | {qm} | "
                  f"{qo} | {cpu:.1f} | {co} |")
    print()
    for part, times in (("MPIRandomAccess_time", random_access),
                        ("MPIRandomAccess_LCG_time", random_access_lcg), ("HPL_time", hpl)):
        native_times = times.get(("hpcc", "native"))
        if not native_times:
            continue
        print(f"HPCC's {part} (s), runs in order, median against native's:  ")
        for c in order:
            v = times.get(("hpcc", c))
            if v:
                print(f"{name[c]}: " + ", ".join(f"{x:.2f}" for x in v) + f"; median {med(v):.2f}"
                      f" ({(med(v) / med(native_times) - 1) * 100:+.1f} %)  ")
        print()
    for a in apps:
        for c in ("profile", "profile_exact", "mpip", "mpip_k0"):
            n, p = runs.get((a, "native"), []), runs.get((a, c), [])
            k = min(len(n), len(p))
            if k >= 2:
                diffs = sorted((p[i][0] / n[i][0] - 1) * 100 for i in range(k))
                print(f"{a} {c}: each run against the native run before it: "
                      + ", ".join(f"{d:+.1f} %" for d in diffs) + "  ")
    print()
    for a in apps:
        for r in records[a]:
            calls = int(r.get("calls", 0))
            print(f"{a} job record: status {r.get('status')}, {r.get('ranks')} ranks, MPI "
                  f"{r.get('mpi_pct')} %, wall {r.get('rec_wall_s')} s, {calls} calls in "
                  f"{r.get('routines')} routines (top by time: {r.get('top')}), profiler overhead "
                  f"estimate {r.get('overhead_s')} s  ")
    print()

# finalize
fin = defaultdict(list)
for kv in kvs:
    if kv.get("part") == "finalize":
        fin[(kv["flavor"], int(kv["ranks"]), kv["config"])].append(kv)
for f in sorted({k[0] for k in fin}):
    print(f"\n### Finalize, {f}\n")
    print("ms, median over runs: last rank entering MPI_Finalize -> last rank leaving it "
          "(-> last rank at exit); job = the whole mpirun, s\n")
    print("| ranks | native finalize | profile finalize | difference | native to exit | "
          "profile to exit | difference | native job s | profile job s | records | "
          "record's own finalize ms | profile's part of MPI_Finalize, in-run ms | "
          "collectives in finalize |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for n in sorted({k[1] for k in fin if k[0] == f}):
        a, b = fin.get((f, n, "native"), []), fin.get((f, n, "profile"), [])
        if not a or not b:
            continue
        med = lambda rows, k: statistics.median(float(r[k]) for r in rows)
        rec = sum(int(r["records"]) for r in b)
        own = [float(r["record_fin_ms"]) for r in b if r.get("record_fin_ms", "none") != "none"]
        own_text = f"{statistics.median(own):.1f}" if own else "-"
        count = [kv for kv in kvs if kv.get("part") == "fincount" and kv["flavor"] == f
                 and int(kv["ranks"]) == n]
        count_text = f"{count[-1]['collectives']} ({count[-1]['detail']})" if count else "-"
        inrun = [float(kv["modules_ms"]) for kv in count if "modules_ms" in kv]
        inrun_text = f"{statistics.median(inrun):.1f}" if inrun else "-"
        print(f"| {n} | {med(a, 'fin_ms'):.1f} | {med(b, 'fin_ms'):.1f} | "
              f"{med(b, 'fin_ms') - med(a, 'fin_ms'):+.1f} | {med(a, 'exit_ms'):.1f} | "
              f"{med(b, 'exit_ms'):.1f} | {med(b, 'exit_ms') - med(a, 'exit_ms'):+.1f} | "
              f"{med(a, 'job_s'):.2f} | {med(b, 'job_s'):.2f} | {rec}/{len(b)} | "
              f"{own_text} | {inrun_text} | {count_text} |")
    print()
EOF
