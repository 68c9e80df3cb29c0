#!/usr/bin/env bash
# Configures and builds Strata into ./build (or $STRATA_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${STRATA_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_WERROR=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
