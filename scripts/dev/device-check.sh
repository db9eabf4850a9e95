#!/usr/bin/env bash
# The one script for the GPU machine: configure with the CUDA backend (sm_90), build with
# all cores, run the `cuda` tests, compute-sanitizer memcheck, racecheck, initcheck and synccheck
# on the small GPU cases that reach every kernel path (and memcheck on out-of-memory recovery),
# then the `cpu` tests; every log goes to $OUT and a short summary is printed last (the tool
# returns only the tail of the output). Exit status: 0 when every step passed.
#
# Data: the machine has no ../shared; carry an ignored data/ folder holding data/shared/bigann10k
# (and data/fashion/*.gz for Fashion-MNIST), e.g.
#   mkdir -p data/shared data/fashion && cp -r ../shared/data/bigann10k data/shared/ &&
#   cp /usr/share/datasets/fashion-mnist/*.gz data/fashion/
#
# Environment: OUT (default /tmp/out), BUILD_DIR (default build-device), JOBS (default nproc),
# CUDA_ARCH (default 90), SKIP_CPU=1 skips the cpu tests, SKIP_CTEST=1 the cuda tests, SKIP_PYTHON=1
# the Python package, TOOLS the compute-sanitizer tools (default: all four; "" for none: the
# device time is limited, and racecheck alone takes ~7 minutes), CAGRA_DATA_DIR /
# CAGRA_FASHION_DIR override the data folders.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

OUT=${OUT:-/tmp/out}
BUILD_DIR=${BUILD_DIR:-build-device}
JOBS=${JOBS:-$(nproc)}
CUDA_ARCH=${CUDA_ARCH:-90}
mkdir -p "$OUT"
if [ -z "${CAGRA_FASHION_DIR:-}" ] && [ -f data/fashion/train-images-idx3-ubyte.gz ]; then
  export CAGRA_FASHION_DIR="$PWD/data/fashion"
fi
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)

summary=()
failed=0
# step NAME LOG COMMAND...: runs COMMAND with its output in $OUT/LOG, records ok/FAILED and the time.
step() {
  local name=$1 log=$2 t0=$SECONDS rc
  shift 2
  "$@" >>"$OUT/$log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || failed=1
  summary+=("$(printf '%-24s %-14s %4ds  (%s)' "$name" "$([ $rc -eq 0 ] && echo ok || echo "FAILED rc=$rc")" $((SECONDS - t0)) "$log")")
  return $rc
}

{
  nvidia-smi -L || true
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv || true
  nvcc --version | tail -2
  cmake --version | head -1
  echo "cores: $(nproc)"
} >"$OUT/device.txt" 2>&1

step configure build.log cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" -DCAGRA_BUILD_BENCH=OFF &&
  step build build.log cmake --build "$BUILD_DIR" -j "$JOBS"
built=$?

BIN="$BUILD_DIR/tests/cagra_cuda_tests"
if [ $built -eq 0 ]; then
  # Sequential and verbose: the tests print recall and QPS lines that the summary collects.
  [ "${SKIP_CTEST:-0}" = 1 ] ||
    step "ctest -L cuda" ctest-cuda.log ctest --test-dir "$BUILD_DIR" -L cuda -V --timeout 300
  # compute-sanitizer's four tools over the cases built to reach every kernel path quickly
  # (a whole-suite run under racecheck takes hours); memcheck also over out-of-memory recovery.
  cases=(CudaSearch.SanitizerCase CudaMultiCta.SanitizerCase CudaFilter.SanitizerCase
    CudaDevice.ClearErrors)
  for tool in ${TOOLS-memcheck initcheck synccheck racecheck}; do  # racecheck, the slowest, last
    for c in "${cases[@]}"; do
      step "$tool $c" "$tool.log" timeout 400 "$SANITIZER" --tool "$tool" --error-exitcode 1 \
        "$BIN" --gtest_filter="$c"
    done
  done
  # (the test runs out of memory on purpose: the failed API calls are expected, not reported)
  [[ " ${TOOLS-memcheck} " == *" memcheck "* ]] && step "memcheck out-of-memory" memcheck.log timeout 400 "$SANITIZER" --tool memcheck --error-exitcode 1 \
    --report-api-errors no "$BIN" --gtest_filter='CudaRobustness.OutOfDeviceMemory*'
  # The Python package against the CUDA build: numpy, torch and cupy (all in the device image).
  if [ "${SKIP_PYTHON:-0}" != 1 ] && python3 -c "import nanobind, scikit_build_core" 2>/dev/null; then
    rm -rf /tmp/cagra-site
    step "pip install (cuda)" python.log env CAGRA_CUDA=ON CMAKE_BUILD_PARALLEL_LEVEL="$JOBS" \
      python3 -m pip install -q --no-build-isolation --no-deps --target /tmp/cagra-site \
      --config-settings=build-dir="$BUILD_DIR-python" .
    step "pytest (cuda)" python.log env PYTHONPATH=/tmp/cagra-site CAGRA_CLI="$PWD/$BUILD_DIR/cagra" \
      python3 -m pytest python/tests -q -rs -p no:cacheprovider
  fi
  if [ "${SKIP_CPU:-0}" != 1 ]; then
    step "ctest -L cpu" ctest-cpu.log ctest --test-dir "$BUILD_DIR" -L cpu -j "$JOBS" --timeout 300 \
      --output-on-failure
  fi
fi

{
  echo "== device-check summary =="
  head -1 "$OUT/device.txt"
  printf '%s\n' "${summary[@]}"
  [ -f "$OUT/python.log" ] && grep -h -E "passed|failed" "$OUT/python.log" | tail -1 | sed "s/^/python.log: /"
  for log in ctest-cuda.log ctest-cpu.log; do
    [ -f "$OUT/$log" ] || continue
    grep -h -E "tests passed|tests failed" "$OUT/$log" | sed "s/^/$log: /"
    sed -n '/The following tests FAILED/,$p' "$OUT/$log" | grep -E "^\s+[0-9]+ - " | sed "s/^/$log: /"
  done
  for log in memcheck.log racecheck.log initcheck.log synccheck.log; do
    [ -f "$OUT/$log" ] && grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$OUT/$log" | sed "s/^/$log: /"
  done
  [ -f "$OUT/ctest-cuda.log" ] && grep -h -E "\[ (cuda|bench) +\]" "$OUT/ctest-cuda.log" | sed 's/^[0-9]*: //'
  echo "result: $([ $failed -eq 0 ] && echo PASS || echo FAIL)"
} | tee "$OUT/summary.txt"
exit $failed
