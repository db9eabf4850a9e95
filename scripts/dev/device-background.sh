#!/usr/bin/env bash
# Builds on the GPU machine in the background while a lease stages data (docs/dev/gpu-machine.md,
# "Staging big files": each receive call leaves the machine idle), so that the benchmark calls
# that follow find everything built. Run it in the first call of a lease:
#
#   bash scripts/dev/device-background.sh [A_TARBALL]
#
# It returns at once. It copies this tree to $SRC (/tmp/cagra-src: later calls re-send the
# working tree, and a build should not read files while they are replaced) with data/shared in
# $SRC/data/shared, then in one detached process (setsid):
#  1. builds $SRC/build-device as scripts/dev/device-bench-real.sh configures it (CUDA sm_90,
#     bench tools with hnswlib): cagra_cli, hnswlib_peer, graph_metrics, cagra_cuda_tests;
#  2. runs the CUDA tests (the suite of scripts/dev/device-check.sh without the Fashion-MNIST,
#     timing, throughput and 1M cases) with CAGRA_DATA_DIR=$SRC/data/shared;
#  3. with A_TARBALL (`git archive COMMIT | gzip`): unpacks it where scripts/dev/device-ab.sh does
#     (/tmp/cagra-ab/a) and builds both of its CLIs (A there, B in $SRC/build-ab), so that
#     `cd $SRC && bash scripts/dev/device-ab.sh /tmp/cagra-a.tar.gz NAME` (the tarball is copied
#     there) starts measuring at once.
# Progress and results: $LOG (/tmp/cagra-background.log; "DONE step rc=N" lines), the tests' output
# in /tmp/cagra-cuda-tests.log. `bash scripts/dev/device-background.sh --status` prints both tails.
#
# Environment: SRC (/tmp/cagra-src), LOG (/tmp/cagra-background.log), JOBS (nproc), CAGRA_COMMIT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
SRC=${SRC:-/tmp/cagra-src}
LOG=${LOG:-/tmp/cagra-background.log}
TESTS_LOG=/tmp/cagra-cuda-tests.log
JOBS=${JOBS:-$(nproc)}

if [[ ${1:-} == --status ]]; then
  tail -5 "$LOG" 2>/dev/null || echo "no $LOG"
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |tests? ran|FAILED TEST" "$TESTS_LOG" 2>/dev/null | tail -15
  exit 0
fi

A_TAR=${1:-}
[[ -z $A_TAR || -f $A_TAR ]] || { echo "no such tarball: $A_TAR" >&2; exit 1; }
if [[ -n $A_TAR ]]; then  # kept where later calls' syncs cannot remove it
  cp "$A_TAR" /tmp/cagra-a.tar.gz && A_TAR=/tmp/cagra-a.tar.gz
fi
mkdir -p "$SRC"
# The tree without the staged pieces and data sets (large, and not needed to build).
tar --exclude=./stage --exclude=./data --exclude='./build*' -cf - . | tar -xf - -C "$SRC"
[[ -d data/shared ]] && mkdir -p "$SRC/data" && cp -r data/shared "$SRC/data/"
export CAGRA_COMMIT=${CAGRA_COMMIT:-unknown}

# shellcheck disable=SC2016  # expanded by the detached shell
setsid nohup bash -c '
  cd "$0" || exit 1
  A_TAR=$1 JOBS=$2 TESTS_LOG=$3
  mark() { echo "$(date -u +%H:%M:%S) DONE $1 rc=$2"; }
  cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_BENCH=ON \
    -DHNSWLIB_INCLUDE_DIR="$PWD/third_party/include" >build-device.log 2>&1 &&
    cmake --build build-device -j "$JOBS" --target cagra_cli hnswlib_peer graph_metrics \
      cagra_cuda_tests >>build-device.log 2>&1
  rc=$?; mark build-device $rc; ((rc == 0)) || tail -20 build-device.log
  if [[ -n $A_TAR ]]; then  # the A/B CLIs, as scripts/dev/device-ab.sh builds them
    mkdir -p /tmp/cagra-ab/a && tar -xzf "$A_TAR" -C /tmp/cagra-ab/a
    for d in /tmp/cagra-ab/a "$PWD"; do
      cmake -S "$d" -B "$d/build-ab" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_TESTS=OFF -DCAGRA_BUILD_BENCH=OFF >/dev/null &&
        cmake --build "$d/build-ab" --target cagra_cli -j "$JOBS" >"$d/build-ab.log" 2>&1 &
    done
  fi
  if ((rc == 0)); then
    CAGRA_DATA_DIR=$PWD/data/shared build-device/tests/cagra_cuda_tests \
      --gtest_filter="-*Fashion*:*Timing*:*Throughput*:*1M*" >"$TESTS_LOG" 2>&1
    mark cuda-tests $?
  fi
  wait
  mark ab-builds "$(ls /tmp/cagra-ab/a/build-ab/cagra build-ab/cagra 2>/dev/null | wc -l)-of-2"
' "$SRC" "$A_TAR" "$JOBS" "$TESTS_LOG" >"$LOG" 2>&1 </dev/null &
echo "background: building in $SRC (log $LOG; tests $TESTS_LOG)"
