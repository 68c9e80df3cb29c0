#!/usr/bin/env bash
# The hang diagnosis at scale: the one-process simulation at 1,000 to 100,000 ranks (real state
# files written, read and diagnosed, the classes merged over a binary tree), then real hung jobs
# of tests/programs/hang.c under `strata run --tools profile --hang-after 2 --on-hang abort` at 8 to 64 ranks.
#
#   bash bench/run_hang_scale.sh BUILD
#
# Simulation (bench/hang_scale_sim.cpp), per pattern and N: the bytes of a rank's state file and
# of all, the time to read them as `strata hang SPOOL` does, to diagnose, to format (text, JSON),
# the sizes of both, the peak memory, and the tree: levels, the bytes the root receives, the sum
# of one level's slowest merges (what the tree's path costs). Each run checks its diagnosis (the
# cycle of all N ranks, the late rank named, the wrong-tag receive of rank 0) and the tree's
# classes against it: a wrong one stops this script. The wildcard pattern: every rank in MPI_Recv
# from MPI_ANY_SOURCE, nothing sent (each receive waits for any other rank: its graph is linear,
# one group a communicator, where an edge to each member would make N^2). The barrier_half
# pattern: the lower half of the ranks in MPI_Barrier, the upper half a ring of receives (one
# cycle, the barrier behind it: its N/2 waiters wait on one node for the N/2 missing members,
# where an edge from each to each would make N^2/4). Then the states through
# a K-ary tree of tool ranks (FANOUT, the monitor's default 2): the leaves read their ranks' files,
# each node merges its children's batches; the bytes arriving at the root, each level's slowest
# node summed, and the root's diagnosis checked against the files' (a different one stops this
# script).
# Real jobs, per flavor, mode and ranks: hang_c recv_recv (pairs of ranks receiving from each
# other first: R/2 deadlocks of two) and hang_c sleeper (the last rank sleeps before the
# collectives the others wait in): the time from the start of the job to the diagnosis on its
# standard error, how long the longest waiter had waited when it was judged (the threshold plus
# the watch's delay), the bytes of the state files in the spool, and whether the diagnosis names
# exactly the right ranks.
# Environment: SIM_RANKS="1000 10000 100000" (empty: none),
# PATTERNS="ring barrier_late barrier_half wrong_tag wildcard",
# RANKS="8 16 32 64" (empty: no real jobs), FLAVORS="openmpi mpich", MODES="recv_recv sleeper",
# FANOUT=2.
set -euo pipefail
source "$(dirname "$0")/lock.sh"

BUILD=$(cd "${1:?usage: run_hang_scale.sh BUILD}" && pwd)
SIM_RANKS=${SIM_RANKS-"1000 10000 100000"}
PATTERNS=${PATTERNS:-"ring barrier_late barrier_half wrong_tag wildcard"}
RANKS=${RANKS-"8 16 32 64"}
FLAVORS=${FLAVORS:-"openmpi mpich"}
MODES=${MODES:-"recv_recv sleeper"}
FANOUT=${FANOUT:-2}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
raw=$tmp/raw.txt
: >"$raw"

for pattern in $PATTERNS; do
  for n in $SIM_RANKS; do
    "$BUILD/bench/hang_scale_sim" --ranks "$n" --pattern "$pattern" --dir "$tmp/sim" --fanout "$FANOUT" | tee -a "$raw" >&2
    rm -rf "$tmp/sim"
  done
done

for flavor in $FLAVORS; do
  [[ -x $BUILD/tests/$flavor/hang_c ]] || { echo "skipping $flavor: no hang_c" >&2; continue; }
  for mode in $MODES; do
    for n in $RANKS; do
      spool=$tmp/spool && rm -rf "$spool" && mkdir -p "$spool"
      start=$(date +%s.%N)
      set +e
      STRATA_SPOOL=$spool HOME=$tmp timeout -k 10 180 "$BUILD/bin/strata" run --mpi "$flavor" -np "$n" --tools profile \
        --hang-after 2 --on-hang abort -- "$BUILD/tests/$flavor/hang_c" "$mode" 2>&1 |
        while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done >"$tmp/out"
      set -e
      python3 - "$tmp/out" "$spool" "$flavor" "$mode" "$n" "$start" <<'PY' | tee -a "$raw" >&2
import glob, os, re, sys
out, spool, flavor, mode, n, start = sys.argv[1:]
n, start = int(n), float(start)
lines = [l.rstrip("\n").split(" ", 1) for l in open(out)]
lines = [(float(t), text) for t, text in lines]
at = next((t for t, text in lines if "HANG:" in text), None)
text = "\n".join(text for _, text in lines)
waited = [float(w) for w in re.findall(r"for up to (\d+\.\d) s", text)]
files = glob.glob(os.path.join(spool, "*.hang"))
if mode == "recv_recv":
    right = all(f"DEADLOCK: ranks {r}-{r + 1} wait for each other" in text for r in range(0, n, 2)) \
        and text.count("DEADLOCK:") == n // 2
else:
    right = f"WAITING FOR A COMPUTING RANK: rank {n - 1} " in text and "DEADLOCK" not in text
print(f"bench hangjob flavor={flavor} mode={mode} ranks={n} "
      f"to_diagnosis_s={(at - start) if at else -1:.2f} longest_wait_s={max(waited, default=-1):.1f} "
      f"state_files={len(files)} state_bytes={sum(os.path.getsize(f) for f in files)} "
      f"right={'yes' if right and at else 'no'}")
PY
    done
  done
done

python3 - "$raw" <<'PY'
import re, sys
kvs = [dict(re.findall(r"(\w+)=(\S+)", l)) for l in open(sys.argv[1]) if l.startswith("bench ")]
sim = [k for k in kvs if "pattern" in k]
if sim:
    print("| pattern | ranks | bytes a rank | read MB | read ms | diagnose ms | text bytes | JSON bytes "
          "| peak MiB | tree root bytes | tree path ms | right |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for k in sim:
        print(f"| {k['pattern']} | {k['ranks']} | {k['file_bytes_per_rank']} | "
              f"{int(k['bytes_read']) / 1e6:.1f} | {k['read_ms']} | {k['diagnose_ms']} | "
              f"{k['text_bytes']} | {k['json_bytes']} | {int(k['peak_rss_tree_kib']) / 1024:.0f} | "
              f"{k['tree_root_bytes']} | {k['tree_path_ms']} | {k['right']} |")
    print()
    print("| pattern | ranks | files read MB | fanout | tool ranks | bytes at the root | a rank | "
          "tree path ms | tree total ms | root's diagnosis ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in sim:
        print(f"| {k['pattern']} | {k['ranks']} | {int(k['bytes_read']) / 1e6:.1f} | "
              f"{k['states_fanout']} | {k['states_tool_ranks']} | {k['states_root_bytes']} | "
              f"{int(k['states_root_bytes']) / int(k['ranks']):.1f} | {k['states_path_ms']} | "
              f"{k['states_total_ms']} | {k['states_diagnose_ms']} |")
jobs = [k for k in kvs if "mode" in k]
if jobs:
    print()
    print("| flavor | program | ranks | start to diagnosis s | longest wait when judged s "
          "| state files | state bytes | right ranks |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for k in jobs:
        print(f"| {k['flavor']} | hang_c {k['mode']} | {k['ranks']} | {k['to_diagnosis_s']} | "
              f"{k['longest_wait_s']} | {k['state_files']} | {k['state_bytes']} | {k['right']} |")
PY
