#!/usr/bin/env bash
# What noting a call for the hang diagnosis costs, in ns: the figures behind docs/PERFORMANCE.md
# ("Where each rank is (the hang state)").
#
#   bash bench/run_where_note.sh [BUILD_DIR]      (default ./build; about a minute a flavor)
#
# BUILD_DIR/bench/<flavor>/where_note (bench/where_note.cpp, Google Benchmark): the timed path's
# own inline notes (note_call and note_return of a barrier and of a Sendrecv; of an MPI_Irecv
# and an MPI_Isend, then their note_post) against a loop that does the same work minus the
# note. Each benchmark REPS times, interleaved at random, pinned to one CPU (CPU=1), the median
# of the thread's CPU time (wall time means nothing on a loaded machine; CPU time does, as the
# baseline's 32 multiplies show: 96 cycles). Two settings: "bare", the notes back to back (an
# upper bound: the counters' increments chain from call to call), and "in a call", the notes
# around 32 dependent multiplies carried from call to call (about 33 ns, a barrier on
# MPI_COMM_SELF), whose latency the stores overlap as in a real call.
#
# Knobs: FLAVORS="openmpi mpich", REPS=15, MIN_TIME=0.1 (seconds per repetition), CPU=1.
set -euo pipefail
source "$(dirname "$0")/lock.sh"
source "$(dirname "$0")/inline_cost.sh"
inline_cost_run "${1:-build}" where_note note \
  "barrier: note_call + note_return|barrier_noted|barrier_baseline" \
  "Sendrecv: note_call + note_return|sendrecv_noted|sendrecv_baseline" \
  "Irecv: note_call + note_return|irecv_call_noted|irecv_baseline" \
  "Irecv: note_post|irecv_request_noted|irecv_call_noted" \
  "Irecv: both|irecv_request_noted|irecv_baseline" \
  "Isend: note_call + note_return|isend_call_noted|isend_baseline" \
  "Isend: note_post|isend_request_noted|isend_call_noted" \
  "Isend: both|isend_request_noted|isend_baseline"
