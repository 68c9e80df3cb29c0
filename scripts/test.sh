#!/usr/bin/env bash
# All tests: installs what is missing, builds, runs every test (unit and MPI integration) with
# ctest while the sanitizer tree's build and its unit tests (ASan + UBSan), formatting and
# clang-tidy run beside it, then a smoke run of the fuzzers.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache across checkouts for the sanitizer build too, as scripts/build.sh sets it.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
bash scripts/setup.sh

# In the background at low priority (nice 10), from the start: the sanitizer tree's build (it
# needs nothing of the main build) and then the unit tests under ASan and UBSan; once the main
# build has made compile_commands.json and the generated headers, clang-format and clang-tidy.
# They take the CPU the build's serial steps and the suite leave idle: most of an MPI test's
# time is waiting (ranks starting, yielding, a server coming up). Their output:
# build/sanitize-build.log, build-sanitize/unit.log, build/lint.log; which of the two sanitized
# parts failed, if one did: build/sanitized.failed.
sanitized() {
  bash scripts/sanitize-build.sh strata_unit_tests strata_fuzzers >build/sanitize-build.log 2>&1 ||
    { echo build >build/sanitized.failed && return; }
  touch build/sanitized.built
  (cd build-sanitize && ctest -L unit --output-on-failure -j"$(nproc)" >unit.log 2>&1) ||
    echo unit >build/sanitized.failed
}
export -f sanitized
echo "== the sanitizer tree's build and its unit tests: in the background"
mkdir -p build
rm -f build/sanitized.failed build/sanitized.built
nice -n 10 bash -c sanitized &
sanitize_build=$!
if ! bash scripts/build.sh; then
  # Not left behind: the sanitizer tree's build, its compilers and make, all started here.
  end_tree() { local child; for child in $(pgrep -P "$1"); do end_tree "$child"; done; kill "$1" 2>/dev/null || true; }
  end_tree "$sanitize_build"
  echo "test: FAILED: the build"
  exit 1
fi
source scripts/mpi-env.sh
echo "== format and lint: in the background"
nice -n 10 bash scripts/lint.sh >build/lint.log 2>&1 &
lint=$!

# As many tests at a time as there are cores: most of an MPI test's time is waiting, so the
# suite takes about half as long; the suites that start daemons (Slurm, PostgreSQL, the web
# server) take ports of their own.
echo "== all tests"
failed=()
(cd build && ctest --output-on-failure -j"$(nproc)") || failed+=("the suite")

# The fuzz targets need the sanitizer tree built, not its unit tests done: they run beside the
# last of those (a long test alone would leave a core idle).
while [[ ! -e build/sanitized.built ]] && kill -0 "$sanitize_build" 2>/dev/null; do sleep 1; done
if [[ -e build/sanitized.built ]]; then
  # 3 s a target: each runs its seed corpus and then mutates for the rest (fuzz.sh). Longer
  # runs are for a fuzzing session of their own (bash scripts/fuzz.sh SECONDS).
  echo "== fuzz smoke run"
  bash scripts/fuzz.sh 3 || failed+=("the fuzz smoke run")
fi

echo "== unit tests under ASan + UBSan (build-sanitize/unit.log)"
wait "$sanitize_build" || true
case $(cat build/sanitized.failed 2>/dev/null || true) in
  build) tail -60 build/sanitize-build.log && failed+=("the sanitizer tree's build") ;;
  unit)
    grep -vE "^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed" build-sanitize/unit.log | tail -200
    failed+=("the unit tests under ASan + UBSan")
    ;;
  *) grep -E "tests passed|Total Test time" build-sanitize/unit.log || true ;;
esac

echo "== format and lint (build/lint.log)"
if wait "$lint"; then tail -1 build/lint.log; else tail -60 build/lint.log; failed+=("format or lint"); fi

if ((${#failed[@]})); then
  printf 'test: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "test: all passed"
