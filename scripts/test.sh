#!/usr/bin/env bash
# Runs the CPU test suites (what CI runs): set-up and build through scripts/setup.sh, then every
# test labelled `cpu` with ctest. Exits non-zero on any failure. The `cuda` tests need a GPU and
# run through the device scripts instead.
#
# Environment: BUILD_DIR (default build), CTEST_JOBS (default 2, the CI machine's core count).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-build}

bash scripts/setup.sh
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
ctest --test-dir "$BUILD_DIR" -L cpu --output-on-failure -j "${CTEST_JOBS:-2}"
