#!/usr/bin/env bash
# What the profile's communication matrix costs a call, in ns: the figures behind
# docs/PERFORMANCE.md ("The communication matrix").
#
#   bash bench/run_pair_sums.sh [BUILD_DIR]      (default ./build; about a minute a flavor)
#
# BUILD_DIR/bench/<flavor>/pair_sums (bench/pair_sums.cpp, Google Benchmark): the core's sums per
# peer as the summed path runs them (a send's message to its destination's world rank; the two
# starts of a persistent send and its receive looked up in the table of requests) against a loop
# that does the same work minus the sums. Each benchmark REPS times, interleaved at random,
# pinned to one CPU (CPU=1), the median of the thread's CPU time (wall time means nothing on a
# loaded machine; CPU time does). Two settings: "bare", the sums back to back (an upper bound:
# the adds to one pair chain from call to call), and "in a call", the sums beside 32 dependent
# multiplies carried from call to call (about 33 ns, a barrier on MPI_COMM_SELF), whose latency
# the sums' loads and adds overlap as in a real call.
#
# Knobs: FLAVORS="openmpi mpich", REPS=15, MIN_TIME=0.1 (seconds per repetition), CPU=1.
set -euo pipefail
source "$(dirname "$0")/lock.sh"
source "$(dirname "$0")/inline_cost.sh"
inline_cost_run "${1:-build}" pair_sums sums \
  "send: its message to the matrix|send_summed|send_baseline" \
  "two starts (a send's, a receive's)|start_summed|start_baseline"
