# Sourced by the benchmarks that read a synthetic OTF2 archive (run_analyze.sh,
# run_perfetto_export.sh), after lock.sh.
#
# synthetic_trace_settings NAME DEFAULT_EVENTS [BUILD_DIR]: sets build (BUILD_DIR, default
# ./build), events (EVENTS, default DEFAULT_EVENTS), ranks (RANKS, default 16), runs (RUNS,
# default 3) and work (WORK, default a fresh directory strata-NAME-bench.XXXXXX under
# ${TMPDIR:-/tmp}, removed on exit).
synthetic_trace_settings() {
  build=${3:-build}
  events=${EVENTS:-$2}
  ranks=${RANKS:-16}
  runs=${RUNS:-3}
  work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/strata-$1-bench.XXXXXX")}
  trap 'rm -rf "$work"' EXIT
}

# generate_synthetic_trace: writes $work/trace, $events events over $ranks ranks, with
# $build/bench/gen_trace (bench/gen_trace.cpp) and says how long that took and the archive's size.
generate_synthetic_trace() {
  local start end
  echo "generating $events events over $ranks ranks in $work"
  start=$(date +%s.%N)
  "$build/bench/gen_trace" "$work/trace" "$ranks" "$events"
  end=$(date +%s.%N)
  echo "generated in $(echo "$end - $start" | bc) s; archive size $(du -sh "$work/trace" | cut -f1)"
}
