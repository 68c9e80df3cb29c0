#!/usr/bin/env bash
# Analyzer throughput and peak memory: the figures behind docs/PERFORMANCE.md ("Analyzer").
#
#   bash bench/run_analyze.sh [BUILD_DIR]     (default ./build)
#
# Writes a synthetic OTF2 archive of EVENTS events (default 100000000) over RANKS ranks (default
# 16) with BUILD_DIR/bench/gen_trace (a ring of Isend/Irecv/Waitall plus Allreduce inside a user
# region, a barrier every 16 iterations; see bench/gen_trace.cpp) into WORK (default a fresh
# directory under ${TMPDIR:-/tmp}; about 12 bytes per event on disk), then runs
# `strata analyze --json` on it RUNS times (default 3). For each run: wall and CPU seconds,
# events per second of wall time and of CPU time (one core: the analyzer is single-threaded),
# and the peak resident set size (getrusage ru_maxrss of the child). The first run reads the
# archive just written, so it is usually in the page cache; DROP_CACHES=1 (root) drops the cache
# before each run to include disk reading.
set -euo pipefail
source "$(dirname "$0")/lock.sh"
source "$(dirname "$0")/synthetic_trace.sh"
synthetic_trace_settings analyze 100000000 "$@"
generate_synthetic_trace

for run in $(seq 1 "$runs"); do
  if [[ "${DROP_CACHES:-0}" == 1 ]]; then
    sync
    echo 3 >/proc/sys/vm/drop_caches
  fi
  python3 - "$build/bin/strata" "$work/trace" "$work/report.json" "$run" <<'PY'
import json, resource, subprocess, sys, time
strata, trace, out, run = sys.argv[1:]
t0 = time.perf_counter()
with open(out, "w") as f:
    subprocess.run([strata, "analyze", "--json", trace], stdout=f, check=True)
wall = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = usage.ru_utime + usage.ru_stime
report = json.load(open(out))
events = report["events"]
print(f"run {run}: {events} events, {report['messages']} messages, "
      f"{report['collectives']} collectives, {len(report['wait_states'])} wait-state rows; "
      f"wall {wall:.2f} s ({events / wall / 1e6:.2f} M events/s), "
      f"cpu {cpu:.2f} s ({events / cpu / 1e6:.2f} M events/s per core), "
      f"peak RSS {usage.ru_maxrss / 1024:.1f} MiB")
PY
done
