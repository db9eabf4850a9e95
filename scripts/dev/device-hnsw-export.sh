#!/usr/bin/env bash
# "Build with CAGRA, serve with hnswlib" on a staged 1M set (default SIFT-wall-1M) on the GPU
# machine: cagra_hnsw_export_bench builds the CAGRA index on the GPU, exports it in hnswlib's
# format, loads it with hnswlib and sweeps ef; then builds hnswlib's own graph (M 16,
# efConstruction 200, all cores) and sweeps the same ef (docs/hnswlib.md). Carry third_party/
# (scripts/dev/fetch_hnswlib.sh). JSON lines to $OUT/hnsw-export-NAME-DEVICE-COMMIT.jsonl.
#
# Environment: OUT (/tmp/out), NAME (sift-wall-1m), METRIC (l2), DATA_ROOT (/tmp/cagra-data),
# BUILD_DIR (build-device), DEGREE (32), EF (10,20,40,80,160,320), CAGRA_COMMIT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
NAME=${NAME:-sift-wall-1m}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
BUILD_DIR=${BUILD_DIR:-build-device}
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DEVICE_TAG=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')
mkdir -p "$OUT"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DHNSWLIB_INCLUDE_DIR="$PWD/third_party/include" >"$OUT/hnsw-build.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_hnsw_export_bench >>"$OUT/hnsw-build.log" 2>&1 ||
  { tail -30 "$OUT/hnsw-build.log"; exit 1; }
pick() { for f in "$DATA/$1".u8bin "$DATA/$1".fbin; do [ -s "$f" ] && { echo "$f"; return; }; done; }
base=$(pick base) queries=$(pick query)
[[ -n $base && -n $queries && -s $DATA/gt.ibin ]] || { echo "no staged data in $DATA"; exit 1; }
"$BUILD_DIR/cagra_hnsw_export_bench" "$base" "$queries" "$DATA/gt.ibin" --metric "${METRIC:-l2}" \
  --graph-degree "${DEGREE:-32}" --ef "${EF:-10,20,40,80,160,320}" --dataset "$NAME" \
  --export /tmp/cagra-export.hnsw --json "$OUT/hnsw-export-$NAME-${DEVICE_TAG:-gpu}-$CAGRA_COMMIT.jsonl" 2>&1 |
  tee "$OUT/hnsw-export-$NAME.log"
