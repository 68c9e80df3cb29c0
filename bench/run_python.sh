#!/usr/bin/env bash
# Python programs under Strata: what the call-site profile costs per call in Python against the
# same loop in C, and what the strata package's annotations cost with and without Strata.
#
#   bash bench/run_python.sh [BUILD_DIR]            (default ./build; Open MPI, mpi4py)
#
# Each run is a singleton (one process, no launcher) of BUILD_DIR/bench/openmpi/callsite_loop
# (C, MPI_THREAD_MULTIPLE as mpi4py asks) or bench/python_loop.py (Debian's python3 and mpi4py):
#   calls     rank (MPI_Comm_rank; mpi4py keeps the GIL) and self_barrier (MPI_Barrier on
#             MPI_COMM_SELF; mpi4py releases the GIL); lang c_busy is the C loop with a small
#             bytecode loop between calls (about the Python loop's time per call), to see the
#             profile's cost next to other work as well as in a loop of nothing else, and c_dense
#             the same with work that keeps the execution units busy as an interpreter does
#             (bench/callsite_loop.c): next to nothing, or to the latency-bound bytecode loop, the
#             profile's instructions hide behind its clock reads; next to dense work, in C as in
#             Python, they cost their own time
#   none      no Strata
#   sites     profile with STRATA_PROFILE_CALLSITES=1
#   no_py     the same with STRATA_PYTHON_SITES=0 (Python only: the call site is then mpi4py's
#             address, so the difference to `sites` is the Python frame's capture)
# and prints ns per call (best of REPS repetitions, best of ROUNDS runs) and the profile's cost
# per call (sites - none) in each language. Then the annotations: `with strata.region` and a
# @strata.function call, without Strata, with Strata and no module that wants regions (profile),
# and with the trace module recording them; `bare` and `plain_function` are the loop without
# annotation, `null_with` a `with` on contextlib.nullcontext (what any `with` costs). With CALLGRIND=1 (default) also instructions per call under callgrind,
# (Ir(2N) - Ir(N)) / N.
#
# Knobs: PYTHON=/usr/bin/python3, ROUNDS=3, REPS=5, N_C=1000000, N_PY=300000, CALLGRIND=1,
# CG_N=20000, TIMING=1 (0: callgrind only), ANNOTATIONS=1 (0: the MPI call loops only),
# BASE=OTHER_BUILD_DIR (another build, main's say: its call-site profile is measured in the same
# run, right after this build's, as the columns "base sites" and "base cost" of the MPI call
# loops and "base" and "base site" of the callgrind table).
set -euo pipefail
source "$(dirname "$0")/lock.sh"

BUILD=$(cd "${1:-build}" && pwd)
BASE=${BASE:+$(cd "$BASE" && pwd)}
HERE=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
ROUNDS=${ROUNDS:-3}
REPS=${REPS:-5}
N_C=${N_C:-1000000}
N_PY=${N_PY:-300000}
CALLGRIND=${CALLGRIND:-1}
CG_N=${CG_N:-20000}
TIMING=${TIMING:-1}
ANNOTATIONS=${ANNOTATIONS:-1}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
lib=$BUILD/lib/strata/openmpi/libstrata.so
base_lib=${BASE:+$BASE/lib/strata/openmpi/libstrata.so}
c_loop=$BUILD/bench/openmpi/callsite_loop
py_loop=$HERE/python_loop.py
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export STRATA_SPOOL=$tmp/spool STRATA_TRACE_DIR=$tmp/trace
export PYTHONPATH=$BUILD/lib/strata/python${PYTHONPATH:+:$PYTHONPATH}

# config_env CONFIG -> the environment of that configuration, one assignment a line
config_env() {
  case $1 in
    none) ;;
    sites) printf '%s\n' LD_PRELOAD="$lib" STRATA_TOOLS=profile STRATA_PROFILE_CALLSITES=1 ;;
    no_py) printf '%s\n' LD_PRELOAD="$lib" STRATA_TOOLS=profile STRATA_PROFILE_CALLSITES=1 \
      STRATA_PYTHON_SITES=0 ;;
    base_sites) printf '%s\n' LD_PRELOAD="$base_lib" STRATA_TOOLS=profile STRATA_PROFILE_CALLSITES=1 ;;
    profile) printf '%s\n' LD_PRELOAD="$lib" STRATA_TOOLS=profile ;;
    trace) printf '%s\n' LD_PRELOAD="$lib" STRATA_TOOLS=trace ;;
  esac
}

# command LANG CALL N REPS -> the loop's command line
command_for() {
  case $1 in
    c) echo "$c_loop $2 $3 $4" ;;
    c_busy) echo "$c_loop $2_busy $3 $4" ;;
    c_dense) echo "$c_loop $2_dense $3 $4" ;;
    *) echo "$PYTHON $py_loop $2 $3 $4" ;;
  esac
}

# best_ns LANG CALL CONFIG N -> the best ns per call over ROUNDS runs
best_ns() {
  local best="" ns
  mapfile -t envs < <(config_env "$3")
  for ((r = 0; r < ROUNDS; r++)); do
    # shellcheck disable=SC2046
    ns=$(env "${envs[@]}" $(command_for "$1" "$2" "$4" "$REPS") 2>/dev/null |
      sed -n 's/.*ns_per_call=\([0-9.]*\).*/\1/p')
    [[ -z $ns ]] && { echo "run failed: $1 $2 $3" >&2; exit 1; }
    best=$(echo "$ns $best" | awk '{print ($2 == "" || $1 < $2) ? $1 : $2}')
  done
  echo "$best"
}

# callgrind_run LANG CALL CONFIG N -> the callgrind file of that run (run once, then reused)
callgrind_run() {
  local out=$tmp/cg.$1.$2.$3.$4
  [[ -s $out ]] && { echo "$out"; return; }
  mapfile -t envs < <(config_env "$3")
  # shellcheck disable=SC2046
  env "${envs[@]}" valgrind --tool=callgrind --trace-children=no --callgrind-out-file="$out" \
    $(command_for "$1" "$2" "$4" 1) >"$out.log" 2>&1 || { tail -5 "$out.log" >&2; exit 1; }
  echo "$out"
}

# inclusive FILE PATTERN -> the inclusive Ir of the first function matching PATTERN
inclusive() {
  callgrind_annotate --inclusive=yes --threshold=100 "$1" 2>/dev/null |
    awk -v p="$2" '$0 ~ p {gsub(",", "", $1); print $1; found = 1; exit} END {if (!found) print 0}'
}

# per_call LANG CALL CONFIG PATTERN -> Ir per call of PATTERN, (Ir(2N) - Ir(N)) / N
per_call() {
  local a b
  a=$(inclusive "$(callgrind_run "$1" "$2" "$3" "$CG_N")" "$4")
  b=$(inclusive "$(callgrind_run "$1" "$2" "$3" $((2 * CG_N)))" "$4")
  echo "$a $b $CG_N" | awk '{printf "%.0f", ($2 - $1) / $3}'
}

if [[ $TIMING == 1 ]]; then
echo "== MPI call loops: ns per call (best of $REPS repetitions, best of $ROUNDS runs)"
printf '%-8s %-13s %9s %9s %9s %14s %14s' lang call none sites no_py "profile cost" "python sites"
if [[ -n $BASE ]]; then printf ' %10s %10s' "base sites" "base cost"; fi
echo
for call in rank self_barrier; do
  for lang in c c_busy c_dense python; do
    n=$N_C
    [[ $lang == python ]] && n=$N_PY
    none=$(best_ns $lang $call none "$n")
    sites=$(best_ns $lang $call sites "$n")
    base=-
    if [[ -n $BASE ]]; then base=$(best_ns $lang $call base_sites "$n"); fi
    no_py=-
    [[ $lang == python ]] && no_py=$(best_ns $lang $call no_py "$n")
    echo "$lang $call $none $sites $no_py $base" | awk '{
      extra = $5 == "-" ? "-" : sprintf("%.1f", $4 - $5)
      printf "%-8s %-13s %9.1f %9.1f %9s %14.1f %14s", $1, $2, $3, $4, $5, $4 - $3, extra
      if ($6 != "-") printf " %10.1f %10.1f", $6, $6 - $3
      printf "\n" }'
  done
done

fi

if [[ $TIMING == 1 && $ANNOTATIONS == 1 ]]; then
echo
echo "== annotations (Python): ns per loop iteration"
printf '%-15s %9s %9s %9s\n' loop none profile trace
for call in bare null_with region plain_function function; do
  row="$call"
  for config in none profile trace; do
    row+=" $(best_ns python $call $config "$N_PY")"
  done
  echo "$row" | awk '{printf "%-15s %9.1f %9.1f %9.1f\n", $1, $2, $3, $4}'
done
fi

if [[ $CALLGRIND == 1 ]]; then
  echo
  echo "== callgrind: instructions per call, (Ir($((2 * CG_N)) calls) - Ir($CG_N calls)) / $CG_N"
  echo "   strata: inclusive in libstrata's entry point (the profile and the real call);"
  echo "   python site: inclusive in the Python frame's capture (repeated_site, the known"
  echo "   layout's, where it is used; else python_call_site)"
  printf '%-8s %-13s %12s %12s %12s' lang call strata no_py "python site"
  if [[ -n $BASE ]]; then printf ' %12s %12s' base "base site"; fi
  echo
  site_pattern="(repeated_site<[^>]*>|python_call_site)\\(void const\\*\\) \\["
  for call in rank self_barrier; do
    entry="MPI_Comm_rank \\[.*libstrata"
    [[ $call == self_barrier ]] && entry="MPI_Barrier \\[.*libstrata"
    for lang in c python; do
      strata=$(per_call $lang $call sites "$entry")
      no_py=- site=- base=- base_site=-
      if [[ $lang == python ]]; then
        no_py=$(per_call $lang $call no_py "$entry")
        site=$(per_call $lang $call sites "$site_pattern")
      fi
      if [[ -n $BASE ]]; then
        base=$(per_call $lang $call base_sites "$entry")
        if [[ $lang == python ]]; then
          base_site=$(per_call $lang $call base_sites "$site_pattern")
        fi
      fi
      printf '%-8s %-13s %12s %12s %12s' $lang $call "$strata" "$no_py" "$site"
      if [[ -n $BASE ]]; then printf ' %12s %12s' "$base" "$base_site"; fi
      echo
    done
  done
  [[ $ANNOTATIONS == 1 ]] || exit 0
  # Debian's python3 notices valgrind and allocates with malloc instead of its own allocator,
  # so whole-process counts are larger than in a plain run: compare the rows with each other.
  echo "   annotations: instructions per loop iteration of the whole Python process"
  printf '%-15s %9s %9s %9s\n' loop none profile trace
  for call in bare null_with region function; do
    row=$call
    for config in none profile trace; do
      row+=" $(per_call python $call $config "^[0-9,]+ .*PROGRAM TOTALS")"
    done
    echo "$row" | awk '{printf "%-15s %9d %9d %9d\n", $1, $2, $3, $4}'
  done
fi
