#!/usr/bin/env bash
# Installs the Debian 12 packages Strata needs, only those missing. Run as root (or with sudo).
#   bash scripts/setup.sh          everything: build, demo, tests, lint, benchmarks
#   bash scripts/setup.sh build    what building and running it takes (scripts/demo.sh): no
#                                  browser, database server, Slurm daemons, valgrind or clang
set -euo pipefail

# Building Strata and running its demo.
packages=(
  build-essential cmake pkg-config gfortran python3 castxml ccache bc
  libopenmpi-dev openmpi-bin libmpich-dev mpich
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev libelf-dev libdw-dev
  nlohmann-json3-dev libfmt-dev libpapi-dev libboost-math-dev
  libotf2-trace-dev otf2-tools libsqlite3-dev sqlite3 libpq-dev libcpp-httplib-dev libssl-dev
  zlib1g-dev libsimdjson-dev libdeflate-dev libslurm-dev
)
# The tests, the lint and the benchmarks: the web interface's browser and bundler, a real
# PostgreSQL server and Slurm, mpi4py, valgrind, clang's tools and sanitizer runtime.
if [[ ${1:-all} != build ]]; then
  packages+=(
    valgrind clang-14 clang-format-14 clang-tidy-14 libclang-rt-14-dev
    postgresql chromium python3-prometheus-client python3-mpi4py
    slurmctld slurmd slurm-client munge slurm-wlm-basic-plugins
  )
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js for bundling the web UI: any nodejs that brings npm will do (Debian's, or a repack of it).
[[ ${1:-all} == build ]] || command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
