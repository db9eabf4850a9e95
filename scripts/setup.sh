#!/usr/bin/env bash
# Set-up of a fresh Debian machine (run as root, or with sudo available): installs the packages the
# build, the tests and the demo need, then configures and builds the project into build/.
# Idempotent and offline on a prepared machine: apt is called only when `dpkg -s` reports a
# package missing, and the configure step keeps an existing build folder (ninja then rebuilds
# only what changed).
#
# Environment: BUILD_DIR (default build), CAGRA_CUDA (AUTO: the CUDA backend when nvcc is found),
# CAGRA_WERROR (OFF; ON: warnings in the project's code fail the build, as in CI),
# BUILD_TYPE (Release), JOBS (parallel compile jobs; default: number of cores), TARGETS (build
# only these CMake targets, e.g. "cagra_cli hnswlib_peer"; default: everything),
# CAGRA_SETUP_NO_APT=1 (report missing packages but do not call apt, e.g. on a non-Debian host).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-build}

packages=(cmake ninja-build g++ libgtest-dev libbenchmark-dev zlib1g-dev libhdf5-dev libhnswlib-dev
          dataset-fashion-mnist python3 python3-numpy python3-matplotlib python3-venv python3-dev)

# `dpkg -s` also succeeds for removed packages whose config files remain: check the status line.
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg -s "$p" 2>/dev/null || true)
  if [[ $status != *"Status: install ok installed"* ]]; then missing+=("$p"); fi
done

if ((${#missing[@]} > 0)) && [[ -n ${CAGRA_SETUP_NO_APT:-} ]]; then
  # Machines without a Debian mirror (the lent GPU machine) build with what they have.
  echo "setup: missing ${missing[*]}; CAGRA_SETUP_NO_APT is set, not installing"
elif ((${#missing[@]} > 0)); then
  echo "setup: installing ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# Pass the generator only on the first configure: CMake refuses a generator change later.
generator=()
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then generator=(-G Ninja); fi
cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  -DCAGRA_CUDA="${CAGRA_CUDA:-AUTO}" -DCAGRA_WERROR="${CAGRA_WERROR:-OFF}"
read -r -a targets <<<"${TARGETS:-}"
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" ${targets[@]+--target "${targets[@]}"}
echo "setup: built $BUILD_DIR/cagra"
