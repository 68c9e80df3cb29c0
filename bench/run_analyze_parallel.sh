#!/usr/bin/env bash
# The analysis as an MPI job against the serial analyzer: the figures behind docs/PERFORMANCE.md
# ("Analyzer", several processes).
#
#   bash bench/run_analyze_parallel.sh [BUILD_DIR] [scaling|wall]     (default ./build scaling)
#
# scaling: for each of LOCATIONS (default "64 256 1024 4096") a synthetic archive of EVENTS events
#   (default 8000000; bench/gen_trace: a ring of Isend/Irecv/Waitall, Allreduce, barriers) is
#   analysed by `strata analyze --json` in one process (CPU seconds and peak RSS of the child) and
#   by PROCS analysis processes (default "1 2 4 8 16", oversubscribed on a small machine) under
#   mpirun.FLAVOR (default openmpi) of lib/strata/FLAVOR/strata-analyze --stats, whose processes
#   each report their CPU time, the part of it in their own work (not waiting in MPI, where Open
#   MPI and MPICH spin), events read and peak RSS. Printed per N: CPU per event of all processes
#   together (all, and work only) against the serial analyzer's, the busiest process's work per
#   event of its share, peak RSS of the largest process and per location of its share. The outputs are compared with the serial one (equal,
#   or the run fails). CPU time, not wall time: with more processes than cores, wall time
#   measures the scheduler.
# wall: wall time of the serial analyzer and of 2 processes on one archive (LOCATIONS default
#   1024, EVENTS default 30000000), RUNS times (default 3) alternating: `strata analyze --np 2`
#   (the launcher started by Strata, the user's command), `mpirun -np 2` of the worker with the
#   launcher's defaults, and the worker's own time from MPI_Init's return to the report; then a
#   job that only starts and ends MPI under both launches (the fixed cost). Best on an idle machine:
#   bash bench/run_analyze_parallel.sh build wall
set -euo pipefail
source "$(dirname "$0")/lock.sh"
build=$(cd "${1:-build}" && pwd)
mode=${2:-scaling}
flavor=${FLAVOR:-openmpi}
work=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/strata-analyze-parallel.XXXXXX")}
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/../scripts/mpi-env.sh"
launcher=("mpirun.$flavor")
[[ $flavor == openmpi ]] && launcher+=(--oversubscribe)
[[ $flavor == openmpi && $(id -u) == 0 ]] && launcher+=(--allow-run-as-root)
worker="$build/lib/strata/$flavor/strata-analyze"

if [[ $mode == wall ]]; then
  locations=${LOCATIONS:-1024}
  events=${EVENTS:-30000000}
else
  locations=${LOCATIONS:-64 256 1024 4096}
  events=${EVENTS:-8000000}
fi

for l in $locations; do
  rm -rf "$work/trace"
  "$build/bench/gen_trace" "$work/trace" "$l" "$events" >/dev/null
  python3 - "$mode" "$build/bin/strata" "$worker" "$work" "$l" "${PROCS:-1 2 4 8 16}" \
    "${RUNS:-3}" "$flavor" "$build/bench/$flavor/init_finalize" "${launcher[@]}" <<'PY'
import json, os, re, resource, subprocess, sys, time
mode, strata, worker, work, locations, procs, runs, flavor, empty_job, *launcher = sys.argv[1:]
trace, locations = f"{work}/trace", int(locations)

def serial():
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([strata, "analyze", "--json", trace], capture_output=True, check=True,
                         text=True).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out, wall, cpu, after.ru_maxrss

def shared(n):
    t0 = time.perf_counter()
    proc = subprocess.run(launcher + ["-np", str(n), worker, "--json", "--stats", trace],
                          capture_output=True, check=True, text=True)
    wall = time.perf_counter() - t0
    stats = [dict(zip(("first", "last", "events", "cpu", "rss", "wall", "work"),
                      map(float, m.groups())))
             for m in re.finditer(r"ranks (\d+)-(\d+) events (\d+) cpu_s ([0-9.]+) "
                                  r"peak_rss_kib (\d+) wall_s ([0-9.]+) work_cpu_s ([0-9.]+)",
                                  proc.stderr)]
    assert len(stats) == n, proc.stderr
    return proc.stdout, wall, stats

reference, s_wall, s_cpu, s_rss = serial()
report = json.loads(reference)
events = report["events"]
def timed(command, env=None):
    t0 = time.perf_counter()
    proc = subprocess.run(command, capture_output=True, check=True, text=True, env=env)
    return proc.stdout, time.perf_counter() - t0

if mode == "wall":
    walls = {"serial": [], "strata --np 2": [], "mpirun": [], "inside": [],
             "empty --np": [], "empty mpirun": []}
    # The empty job started with the setting strata analyze --np gives the launcher.
    np_env = dict(os.environ, **({"OMPI_MCA_pml": "^cm"} if flavor == "openmpi" else {}))
    for _ in range(int(runs)):
        walls["serial"].append(serial()[1])
        out, wall = timed([strata, "analyze", "--np", "2", "--mpi", flavor, "--json", trace])
        assert json.loads(out) == report
        walls["strata --np 2"].append(wall)
        out, wall, stats = shared(2)
        assert json.loads(out) == report
        walls["mpirun"].append(wall)
        walls["inside"].append(max(s["wall"] for s in stats))
        walls["empty --np"].append(timed(launcher + ["-np", "2", empty_job], np_env)[1])
        walls["empty mpirun"].append(timed(launcher + ["-np", "2", empty_job])[1])
    best = {k: min(v) for k, v in walls.items()}
    ratio = lambda k: best[k] / best["serial"]
    print(f"{locations} locations, {events} events, {flavor}: serial wall {best['serial']:.2f} s; "
          f"2 processes: strata analyze --np 2 {best['strata --np 2']:.2f} s "
          f"(ratio {ratio('strata --np 2'):.2f}), mpirun -np 2 of the worker "
          f"{best['mpirun']:.2f} s (ratio {ratio('mpirun'):.2f}), from MPI_Init's return to the "
          f"report {best['inside']:.2f} s (ratio {ratio('inside'):.2f}); a job that only starts "
          f"and ends MPI: {best['empty --np']:.2f} s as --np starts it, "
          f"{best['empty mpirun']:.2f} s with the launcher's defaults; best of {runs}")
    sys.exit(0)
s_ns = s_cpu / events * 1e9
print(f"{locations} locations, {events} events: serial {s_ns:.0f} ns CPU per event, "
      f"peak RSS {s_rss / 1024:.0f} MiB")
print(f"  {'N':>3} {'all ns/ev':>10} {'vs serial':>9} {'work ns/ev':>10} {'vs serial':>9} "
      f"{'busiest':>8} {'max RSS MiB':>11} {'KiB/location':>12}")
for n in map(int, procs.split()):
    if n > locations:
        continue
    out, wall, stats = shared(n)
    assert json.loads(out) == report, f"N={n}: the report differs from the serial one"
    busiest = max(s["work"] / s["events"] * 1e9 for s in stats)
    all_ns = sum(s["cpu"] for s in stats) / events * 1e9
    work_ns = sum(s["work"] for s in stats) / events * 1e9
    biggest = max(stats, key=lambda s: s["rss"])
    share = biggest["last"] - biggest["first"]
    print(f"  {n:>3} {all_ns:>10.0f} {all_ns / s_ns:>9.2f} {work_ns:>10.0f} "
          f"{work_ns / s_ns:>9.2f} {busiest:>8.0f} {biggest['rss'] / 1024:>11.0f} "
          f"{biggest['rss'] / share:>12.0f}")
PY
done
