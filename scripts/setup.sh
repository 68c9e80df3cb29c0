#!/usr/bin/env bash
# Installs the Debian 12 packages Strata needs, only those missing. Run as root (or with sudo).
set -euo pipefail

packages=(
  build-essential cmake pkg-config gfortran python3 castxml
  libopenmpi-dev openmpi-bin libmpich-dev mpich
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev libelf-dev libdw-dev
  nlohmann-json3-dev libfmt-dev libpapi-dev libboost-math-dev
  valgrind clang-14 clang-format-14 clang-tidy-14 libclang-rt-14-dev ccache
  libotf2-trace-dev otf2-tools libsqlite3-dev sqlite3 libpq-dev postgresql libcpp-httplib-dev
  chromium libssl-dev python3-prometheus-client
  zlib1g-dev bc
  libsimdjson-dev libdeflate-dev
  python3-mpi4py
  slurmctld slurmd slurm-client libslurm-dev munge slurm-wlm-basic-plugins
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js for bundling the web UI: any nodejs that brings npm will do (Debian's, or a repack of it).
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
