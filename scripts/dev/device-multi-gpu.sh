#!/usr/bin/env bash
# Several GPUs on a staged 1M set (issue 19; docs/benchmarks.md "Multi-GPU"): builds the bench
# tools for sm_90, computes the exact ground truth on the GPU when the stage has none, then
# bench/multi_gpu.cpp: replicated batch-10K scaling over 1, 2, 4 ... GPUs, and sharded builds and
# searches over 2, 4 ... GPUs against the same shards on one GPU. JSON lines to
# $OUT/multi-gpu-NAME-DEVICE-COMMIT.jsonl, the log to $OUT/multi-gpu.log.
#
# NAME=synthetic-100m (any synthetic-*) makes a SYNTHETIC clustered 96-d set of ROWS rows here
# (bench/make_synthetic_large.py); BENCH_ARGS passes options to the bench (e.g. "--no-single
# --shards 4 --no-one-gpu" for a set that does not fit one GPU). Device memory in use is sampled
# during the bench and its peak per device logged.
#
# Environment: OUT (/tmp/out), NAME (sift-wall-1m), DATA_ROOT (/tmp/cagra-data), BUILD_DIR
# (build-device), ITOPK (32,64,128), DEGREE (32), GT_K (100), ROWS, BENCH_ARGS, CAGRA_COMMIT,
# DATA_ONLY=1 (build, make the data and its ground truth, then stop: a large set's bench then
# fits in the next call of a warm machine).
# NVLink multicast stays off.
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
if [[ $NAME == synthetic-* && ! -s $DATA/base.fbin ]]; then
  # SYNTHETIC clustered 96-d set of ROWS rows (bench/make_synthetic_large.py, model SYN_MODEL:
  # manifold by default; the results of 899c63f used the island mixture, SYN_MODEL=patches), made
  # here.
  say "making $NAME: ${ROWS:-100000000} x 96 in $DATA"
  python3 bench/make_synthetic_large.py "$DATA" --model "${SYN_MODEL:-manifold}" \
    --n "${ROWS:-100000000}" --queries 10000 --dim 96 \
    2>&1 | tail -1 | tee -a "$L"
fi
pick() { for f in "$DATA/$1".u8bin "$DATA/$1".fbin; do [ -s "$f" ] && { echo "$f"; return; }; done; }
base=$(pick base) queries=$(pick query) gt="$DATA/gt.ibin"
[[ -n $base && -n $queries ]] || { say "no staged data in $DATA"; exit 1; }
if [[ ! -s $gt ]]; then
  gt="$W/$NAME-gt.ibin"
  [[ -s $gt ]] || { say "exact ground truth on the GPU (k = ${GT_K:-100})";
    "$BUILD_DIR/cagra" gt "$base" "$queries" -k "${GT_K:-100}" -o "$gt" --backend cuda --force 2>&1 | tail -2 | tee -a "$L"; }
fi
[[ ${DATA_ONLY:-0} == 1 ]] && { say "data ready (DATA_ONLY=1): $base, $gt"; exit 0; }
say "bench: $base"
# Device memory in use, sampled every 0.5 s while the bench runs (its peak goes to the log).
nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -lms 500 >"$W/gpu-mem.csv" 2>/dev/null &
smi=$!
"$BUILD_DIR/multi_gpu_bench" "$base" "$queries" "$gt" --dataset "$NAME" --degree "${DEGREE:-32}" \
  --itopk "${ITOPK:-32,64,128}" --json "$J" ${BENCH_ARGS:-} 2>&1 | tee -a "$L"
kill $smi 2>/dev/null
awk -F', ' '$2 > m[$1] {m[$1] = $2} END {for (d in m) printf "device %s: peak %d MiB in use\n", d, m[d]}' \
  "$W/gpu-mem.csv" | sort | tee -a "$L"
say "done: $J"
