#!/usr/bin/env bash
# Filtered search on a staged 1M set (scripts/dev/stage.sh; default SIFT-wall-1M) on the GPU
# machine: build the index (GPU, graph degree 32), the unfiltered ground truth (GPU brute force),
# then `cagra bench --filter-selectivity` at batch 10K (itopk swept; each selectivity gets a
# random allowed subset and its exact filtered ground truth from the exact path) and at batch 1
# (the first 1,000 queries); then hnswlib (bench/hnswlib_peer: M 16, efConstruction 200, all
# cores) with its filter functor on the same allowed subsets (same shares and seed) and their
# exact filtered ground truth, batch 10K on all cores. JSON lines to
# $OUT/filter-NAME-DEVICE-COMMIT.jsonl, the log to $OUT/filter-bench.log. Carry third_party/
# (scripts/dev/fetch_hnswlib.sh); SKIP_HNSWLIB=1 leaves hnswlib out, SKIP_CAGRA=1 runs hnswlib only
# (two calls for a set whose hnswlib run alone nears a call's time limit).
#
# Environment: OUT (/tmp/out), NAME (sift-wall-1m), METRIC (l2; minilm-1m: cosine), DATA_ROOT (/tmp/cagra-data), BUILD_DIR
# (build-device), SELECT (1,0.9,0.5,0.1,0.01,0.001), ITOPK (32,64,128,256).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
NAME=${NAME:-sift-wall-1m}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
BUILD_DIR=${BUILD_DIR:-build-device}
SELECT=${SELECT:-1,0.9,0.5,0.1,0.01,0.001}
ITOPK=${ITOPK:-32,64,128,256}
W=/tmp/cagra-filter
mkdir -p "$OUT" "$W"
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DEVICE_TAG=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')
J="$OUT/filter-$NAME-${DEVICE_TAG:-gpu}-$CAGRA_COMMIT.jsonl"
L="$OUT/filter-bench.log"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }

say "configure + build ($BUILD_DIR: the CLI and the hnswlib peer)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_BENCH=ON \
  -DHNSWLIB_INCLUDE_DIR="$PWD/third_party/include" >"$W/build.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cli >>"$W/build.log" 2>&1 ||
  { say "build failed"; tail -30 "$W/build.log"; exit 1; }
cmake --build "$BUILD_DIR" -j "$(nproc)" --target hnswlib_peer >>"$W/build.log" 2>&1 ||
  say "hnswlib_peer not built (third_party/include/hnswlib carried?)"
C="$BUILD_DIR/cagra"
METRIC=${METRIC:-l2}
pick() { for f in "$DATA/$1".u8bin "$DATA/$1".fbin; do [ -s "$f" ] && { echo "$f"; return; }; done; }
base=$(pick base) queries=$(pick query) gt="$DATA/gt.ibin"
ext=${base##*.}
[[ -s $base && -s $queries ]] || { say "no staged data in $DATA"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee -a "$L"
if [[ ! -s $gt ]]; then
  say "ground truth (GPU brute force, k 100)"
  "$C" gt "$base" "$queries" -k 100 -o "$gt" --metric "$METRIC" --backend cuda --force 2>&1 | tail -1 | tee -a "$L"
fi
idx="$W/$NAME.cagra"
if [[ ! -s $idx ]]; then
  say "index (GPU, graph degree 32)"
  "$C" build "$base" -o "$idx" --metric "$METRIC" --graph-degree 32 --intermediate-degree 64 --backend cuda --force 2>&1 |
    tail -2 | tee -a "$L"
fi
if [[ ${SKIP_CAGRA:-0} != 1 ]]; then
say "batch 10K: selectivity $SELECT, itopk $ITOPK"
"$C" bench "$idx" "$queries" "$gt" --backend cuda --repeat 3 --itopk "$ITOPK" \
  --filter-selectivity "$SELECT" --dataset "$NAME" --json "$J" --explain 2>&1 | tee -a "$L" | grep -v "^plan"
# Batch 1 on the first 1,000 queries (and their ground truth rows).
python3 scripts/dev/first_rows.py "$queries" "$gt" "$W"
say "batch 1 (1,000 queries): selectivity $SELECT, itopk 32,64"
"$C" bench "$idx" "$W/q1k.$ext" "$W/gt1k.ibin" --backend cuda --batch 1 --itopk 32,64 \
  --filter-selectivity "$SELECT" --dataset "$NAME" --json "$J" 2>&1 | tee -a "$L"
fi
if [[ ${SKIP_HNSWLIB:-0} != 1 && -x $BUILD_DIR/hnswlib_peer ]]; then
  say "hnswlib with its filter functor, batch 10K, $(nproc) threads: selectivity $SELECT"
  "$BUILD_DIR/hnswlib_peer" "$base" "$queries" "$gt" --metric "$METRIC" -k 10 --ef 10,20,40,80,160,320 --reps 1 \
    --batch 0 --dataset "$NAME" --json "$J" --save-index "$W/hnsw.bin" \
    --filter-selectivity "$SELECT" 2>&1 | tee -a "$L"
fi
say "done: $J"
