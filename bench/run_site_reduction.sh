#!/usr/bin/env bash
# The profile's finalize with call sites (STRATA_PROFILE_CALLSITES=1): the bytes rank 0 receives
# for the ranks' host names and call sites, and the time, against the number of ranks, for two
# builds of Strata in the same run (the old gather of every rank's text, the new tree that merges
# on the way up); then the one-process simulation of both up to 100,000 ranks.
#
#   bash bench/run_site_reduction.sh NEW_BUILD [OLD_BUILD]
#
# Real runs: bench/finalize_time.c under `strata run --tools profile`, with bench/count_collectives.c
# preloaded after libstrata (it counts what each rank receives after the program's last barrier:
# gather and reduce roots, MPI_Recv; and times the modules' part of MPI_Finalize). Before the
# tree, rank 0 received every rank's text through MPI_Gather and the figures through MPI_Reduce
# (counted as one buffer, a lower bound); with it, two messages of figures and texts. Per flavor, job size
# and build, REPS runs: rank 0's received bytes, the profile's part of MPI_Finalize (slowest
# rank, ms), the record's own profiler_finalize_s (ms), and whether the record's call sites
# (function, file, line, caller, calls, bytes, ranks) equal those of the other build's run.
# Environment: RANKS="2 4 8 16 32 64", REPS=3, FLAVORS="openmpi mpich",
# SIM_RANKS="2,8,64,1024,16384,100000" (empty: no simulation), SIM_SITES=30 (call sites per
# rank in the simulation; it runs once with no call site of a rank's own, once with one each).
set -euo pipefail
source "$(dirname "$0")/lock.sh"

NEW=$(cd "${1:?usage: run_site_reduction.sh NEW_BUILD [OLD_BUILD]}" && pwd)
OLD=${2:+$(cd "$2" && pwd)}
HERE=$(cd "$(dirname "$0")" && pwd)
RANKS=${RANKS:-"2 4 8 16 32 64"}
REPS=${REPS:-3}
FLAVORS=${FLAVORS:-"openmpi mpich"}
SIM_RANKS=${SIM_RANKS-"2,8,64,1024,16384,100000"}
SIM_SITES=${SIM_SITES:-30}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
unset STRATA_PROFILE_OUT STRATA_PROFILE_JSON STRATA_COUNTERS
export STRATA_PROFILE_CALLSITES=1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=$tmp/raw.txt
: >"$raw"

builds=(new)
[[ -n $OLD ]] && builds+=(old)
for flavor in $FLAVORS; do
  command -v "mpicc.$flavor" >/dev/null || { echo "skipping $flavor: no mpicc.$flavor" >&2; continue; }
  prog=$tmp/finalize_time.$flavor
  "mpicc.$flavor" -O2 -g -o "$prog" "$HERE/finalize_time.c"
  counter=$tmp/count_collectives.$flavor.so
  "mpicc.$flavor" -O2 -shared -fPIC -o "$counter" "$HERE/count_collectives.c" -ldl
  for n in $RANKS; do
    for ((i = 1; i <= REPS; i++)); do
      for b in "${builds[@]}"; do
        build=$NEW
        [[ $b == old ]] && build=$OLD
        spool=$tmp/spool.$b && rm -rf "$spool" && mkdir -p "$spool"
        (cd "$tmp" && LD_PRELOAD=$counter STRATA_SPOOL=$spool timeout 300 "$build/bin/strata" run \
          --mpi "$flavor" -np "$n" --tools profile -- "$prog") >"$tmp/out.$b" 2>&1 || {
          echo "run failed ($flavor, $n ranks, $b):" >&2
          tail -5 "$tmp/out.$b" >&2
          continue
        }
        python3 - "$tmp/out.$b" "$spool" "$flavor" "$n" "$b" "$tmp/sites.$b.json" <<'PY' | tee -a "$raw" >&2
import glob, json, re, sys
out, spool, flavor, n, build, sites_out = sys.argv[1:]
rows = [dict(re.findall(r"(\w+)=(\d+)", l)) for l in open(out) if l.startswith("bench collectives ")]
if len(rows) != int(n):
    sys.exit(f"{len(rows)} of {n} ranks reported")
rank0 = next(r for r in rows if r["rank"] == "0")
record = json.load(open(glob.glob(spool + "/*.json")[0]))
sites = sorted((c["function"], c["file"], c["line"], c["caller"], c["calls"], c["bytes"], c["ranks"])
               for c in record["callsites"])
json.dump(sites, open(sites_out, "w"))
print(f"bench sitered flavor={flavor} ranks={n} build={build} rank0_bytes={rank0['recv_bytes']} "
      f"max_rank_bytes={max(int(r['recv_bytes']) for r in rows)} "
      f"modules_ms={max(int(r['modules_ns']) for r in rows) / 1e6:.3f} "
      f"record_ms={record['job']['profiler_finalize_s'] * 1e3:.3f} sites={len(sites)}")
PY
      done
      if [[ -n $OLD && -f $tmp/sites.new.json && -f $tmp/sites.old.json ]]; then
        if cmp -s "$tmp/sites.new.json" "$tmp/sites.old.json"; then same=yes; else same=no; fi
        echo "bench sitesame flavor=$flavor ranks=$n same=$same" | tee -a "$raw" >&2
        rm -f "$tmp/sites.new.json" "$tmp/sites.old.json"
      fi
    done
  done
done

if [[ -n $SIM_RANKS ]]; then
  "$NEW/bench/site_reduction_sim" --ranks "$SIM_RANKS" --sites "$SIM_SITES" | tee -a "$raw" >&2
  "$NEW/bench/site_reduction_sim" --ranks "$SIM_RANKS" --sites "$SIM_SITES" --own 1 | tee -a "$raw" >&2
fi

python3 - "$raw" <<'PY'
import re, statistics, sys
from collections import defaultdict
kvs = [dict(re.findall(r"(\w+)=(\S+)", l)) for l in open(sys.argv[1]) if l.startswith("bench ")]
runs = defaultdict(list)
for k in kvs:
    if "build" in k:
        runs[(k["flavor"], int(k["ranks"]), k["build"])].append(k)
same = defaultdict(list)
for k in kvs:
    if "same" in k:
        same[(k["flavor"], int(k["ranks"]))].append(k["same"])
med = lambda rows, key: statistics.median(float(r[key]) for r in rows)
print("| flavor | ranks | rank 0 receives, old | new | profile's part of MPI_Finalize ms, old | new "
      "| record's finalize ms, old | new | call sites | same sites |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
for flavor, n in sorted({(f, n) for f, n, _ in runs}):
    new, old = runs.get((flavor, n, "new"), []), runs.get((flavor, n, "old"), [])
    cell = lambda rows, key, fmt: fmt.format(med(rows, key)) if rows else "-"
    print(f"| {flavor} | {n} | {cell(old, 'rank0_bytes', '{:.0f}')} | {cell(new, 'rank0_bytes', '{:.0f}')} "
          f"| {cell(old, 'modules_ms', '{:.1f}')} | {cell(new, 'modules_ms', '{:.1f}')} "
          f"| {cell(old, 'record_ms', '{:.1f}')} | {cell(new, 'record_ms', '{:.1f}')} "
          f"| {new[0]['sites'] if new else '-'} | {'/'.join(same.get((flavor, n), [])) or '-'} |")
print()
print("| simulated ranks | own sites per rank | distinct sites | rank 0 receives, gather | tree | "
      "largest any rank receives, tree | rounds | merge ms, gather at rank 0 | tree's slowest path "
      "| projected ms, gather | tree |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for k in kvs:
    if k.get("gather_root_bytes"):
        print(f"| {k['ranks']} | {k['own']} | {k['distinct_sites']} | {k['gather_root_bytes']} | "
              f"{k['tree_root_bytes']} | {k['tree_max_rank_bytes']} | {k['tree_rounds']} | "
              f"{k['gather_merge_ms']} | {k['tree_path_ms']} | {k['gather_projected_ms']} | "
              f"{k['tree_projected_ms']} |")
PY
