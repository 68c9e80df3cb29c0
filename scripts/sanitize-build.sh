#!/usr/bin/env bash
# Configures build-sanitize (clang-14, Debug, ASan and UBSan in every library, libFuzzer's
# coverage in the libraries the fuzz targets link: fuzz/CMakeLists.txt) and builds the targets
# given: scripts/test.sh's unit tests under the sanitizers and scripts/fuzz.sh's targets share
# this one tree instead of building every library twice. -O0: at -O1 each file costs about 2.5 x
# the CPU time to compile.
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DSTRATA_SANITIZE=ON -DSTRATA_FUZZ=ON \
  -DSTRATA_WERROR=ON -DSTRATA_UNITY=ON -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_C_FLAGS_DEBUG=-g -DCMAKE_CXX_FLAGS_DEBUG=-g >/dev/null
cmake --build build-sanitize -j"$(nproc)" --target "$@"
