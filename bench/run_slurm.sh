#!/usr/bin/env bash
# What Strata's SPANK plugin costs each task of a job (docs/PERFORMANCE.md, "Slurm"): the
# per-task decision (is it an MPI program, which core) in a fresh process as slurmstepd forks
# each task, and the plugin's one question to slurmctld per step and node, inside a job of the
# Slurm sandbox (started and stopped here when it is not running).
#
#   bash bench/run_slurm.sh [BUILD_DIR]        (as root)
set -euo pipefail
source "$(dirname "$0")/lock.sh"
BUILD=$(cd "${1:-build}" && pwd)
cmake --build "$BUILD" --target bench_slurm_task_setup strata_spank >/dev/null
bench=$BUILD/bench/slurm_task_setup
dir=$(mktemp -d /tmp/strata-slurm-bench-XXXXXX)
export STRATA_SLURM_DIR=$dir STRATA_SLURM_PORT=16977
trap 'bash "$(dirname "$0")/../scripts/slurm-sandbox.sh" stop >/dev/null; rm -rf "$dir"' EXIT
bash "$(dirname "$0")/../scripts/slurm-sandbox.sh" start --plugin "$BUILD/lib/strata/slurm/strata_spank.so" >/dev/null
export SLURM_CONF=$dir/slurm.conf
srun -N 1 -n 1 "$bench" "$BUILD" "$BUILD/tests/openmpi/ring_c" /bin/true 100
