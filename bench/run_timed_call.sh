#!/usr/bin/env bash
# The profile's cost per call it times, side by side with mpiP: the figures behind
# docs/PERFORMANCE.md ("Profiler", "The timed call").
#
#   bash bench/run_timed_call.sh [BUILD_DIR]      (default ./build; a few minutes)
#
# BUILD_DIR/bench/<flavor>/timed_call (bench/timed_call.c) on one rank, for each MPI flavor:
# ns per MPI_Barrier(MPI_COMM_SELF), per 0-byte MPI_Sendrecv to self, per MPI_Iprobe that finds
# nothing (every one timed: STRATA_PROFILE_POLL_SAMPLE=1), per MPI_Comm_test_inter (counted,
# not timed) and per loop of two MPI_Start (a persistent 0-byte send to self and its receive)
# and an MPI_Waitall, through the symbol minus straight into MPI, in one process, best of ROUNDS, for:
#   native     no tool
#   profile    Strata's profile module (LD_PRELOAD=libstrata.so STRATA_TOOLS=profile)
#   events     the profile with every timed call an event to its callback (core_sums=0), where
#              by default the core sums it into the profile's slot
#   nocomm     the profile without its communication section (communication=0): no sums per
#              pair of ranks nor per communicator, what the matrix costs a call
#   callsites  the same with STRATA_PROFILE_CALLSITES=1
#   trace      Strata's trace module, every call recorded (cheap_calls=record)
#   overhead   Strata's overhead module, with a machine model written by `strata bench`
#              (OVERHEAD=0 skips it: the model takes a minute or two to build)
#   floor      the least a timing profiler does (bench/timed_floor.c: two TSC reads around the
#              call and four adds, nothing else): what the CPU charges any tool for the clock
#   omit-M     the profile of a libstrata built with parts of its summed call left out
#              (PARTS="M ...", below): what each part costs a call, against "profile"
#   mpiP-k0    mpiP with MPIP="-k 0" (no call sites), when mpiP is given for the flavor
#              (MPIP_LIB: built against Open MPI; MPIP_LIB_MPICH: built against MPICH)
#   mpiP       mpiP with its defaults (call sites one level up)
# and the instructions per call under callgrind (CALLGRIND=1): two singleton runs of N and 2N
# calls, the difference over N; "native" loops call MPI straight through the pointer.
# CG_CALLS picks callgrind's calls (default "barrier sendrecv iprobe test_inter start"); five
# more, which CALLS (the calls timed, default the same five) may name too: irecv_isend (an
# MPI_Irecv and an MPI_Isend to self, their MPI_Waitall: one "call" is the three) and ibarrier
# (an MPI_Ibarrier on MPI_COMM_SELF and its MPI_Wait), which make requests, irecv_send (an
# MPI_Irecv, a 0-byte MPI_Send to self, its MPI_Wait), put (an 8-byte MPI_Put to self on a window of
# MPI_COMM_SELF, in one passive-target epoch) and neighbor (an MPI_Neighbor_allgather of one
# double on a periodic 1-D Cartesian communicator of MPI_COMM_SELF).
#
# Knobs: FLAVORS="openmpi mpich", ROUNDS=3, ITERS=2000000, CG_ITERS=20000, CALLGRIND=1,
# MPIP_LIB=/path/to/libmpiP.so (built against Open MPI, outside this repository),
# MPIP_LIB_MPICH=/path/to/libmpiP.so (the same against MPICH), OVERHEAD=1,
# CONFIGS="profile trace" to run only those (and native, and before with BASE),
# THREADS="2" to time MPI_Barrier(MPI_COMM_SELF) also from that many threads at once under
# MPI_THREAD_MULTIPLE (one rank, not bound; column barrier_Nthreads: the mean of the threads),
# BASE=<other build dir> adds "before": the profile of that build's libstrata.so, interleaved
# with the others (a change's before and after in the same run),
# MODEL_DIR=<dir> with model.<flavor>.json (from `strata bench`) to reuse instead of building one,
# PARTS="1 2 4 8 15" builds (in PARTS_DIR, default BUILD_DIR/timed-call-parts; a few minutes each)
# a libstrata per mask with -DSTRATA_TIMED_CALL_OMIT=M, which leaves out of the summed call
# (src/core/summed_call.hpp, summed_part) 1 the hang diagnosis's note, 2 the arguments' figures
# (bytes, communicator, status), 4 the communication matrix, 8 the slot's sums (15: all four, the
# bare timed call), and times each as omit-M beside the others,
# RAW=<file> to keep the raw lines, STAT=median for the median of the rounds instead of the best
# (ROUNDS of 5 or more: a change's few ns stand out of the load's noise only so). On a shared machine the ns move with the load: compare
# configurations within one run (ROUNDS of them, best of each) and take callgrind's counts.
set -euo pipefail
source "$(dirname "$0")/lock.sh"

BUILD=$(cd "${1:-build}" && pwd)
FLAVORS=${FLAVORS:-"openmpi mpich"}
ROUNDS=${ROUNDS:-3}
ITERS=${ITERS:-2000000}
CG_ITERS=${CG_ITERS:-20000}
CALLGRIND=${CALLGRIND:-1}
MPIP_LIB=${MPIP_LIB:-}
MPIP_LIB_MPICH=${MPIP_LIB_MPICH:-}
OVERHEAD=${OVERHEAD:-1}
BASE=${BASE:+$(cd "$BASE" && pwd)}
PARTS=${PARTS:-}
PARTS_DIR=${PARTS_DIR:-$BUILD/timed-call-parts}
STRATA=$BUILD/bin/strata

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
unset STRATA_PROFILE_OUT STRATA_PROFILE_JSON STRATA_COUNTERS STRATA_PROFILE_CALLSITES STRATA_TOOLS

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=${RAW:-$tmp/raw.txt}
: >"$raw"
export STRATA_SPOOL=$tmp/spool STRATA_TRACE_DIR=$tmp/trace

configs() { # FLAVOR -> the configurations that apply
  local c="native profile events nocomm callsites trace"
  [[ -n $BASE ]] && c+=" before"
  local m
  for m in $PARTS; do c+=" omit-$m"; done
  [[ -f $BUILD/bench/$1/timed_floor.so ]] && c+=" floor"
  [[ $OVERHEAD == 1 && -f $tmp/model.$1.json ]] && c+=" overhead"
  [[ -n $(mpip_for "$1") ]] && c+=" mpiP-k0 mpiP"
  if [[ -n ${CONFIGS:-} ]]; then # only these (and native, which the others are read against)
    local kept="" x
    for x in $c; do [[ $x == native || $x == before || $x == omit-* || " $CONFIGS " == *" $x "* ]] && kept+=" $x"; done
    c=$kept
  fi
  echo "$c"
}

mpip_for() { # FLAVOR -> the mpiP library built against it, or nothing
  if [[ $1 == openmpi ]]; then echo "$MPIP_LIB"; else echo "$MPIP_LIB_MPICH"; fi
}

env_for() { # FLAVOR CONFIG -> VAR=VALUE words
  local lib=$BUILD/lib/strata/$1/libstrata.so
  case $2 in
    native) ;;
    profile) echo "LD_PRELOAD=$lib STRATA_TOOLS=profile STRATA_PROFILE_POLL_SAMPLE=1" ;;
    events) echo "LD_PRELOAD=$lib STRATA_TOOLS=profile STRATA_PROFILE_POLL_SAMPLE=1 STRATA_PROFILE_CORE_SUMS=0" ;;
    nocomm) echo "LD_PRELOAD=$lib STRATA_TOOLS=profile STRATA_PROFILE_POLL_SAMPLE=1 STRATA_PROFILE_COMMUNICATION=0" ;;
    before) echo "LD_PRELOAD=$BASE/lib/strata/$1/libstrata.so STRATA_TOOLS=profile STRATA_PROFILE_POLL_SAMPLE=1" ;;
    callsites) echo "LD_PRELOAD=$lib STRATA_TOOLS=profile STRATA_PROFILE_POLL_SAMPLE=1 STRATA_PROFILE_CALLSITES=1" ;;
    trace) echo "LD_PRELOAD=$lib STRATA_TOOLS=trace STRATA_TRACE_LIMIT=4G STRATA_TRACE_CHEAP_CALLS=record" ;;
    overhead) echo "LD_PRELOAD=$lib STRATA_TOOLS=overhead STRATA_PROFILE_POLL_SAMPLE=1 STRATA_MODEL=$tmp/model.$1.json" ;;
    floor) echo "LD_PRELOAD=$BUILD/bench/$1/timed_floor.so" ;;
    omit-*) echo "LD_PRELOAD=$PARTS_DIR/$2/lib/strata/$1/libstrata.so STRATA_TOOLS=profile STRATA_PROFILE_POLL_SAMPLE=1" ;;
    mpiP-k0) echo "LD_PRELOAD=$(mpip_for "$1") MPIP=-k~0~-f~$tmp" ;;
    mpiP) echo "LD_PRELOAD=$(mpip_for "$1") MPIP=-f~$tmp" ;;
  esac
}

# The words of env_for as an array, "~" standing for a space inside a value (MPIP="-k 0").
env_words() { # FLAVOR CONFIG -> vars[]
  vars=()
  local w
  for w in $(env_for "$1" "$2"); do vars+=("${w//\~/ }"); done
}

run_one() { # FLAVOR CONFIG ARGS...
  local flavor=$1 config=$2 bind=core
  shift 2
  [[ " $* " == *" --threads "* ]] && bind=none
  local -a vars launcher=()
  env_words "$flavor" "$config"
  local v
  for v in "${vars[@]}"; do # to the rank only, never to the launcher itself
    if [[ $flavor == openmpi ]]; then launcher+=(-x "$v"); else launcher+=(-genv "${v%%=*}" "${v#*=}"); fi
  done
  if [[ $flavor == openmpi ]]; then
    mpirun.openmpi --bind-to "$bind" -np 1 "${launcher[@]}" "$BUILD/bench/$flavor/timed_call" "$@"
  else
    mpirun.mpich -np 1 -bind-to "$bind" "${launcher[@]}" "$BUILD/bench/$flavor/timed_call" "$@"
  fi
}

callgrind_ir() { # FLAVOR CONFIG CALL N [--native] -> total Ir
  local flavor=$1 config=$2 call=$3 n=$4
  shift 4
  local out=$tmp/cg.$flavor.$config.$call.$n${1:-}
  local -a vars
  env_words "$flavor" "$config"
  # The calling thread's instructions only (the file of thread 1): the profile's hang watch and
  # the MPI library's own threads run as often as the wall time allows, which the load decides.
  env "${vars[@]}" valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out" \
    "$BUILD/bench/$flavor/timed_call" --callgrind-iters "$n" --callgrind-call "$call" "$@" \
    >"$out.log" 2>&1 || { echo "callgrind failed: $flavor $config $call" >&2; tail -5 "$out.log" >&2; return 1; }
  awk '/^totals:/ {print $2}' "$out-01"
}

# The libraries with parts left out: from the checkout BUILD_DIR was configured from, each mask's
# core in a build tree of its own, which loads BUILD_DIR's modules (the parts are the core's).
source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$BUILD/CMakeCache.txt")
for m in $PARTS; do
  [[ $m =~ ^[0-9]+$ && $m -ge 1 && $m -le 15 ]] || { echo "PARTS: $m is not a mask from 1 to 15" >&2; exit 2; }
done
for m in $PARTS; do
  tree=$PARTS_DIR/omit-$m
  echo "== building omit-$m in $tree" >&2
  cmake -S "$source_dir" -B "$tree" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS="-DSTRATA_TIMED_CALL_OMIT=$m" >"$tmp/cmake-$m.log" 2>&1 ||
    { tail -20 "$tmp/cmake-$m.log" >&2; exit 1; }
  for flavor in $FLAVORS; do
    cmake --build "$tree" -j"$(nproc)" --target "strata_core_$flavor" >"$tmp/build-$m.log" 2>&1 ||
      { tail -20 "$tmp/build-$m.log" >&2; exit 1; }
    modules=$tree/lib/strata/$flavor/modules
    [[ -L $modules || ! -d $modules ]] || rmdir "$modules"
    ln -sfn "$BUILD/lib/strata/$flavor/modules" "$modules"
  done
done

calls=${CALLS:-barrier sendrecv iprobe test_inter start}
calls=${calls// /,}
for flavor in $FLAVORS; do
  [[ -x $BUILD/bench/$flavor/timed_call ]] || { echo "skipping $flavor: no timed_call" >&2; continue; }
  if [[ $OVERHEAD == 1 && -f ${MODEL_DIR:-/nonexistent}/model.$flavor.json ]]; then
    cp "$MODEL_DIR/model.$flavor.json" "$tmp/model.$flavor.json"
  elif [[ $OVERHEAD == 1 ]]; then
    echo "== $flavor: a machine model for the overhead module (strata bench -np 2)" >&2
    "$STRATA" bench -np 2 --mpi "$flavor" -o "$tmp/model.$flavor.json" >/dev/null 2>&1 ||
      echo "strata bench failed: no overhead figures for $flavor" >&2
  fi
  for ((round = 1; round <= ROUNDS; round++)); do
    for config in $(configs "$flavor"); do
      run_one "$flavor" "$config" --iters "$ITERS" --reps 3 --label "$config" --calls "$calls" |
        tee -a "$raw" >&2
      for threads in ${THREADS:-}; do
        run_one "$flavor" "$config" --iters "$((ITERS / 2))" --reps 3 --label "$config" \
          --threads "$threads" | tee -a "$raw" >&2
      done
    done
  done
  if [[ $CALLGRIND == 1 ]] && command -v valgrind >/dev/null; then
    for call in ${CG_CALLS:-barrier sendrecv iprobe test_inter start}; do
      for config in $(configs "$flavor"); do
        a=$(callgrind_ir "$flavor" "$config" "$call" "$CG_ITERS")
        b=$(callgrind_ir "$flavor" "$config" "$call" $((2 * CG_ITERS)))
        echo "bench timed flavor=$flavor label=$config call=$call ir_per_call=$(((b - a) / CG_ITERS))" | tee -a "$raw" >&2
      done
      a=$(callgrind_ir "$flavor" native "$call" "$CG_ITERS" --native)
      b=$(callgrind_ir "$flavor" native "$call" $((2 * CG_ITERS)) --native)
      echo "bench timed flavor=$flavor label=direct call=$call ir_per_call=$(((b - a) / CG_ITERS))" | tee -a "$raw" >&2
    done
  fi
done

STAT=${STAT:-best} python3 - "$raw" <<'PY'
import os, re, statistics, sys
from collections import defaultdict
rounds = defaultdict(list)
best = {}
ir = {}
for line in open(sys.argv[1]):
    if not line.startswith("bench timed "):
        continue
    kv = dict(re.findall(r"(\w+)=(\S+)", line))
    call = f"barrier_{kv['threads']}threads" if "threads" in kv else kv["call"]
    key = (kv["flavor"], kv["label"], call)
    if "ir_per_call" in kv:
        ir[key] = int(kv["ir_per_call"])
    else:
        rounds[key].append((float(kv["native_ns"]), float(kv["delta_ns"])))
for key, values in rounds.items():
    if os.environ["STAT"] == "median":
        best[key] = (statistics.median(v[0] for v in values),
                     statistics.median(v[1] for v in values))
    else:
        best[key] = min(values, key=lambda v: v[1])
calls = ["barrier", "sendrecv", "iprobe", "test_inter", "start"]
calls += sorted({k[2] for k in list(best) + list(ir) if k[2] not in calls})
flavors = sorted({k[0] for k in list(best) + list(ir)})
for f in flavors:
    labels = []
    for k in list(best) + list(ir):
        if k[0] == f and k[1] not in labels:
            labels.append(k[1])
    print(f"\n### {f}: ns over native per call ({os.environ['STAT']} of the rounds), callgrind "
          "instructions per call")
    print("| tool | " + " | ".join(calls) + " |")
    print("|---|" + "---|" * len(calls))
    for label in labels:
        cells = []
        for c in calls:
            b = best.get((f, label, c))
            i = ir.get((f, label, c))
            text = f"{b[1]:+.1f} ns" if b else "-"
            if label == "native" and b:
                text = f"{b[0]:.1f} ns native"
            if i is not None:
                text += f", {i} Ir"
            cells.append(text)
        print(f"| {label} | " + " | ".join(cells) + " |")
PY
