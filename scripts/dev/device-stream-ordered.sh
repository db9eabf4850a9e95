#!/usr/bin/env bash
# Stream-ordered device searches (resources::stream_ordered, docs/cuda.md "Stream-ordered
# searches") on the GPU machine: compute-sanitizer memcheck over CudaStreamOrdered.*, then
# bench/batch_calls on one set: per batch size, a host-memory call, a waiting device-memory call
# (median of --repeat) and stream-ordered device calls back to back (10 x --repeat calls, one
# synchronize). Builds batch_calls into BUILD_DIR (made by scripts/dev/device-check.sh) and the
# index (graph degree 32) into /tmp/cagra-stream-ordered.
#
# Data: NAME=bigann10k reads data/shared/bigann10k (carried); any other NAME reads the staged
# $DATA_ROOT/NAME (base, query, gt.ibin; scripts/dev/stage.sh).
# Environment: OUT (/tmp/out), NAME (bigann10k), BUILD_DIR (build-device), BATCHES
# (1,10,100,1000,10000), ITOPK (32,64), REPEAT (9), MEMCHECK (1), CAGRA_COMMIT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
NAME=${NAME:-bigann10k}
BUILD_DIR=${BUILD_DIR:-build-device}
W=/tmp/cagra-stream-ordered
mkdir -p "$OUT" "$W"
COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DEVICE_TAG=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')
L="$OUT/stream-ordered.log"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }
cmake -S . -B "$BUILD_DIR" -DCAGRA_BUILD_BENCH=ON >>"$L" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target batch_calls cagra_cli cagra_cuda_tests \
    >>"$L" 2>&1 || { say "build failed (see $L)"; exit 1; }
if [[ ${MEMCHECK:-1} == 1 ]]; then
  SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  say "memcheck CudaStreamOrdered.*"
  export CAGRA_DATA_DIR=${CAGRA_DATA_DIR:-$PWD/data/shared}
  "$SANITIZER" --tool memcheck --error-exitcode 1 "$BUILD_DIR/tests/cagra_cuda_tests" \
    --gtest_filter='CudaStreamOrdered.*' >>"$L" 2>&1
  say "memcheck rc=$? ($(grep -h 'ERROR SUMMARY' "$L" | tail -1))"
fi
if [[ $NAME == bigann10k ]]; then
  D=data/shared/bigann10k base=$D/base.u8bin queries=$D/query.u8bin gt=$D/groundtruth.ibin
else
  D=${DATA_ROOT:-/tmp/cagra-data}/$NAME
  base=$(ls "$D"/base.* | head -1) queries=$(ls "$D"/query.* | head -1) gt=$D/gt.ibin
fi
idx="$W/$NAME.cagra"
[[ -s $idx ]] || "$BUILD_DIR/cagra" build "$base" -o "$idx" --graph-degree 32 \
  --intermediate-degree 64 --backend cuda --force 2>&1 | tail -1 | tee -a "$L"
say "batch_calls $NAME"
"$BUILD_DIR/batch_calls" "$idx" "$queries" "$gt" --batches "${BATCHES:-1,10,100,1000,10000}" \
  --itopk "${ITOPK:-32,64}" --max-iterations 0 --repeat "${REPEAT:-9}" --dataset "$NAME" \
  --json "$OUT/stream-ordered-$NAME-${DEVICE_TAG:-gpu}-$COMMIT.jsonl" 2>&1 | tee -a "$L"
