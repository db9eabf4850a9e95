#!/usr/bin/env bash
# The int8 traversal with the stored rows on the device or left in host memory
# (search_params::stored_rows, `--stored-rows device|host`) on MiniLM-1M, on the GPU machine: the
# CudaHostRows tests, an index of f32 rows and one of f16 rows (degree 64, cosine), then batch-10K
# sweeps with each placement in turn, a process each (ROUNDS rounds), the wall time of a whole
# `cagra search` (load, int8 copy, one 10K-query search) with each, and hnswlib (M=16, efC=200,
# all cores) on the same machine. Written for docs/benchmarks.md, "Stored rows in host memory"
# (its log holds the run's output).
#
#   OUT=$OUT bash scripts/dev/device-host-rows.sh
#
# MiniLM-1M must be staged (docs/dev/gpu-machine.md; `scripts/dataset-text.sh embed` on the
# machine makes base.fbin / query.fbin / gt.ibin from the staged text, ~170 s); carry third_party/
# (hnswlib) and data/shared (bigann10k, for the tests). Environment: OUT (/tmp/out), BUILD_DIR
# (build-device), ROUNDS (3), SKIP_HNSW=1.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

OUT=${OUT:-/tmp/out}
BUILD_DIR=${BUILD_DIR:-build-device}
ROUNDS=${ROUNDS:-3}
D=${DATA_ROOT:-/tmp/cagra-data}/minilm-1m
W=/tmp/cagra-host-rows
C="$BUILD_DIR/cagra"
mkdir -p "$OUT" "$W"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_BENCH=ON -DHNSWLIB_INCLUDE_DIR="$PWD/third_party/include" \
  >"$W/build.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cli cagra_cuda_tests hnswlib_peer \
    >>"$W/build.log" 2>&1 || { echo "build failed"; tail -30 "$W/build.log"; exit 1; }
CAGRA_DATA_DIR=${CAGRA_DATA_DIR:-$PWD/data/shared} "$BUILD_DIR/tests/cagra_cuda_tests" \
  --gtest_filter='CudaHostRows.*' 2>&1 | grep -E "OK \]|FAILED|taken" | tee "$OUT/host-rows-tests.txt"
[[ -s $D/base.fbin && -s $D/gt.ibin ]] ||
  CAGRA_CLI="$PWD/$C" bash scripts/dataset-text.sh embed >"$OUT/embed.log" 2>&1 ||
  { echo "embed failed"; tail -20 "$OUT/embed.log"; exit 1; }
nvidia-smi --query-gpu=name,pcie.link.gen.current,pcie.link.width.current --format=csv

for storage in f32 f16; do
  "$C" build "$D/base.fbin" -o "$W/$storage.cagra" --backend cuda --metric cosine \
    --storage "$storage" --force 2>&1 | grep -E "^time"
  for r in $(seq "$ROUNDS"); do
    for where in device host; do
      echo "== $storage round $r stored rows $where"
      "$C" bench "$W/$storage.cagra" "$D/query.fbin" "$D/gt.ibin" --backend cuda --traversal int8 \
        --stored-rows "$where" --itopk 32,64,128 --repeat 3 --dataset minilm-1m \
        --json "$OUT/minilm-1m-host-rows.jsonl" 2>&1 | grep -E "^ +[0-9]"
    done
  done
done 2>&1 | tee "$OUT/minilm-1m-host-rows.log"

for where in device host device host; do
  t0=$EPOCHREALTIME
  "$C" search "$W/f32.cagra" "$D/query.fbin" -k 10 -o "$W/out.ibin" --force --backend cuda \
    --traversal int8 --stored-rows "$where" >"$W/search.log" 2>&1
  t1=$EPOCHREALTIME
  python3 -c "print('search wall (load + first search of 10K) stored rows $where: %.3f s' % ($t1 - $t0))"
  grep -E "^time" "$W/search.log"
done 2>&1 | tee -a "$OUT/minilm-1m-host-rows.log"

[ "${SKIP_HNSW:-0}" = 1 ] ||
  "$BUILD_DIR/hnswlib_peer" "$D/base.fbin" "$D/query.fbin" "$D/gt.ibin" --metric cosine \
    --threads "$(nproc)" --batch 0 --ef 10,16,24,32,48,64,96,128,192 --reps 2 --dataset minilm-1m \
    --json "$OUT/minilm-1m-host-rows.jsonl" 2>&1 | tee -a "$OUT/minilm-1m-host-rows.log"
