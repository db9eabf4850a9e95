#!/usr/bin/env bash
# Several GPUs on a staged 1M set (issue 19; docs/benchmarks.md "Multi-GPU"): builds the bench
# tools for sm_90, computes the exact ground truth on the GPU when the stage has none, then
# bench/multi_gpu.cpp: replicated batch-10K scaling over 1, 2, 4 ... GPUs, and sharded builds and
# searches over 2, 4 ... GPUs against the same shards on one GPU. JSON lines to
# $OUT/multi-gpu-NAME-DEVICE-COMMIT.jsonl, the log to $OUT/multi-gpu.log.
#
# Environment: OUT (/tmp/out), NAME (sift-wall-1m), DATA_ROOT (/tmp/cagra-data), BUILD_DIR
# (build-device), ITOPK (32,64,128), DEGREE (32), CAGRA_COMMIT. NVLink multicast stays off.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export NCCL_NVLS_ENABLE=0
OUT=${OUT:-/tmp/out}
NAME=${NAME:-sift-wall-1m}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
BUILD_DIR=${BUILD_DIR:-build-device}
W=/tmp/cagra-multi
mkdir -p "$OUT" "$W"
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DEVICE_TAG=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')
GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
J="$OUT/multi-gpu-$NAME-${DEVICE_TAG:-gpu}x$GPUS-$CAGRA_COMMIT.jsonl"
L="$OUT/multi-gpu.log"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }
say "$GPUS GPUs: $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)"
nvidia-smi topo -m >>"$L" 2>&1 || true
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_BENCH=ON >"$W/build.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cli multi_gpu_bench >>"$W/build.log" 2>&1 ||
  { say "build failed"; tail -30 "$W/build.log"; exit 1; }
pick() { for f in "$DATA/$1".u8bin "$DATA/$1".fbin; do [ -s "$f" ] && { echo "$f"; return; }; done; }
base=$(pick base) queries=$(pick query) gt="$DATA/gt.ibin"
[[ -n $base && -n $queries ]] || { say "no staged data in $DATA"; exit 1; }
if [[ ! -s $gt ]]; then
  gt="$W/$NAME-gt.ibin"
  [[ -s $gt ]] || { say "exact ground truth on the GPU (k = 100)";
    "$BUILD_DIR/cagra" gt "$base" "$queries" -k 100 -o "$gt" --backend cuda --force 2>&1 | tail -2 | tee -a "$L"; }
fi
say "bench: $base"
"$BUILD_DIR/multi_gpu_bench" "$base" "$queries" "$gt" --dataset "$NAME" --degree "${DEGREE:-32}" \
  --itopk "${ITOPK:-32,64,128}" --json "$J" 2>&1 | tee -a "$L"
say "done: $J"
