#!/usr/bin/env bash
# All tests: installs what is missing, builds, checks formatting, runs the unit tests under
# ASan+UBSan, smoke-runs the fuzzers, then runs every test (unit and MPI integration) with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache across checkouts for the sanitizer build too, as scripts/build.sh sets it.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
bash scripts/setup.sh
bash scripts/build.sh
source scripts/mpi-env.sh

echo "== format and lint"
bash scripts/lint.sh

echo "== unit tests under ASan + UBSan"
bash scripts/sanitize-build.sh strata_unit_tests strata_fuzzers
(cd build-sanitize && ctest -L unit --output-on-failure)

echo "== fuzz smoke run"
bash scripts/fuzz.sh 15

# As many tests at a time as there are cores: most of an MPI test's time is waiting (ranks starting,
# yielding, a server coming up), so the suite takes about half as long; the suites that start
# daemons (Slurm, PostgreSQL, the web server) take ports of their own.
echo "== all tests"
cd build && ctest --output-on-failure -j"$(nproc)"
