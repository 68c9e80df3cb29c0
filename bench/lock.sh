# Sourced by every bench/run_*.sh right after `set -euo pipefail`: two of Strata's benchmarks
# never run at the same time. The script runs again under `flock` on /tmp/strata-bench.lock
# (STRATA_BENCH_LOCK= names another file), waiting while another benchmark of this project holds
# it. The lock is advisory: nothing else on the machine is stopped, paused or reniced, so figures
# stay comparable only through interleaved runs, medians and callgrind's instruction counts.
# `--close` keeps the lock out of the processes the benchmark starts (a server left running must
# not hold it); a benchmark started by another one runs under the lock its caller holds.
if [[ -z ${STRATA_BENCH_LOCKED:-} ]]; then
  export STRATA_BENCH_LOCKED=1
  strata_bench_lock=${STRATA_BENCH_LOCK:-/tmp/strata-bench.lock}
  if ! flock --nonblock --close "$strata_bench_lock" true; then
    echo "$(basename "$0"): waiting for another Strata benchmark to finish ($strata_bench_lock)" >&2
  fi
  exec flock --close "$strata_bench_lock" bash "$0" "$@"
fi
