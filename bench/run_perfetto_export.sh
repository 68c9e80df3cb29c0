#!/usr/bin/env bash
# The Perfetto export's time and peak memory on a large trace: the figures behind
# docs/PERFORMANCE.md ("Perfetto export").
#
#   bash bench/run_perfetto_export.sh [BUILD_DIR]     (default ./build)
#
# Writes a synthetic OTF2 archive of EVENTS events (default 10000000) over RANKS ranks (default
# 16) with BUILD_DIR/bench/gen_trace (bench/gen_trace.cpp: a ring of Isend/Irecv/Waitall plus
# Allreduce inside a user region, a barrier every 16 iterations) into WORK (default a fresh
# directory under ${TMPDIR:-/tmp}), then runs `strata trace export --perfetto` on it RUNS times
# (default 3) and, with NP set (say NP=2), once more as `--np NP`; first `strata analyze --json`
# alone, for the part of the time that is the analysis. For each run: wall and CPU
# seconds (the children's), events per second, the output's size and what it holds, and the peak
# resident set size (getrusage ru_maxrss of the largest child). The archive was just written, so
# it is usually in the page cache; DROP_CACHES=1 (root) drops the cache before each run.
set -euo pipefail
source "$(dirname "$0")/lock.sh"
source "$(dirname "$0")/synthetic_trace.sh"
synthetic_trace_settings perfetto 10000000 "$@"
generate_synthetic_trace

measure() {
  local label=$1
  shift
  if [[ "${DROP_CACHES:-0}" == 1 ]]; then
    sync
    echo 3 >/proc/sys/vm/drop_caches
  fi
  python3 - "$label" "$work/out.json" "$@" <<'PY'
import re, resource, subprocess, sys, time, os
label, out, command = sys.argv[1], sys.argv[2], sys.argv[3:]
t0 = time.perf_counter()
proc = subprocess.run(command, capture_output=True, text=True, check=True)
wall = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = usage.ru_utime + usage.ru_stime
summary = proc.stdout.strip().split(": ", 1)[1] if label != "analysis" else "the report only"
events = int(os.environ["EVENTS_WRITTEN"])
size = f"{os.path.getsize(out) / 2**20:.0f} MiB" if label != "analysis" else "no file"
print(f"{label}: {summary}; {size}; wall {wall:.2f} s "
      f"({events / wall / 1e6:.2f} M events/s), cpu {cpu:.2f} s, "
      f"peak RSS {usage.ru_maxrss / 1024:.1f} MiB")
PY
}

# The events the archive holds (gen_trace rounds up to whole iterations).
export EVENTS_WRITTEN
EVENTS_WRITTEN=$("$build/bin/strata" analyze --json "$work/trace" |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["events"])')
echo "archive: $EVENTS_WRITTEN events"
# The analysis alone (what the export adds to it is the writing).
measure "analysis" "$build/bin/strata" analyze --json "$work/trace"
for run in $(seq 1 "$runs"); do
  measure "run $run" "$build/bin/strata" trace export --perfetto "$work/trace" -o "$work/out.json"
done
if [[ -n "${NP:-}" ]]; then
  measure "--np $NP" "$build/bin/strata" trace export --perfetto --np "$NP" "$work/trace" \
    -o "$work/out.json"
fi
