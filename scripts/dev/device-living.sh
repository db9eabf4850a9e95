#!/usr/bin/env bash
# The living index (extend / remove / compact, issue 14) on the GPU machine, in one call or in
# steps: build with the CUDA backend (sm_90), every `cuda` test, compute-sanitizer memcheck over
# the living-index cases, then bench/living_index on a staged 1M set (scripts/dev/stage.sh;
# default SIFT-wall-1M): half built + half extended in chunks of 10K against a full build, and
# 10% / 50% removed before and after compaction against a fresh build. Logs and the JSON lines
# ($OUT/living-NAME-DEVICE-COMMIT.jsonl) go to $OUT; a summary is printed last.
#
# Carry data/shared (bigann10k, for the tests) and data/fashion (Fashion-MNIST's .gz files). Environment: OUT (/tmp/out), BUILD_DIR
# (build-device), NAME (sift-wall-1m), METRIC (l2; minilm-1m: cosine), DATA_ROOT (/tmp/cagra-data), STEPS (build,tests,memcheck,
# bench), DEGREE (32), CHUNK (10000), BACKEND (cuda; cpu runs the bench on the CPU backend with all
# cores, JSON tagged cpuN), LIVING_ARGS (more bench options, e.g. "--remove none" or "--no-extend
# --remove 0.5" to split the CPU run over calls), CAGRA_COMMIT (pass it from the repository).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
BUILD_DIR=${BUILD_DIR:-build-device}
NAME=${NAME:-sift-wall-1m}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
STEPS=,${STEPS:-build,tests,memcheck,bench},
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DEVICE_TAG=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')
BACKEND=${BACKEND:-cuda}
[ "$BACKEND" = cuda ] || DEVICE_TAG=cpu$(nproc)
mkdir -p "$OUT"
if [ -z "${CAGRA_FASHION_DIR:-}" ] && [ -f data/fashion/train-images-idx3-ubyte.gz ]; then
  export CAGRA_FASHION_DIR="$PWD/data/fashion"  # carried (docs/dev/gpu-machine.md)
fi
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
summary=()
step() {  # step NAME LOG COMMAND...
  local name=$1 log=$2 t0=$SECONDS rc
  shift 2
  "$@" >>"$OUT/$log" 2>&1
  rc=$?
  summary+=("$(printf '%-10s %-14s %4ds  (%s)' "$name" "$([ $rc -eq 0 ] && echo ok || echo "FAILED rc=$rc")" $((SECONDS - t0)) "$log")")
  return $rc
}
has() { [[ $STEPS == *",$1,"* ]]; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$OUT/device.txt" 2>&1

if has build; then
  step configure build.log cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCAGRA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
  step build build.log cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cuda_tests \
    living_index cagra_cli
fi
if has tests; then
  step ctest-cuda cuda-tests.log ctest --test-dir "$BUILD_DIR" -L cuda --output-on-failure
fi
if has memcheck; then
  step memcheck memcheck.log "$SANITIZER" --tool memcheck --error-exitcode 3 \
    "$BUILD_DIR/tests/cagra_cuda_tests" --gtest_filter='CudaLiving.*'
fi
if has bench; then
  base=$(ls "$DATA"/base.u8bin "$DATA"/base.fbin 2>/dev/null | head -1)
  if [[ -n $base && -s $base ]]; then
    step bench "living-$NAME.log" "$BUILD_DIR/living_index" "$base" \
      "$DATA/query.${base##*.}" "$DATA/gt.ibin" --backend "$BACKEND" --degree "${DEGREE:-32}" \
      --metric "${METRIC:-l2}" \
      --chunk "${CHUNK:-10000}" --dataset "$NAME" ${LIVING_ARGS:-} \
      --json "$OUT/living-$NAME-${DEVICE_TAG:-gpu}-$CAGRA_COMMIT.jsonl"
  else
    summary+=("bench      skipped: no staged data in $DATA")
  fi
fi
for f in cuda-tests.log memcheck.log "living-$NAME.log"; do
  [ -f "$OUT/$f" ] && { echo "== $f (tail)"; tail -12 "$OUT/$f"; }
done
printf '%s\n' "${summary[@]}"
