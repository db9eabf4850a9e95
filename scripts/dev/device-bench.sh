#!/usr/bin/env bash
# Benchmarks on the GPU machine, after scripts/dev/device-check.sh has built $BUILD_DIR with CUDA:
# Fashion-MNIST (60,000 x 784 u8, 10,000 queries) searched by the CUDA backend, by our CPU backend
# on all host cores, and by hnswlib (M=16, efConstruction=200) on the same cores, in one run.
# Batch 10K (all queries in one call) and batch 1 (one query per call: the CUDA backend at its
# automatic shape and at 4-32 CTAs set by search_width, the resident kernel in both). JSON lines
# ($OUT/fashion-mnist-DEVICE-COMMIT.jsonl) and logs go to $OUT; a QPS-at-recall table is printed last.
#
# Needs (carried in ignored folders): data/fashion/*.gz and third_party/include/hnswlib
# (bash scripts/dev/fetch_hnswlib.sh on the development machine).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
BUILD_DIR=${BUILD_DIR:-build-device}
JOBS=${JOBS:-$(nproc)}
THREADS=${THREADS:-$(nproc)}
F=${CAGRA_FASHION_DIR:-data/fashion}
W=${WORK_DIR:-/tmp/cagra-bench}
mkdir -p "$OUT" "$W"
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
# Result files are named DATASET-DEVICE-COMMIT (bench/results/README.md); DEVICE from nvidia-smi.
DEVICE_TAG=${DEVICE_TAG:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')}
TAG="${DEVICE_TAG:-gpu}-$CAGRA_COMMIT"
J="$OUT/fashion-mnist-$TAG.jsonl"

cmake -S . -B "$BUILD_DIR" -DCAGRA_BUILD_BENCH=ON -DHNSWLIB_INCLUDE_DIR="$PWD/third_party/include" \
  >>"$OUT/bench-build.log" 2>&1 && cmake --build "$BUILD_DIR" -j "$JOBS" >>"$OUT/bench-build.log" 2>&1 ||
  { echo "bench build failed (see bench-build.log)"; exit 1; }
C="$BUILD_DIR/cagra"
base="$F/train-images-idx3-ubyte.gz"
queries="$F/t10k-images-idx3-ubyte.gz"
[ -s "$W/gt.ibin" ] || "$C" gt "$base" "$queries" -k 100 -o "$W/gt.ibin" --threads "$THREADS" \
  >"$OUT/bench-prep.log" 2>&1 || { echo "ground truth failed"; tail "$OUT/bench-prep.log"; exit 1; }
rc=0
for storage in input f32; do
  "$C" build "$base" -o "$W/fashion-$storage.cagra" --graph-degree 32 --intermediate-degree 64 \
    --storage "$storage" --force --threads "$THREADS" >"$OUT/build-$storage.log" 2>&1 || rc=1
  build_s=$(sed -n 's/.*total \([0-9.]*\) s.*/\1/p' "$OUT/build-$storage.log")
  idx="$W/fashion-$storage.cagra"
  common=(--dataset fashion-mnist --json "$J" -k 10 --build-s "$build_s")
  widths=1
  [ "$storage" = input ] && widths=1,2,4
  {
    echo "== $storage storage: cuda, batch 10000"
    "$C" bench "$idx" "$queries" "$W/gt.ibin" --backend cuda --repeat 5 \
      --itopk 10,12,16,24,32,48,64,96,128,256,512 --search-width "$widths" "${common[@]}"
    echo "== $storage storage: cuda, batch 1, automatic shape"
    "$C" bench "$idx" "$queries" "$W/gt.ibin" --backend cuda --batch 1 --itopk 10,16,32,64,128 \
      "${common[@]}"
    echo "== $storage storage: cuda, batch 1, 4-32 CTAs (search_width)"
    "$C" bench "$idx" "$queries" "$W/gt.ibin" --backend cuda --batch 1 --itopk 10,16,32,64 \
      --search-width 4,8,16,32 "${common[@]}"
    echo "== $storage storage: cpu ($THREADS threads), batch 10000"
    "$C" bench "$idx" "$queries" "$W/gt.ibin" --backend cpu --threads "$THREADS" --repeat 3 \
      --itopk 10,12,16,24,32,48,64,128 "${common[@]}"
    echo "== $storage storage: cpu, batch 1"
    "$C" bench "$idx" "$queries" "$W/gt.ibin" --backend cpu --batch 1 --itopk 10,16,32,64 "${common[@]}"
  } >>"$OUT/bench.log" 2>&1 || rc=1
done
{
  echo "== hnswlib ($THREADS threads)"
  "$BUILD_DIR/hnswlib_peer" "$base" "$queries" "$W/gt.ibin" --threads "$THREADS" --batch 0,1 \
    --ef 10,12,16,20,24,32,48,64,96,128 --dataset fashion-mnist --json "$J"
} >>"$OUT/bench.log" 2>&1 || rc=1
grep -hE "^time" "$OUT"/build-*.log
grep -E "^==|itopk|^ +[0-9]+ +[0-9]|ef |built" "$OUT/bench.log" | head -150
echo "bench exit $rc; JSON lines: $(wc -l <"$J") in $J"
exit $rc
