#!/usr/bin/env bash
# What reading the MPI library's own variables (MPI_T) costs the profile at MPI_Finalize:
#
#   bash bench/run_mpi_t.sh [BUILD_DIR]     (default ./build)
#
# Runs bench/finalize_time.c under `strata run --tools profile` on RANKS ranks (default "2 4")
# of each MPI in FLAVORS (default "openmpi mpich"), REPS times (default 7) with the reading on
# and off (STRATA_PROFILE_MPI_T=0) in turn, and prints per configuration the median of the
# record's job.profiler_finalize_s (rank 0's time in the profile at MPI_Finalize up to the
# totals, which includes the MPI_T reduction and rank 0's reading of the control variables),
# of the time in MPI_Finalize (last rank in to last rank out), and the record's size.
set -euo pipefail
source "$(dirname "$0")/lock.sh"
build=$(cd "${1:-build}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../scripts/mpi-env.sh"
reps=${REPS:-7}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/strata-mpi-t-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for flavor in ${FLAVORS:-openmpi mpich}; do
  prog=$tmp/finalize_time.$flavor
  "mpicc.$flavor" -O2 -o "$prog" "$HERE/finalize_time.c"
  for n in ${RANKS:-2 4}; do
    : >"$tmp/rows"
    for ((i = 1; i <= reps; i++)); do
      for reading in 1 0; do
        spool=$tmp/spool && rm -rf "$spool" && mkdir -p "$spool"
        (cd "$tmp" && STRATA_SPOOL=$spool STRATA_PROFILE_MPI_T=$reading \
          "$build/bin/strata" run --mpi "$flavor" -np "$n" --tools profile -- "$prog") \
          >"$tmp/out" 2>&1 || { tail -5 "$tmp/out" >&2; exit 1; }
        python3 - "$tmp/out" "$spool" "$reading" >>"$tmp/rows" <<'PY'
import glob, json, os, sys
out, spool, reading = sys.argv[1:]
rows = [dict(kv.split("=") for kv in l.split()[2:]) for l in open(out) if l.startswith("bench fin ")]
fin = max(int(r["return_ns"]) for r in rows) - max(int(r["enter_ns"]) for r in rows)
path = glob.glob(spool + "/*.json")[0]
rec = json.load(open(path))
print(reading, rec["job"]["profiler_finalize_s"], fin / 1e9, os.path.getsize(path))
PY
      done
    done
    python3 - "$tmp/rows" "$flavor" "$n" <<'PY'
import statistics, sys
path, flavor, n = sys.argv[1:]
rows = [l.split() for l in open(path)]
for reading, name in (("1", "mpi_t on"), ("0", "mpi_t off")):
    sel = [r for r in rows if r[0] == reading]
    med = lambda i: statistics.median(float(r[i]) for r in sel)
    print(f"bench mpi_t flavor={flavor} ranks={n} {name.replace(' ', '=')} runs={len(sel)} "
          f"profiler_finalize_ms={med(1) * 1e3:.2f} mpi_finalize_ms={med(2) * 1e3:.2f} "
          f"record_bytes={int(med(3))}")
PY
  done
done
