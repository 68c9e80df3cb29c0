#!/usr/bin/env bash
# Configures and builds Strata into ./build (or $STRATA_BUILD_DIR); with targets as arguments,
# builds only those (scripts/demo.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${STRATA_BUILD_DIR:-build}
# ccache (CMakeLists.txt) shares object files between checkouts: paths inside this checkout are
# hashed relative to it and the compiler's working directory not at all, so a second clone in
# another folder compiles from the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_WERROR=ON -DSTRATA_UNITY=ON >/dev/null
cmake --build "$build" -j"$(nproc)" ${1:+--target "$@"}
