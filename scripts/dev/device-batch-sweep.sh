#!/usr/bin/env bash
# Default parameters against the best swept point at small batches (issue 18, "fast by
# default"), on a staged 1M set: the CLI built for sm_90, the index built on the GPU (degree 32),
# then `cagra bench` at batch 1 (the first 1,000 queries), 10 and 100 (all queries, in calls of
# that many) over itopk x search width (search width sets the multi-CTA kernel's CTA count), and
# batch 10K at its defaults. JSON lines to $OUT/batch-sweep-NAME-DEVICE-COMMIT.jsonl, the log
# to $OUT/batch-sweep.log.
#
# NAME=synthetic-1m makes the SYNTHETIC clustered set here when DATA_ROOT has none.
#
# Environment: OUT (/tmp/out), NAME (sift-wall-1m), METRIC (l2), DATA_ROOT (/tmp/cagra-data),
# BUILD_DIR (build-device), ITOPK (16,32,64,128), WIDTH (1,2,4,8,16,32,64), CAGRA_COMMIT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
NAME=${NAME:-sift-wall-1m}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
BUILD_DIR=${BUILD_DIR:-build-device}
ITOPK=${ITOPK:-16,32,64,128}
WIDTH=${WIDTH:-1,2,4,8,16,32,64}
W=/tmp/cagra-batch
mkdir -p "$OUT" "$W"
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DEVICE_TAG=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')
J="$OUT/batch-sweep-$NAME-${DEVICE_TAG:-gpu}-$CAGRA_COMMIT.jsonl"
L="$OUT/batch-sweep.log"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 >"$W/build.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cli >>"$W/build.log" 2>&1 ||
  { say "build failed"; tail -30 "$W/build.log"; exit 1; }
C="$BUILD_DIR/cagra"
if [[ $NAME == synthetic-1m && ! -s $DATA/gt.ibin ]]; then
  # The SYNTHETIC clustered set (bench/make_synthetic.py: 1M x 128 f32, 1,000 clusters, seed 1),
  # made here with its exact ground truth: the set where d random initial nodes per CTA at 64
  # CTAs lost recall (issue 18).
  say "making $NAME in $DATA"
  mkdir -p "$DATA"
  python3 bench/make_synthetic.py "$DATA" --n 1000000 --queries 10000 --dim 128 --clusters 1000 \
    --seed 1 2>&1 | tail -1 | tee -a "$L"
  "$C" gt "$DATA/base.fbin" "$DATA/query.fbin" -k 100 -o "$DATA/gt.ibin" --backend cuda --force \
    2>&1 | tail -1 | tee -a "$L"
fi
pick() { for f in "$DATA/$1".u8bin "$DATA/$1".fbin; do [ -s "$f" ] && { echo "$f"; return; }; done; }
base=$(pick base) queries=$(pick query) gt="$DATA/gt.ibin"
ext=${base##*.}
[[ -n $base && -s $gt ]] || { say "no staged data in $DATA"; exit 1; }
idx="$W/$NAME.cagra"
[[ -s $idx ]] || "$C" build "$base" -o "$idx" --metric "${METRIC:-l2}" --graph-degree 32 \
  --intermediate-degree 64 --backend cuda --force 2>&1 | tail -1 | tee -a "$L"
python3 scripts/dev/first_rows.py "$queries" "$gt" "$W"
bench() { "$C" bench "$idx" "$@" --backend cuda --dataset "$NAME" --json "$J" 2>&1 | tee -a "$L" | grep -v '^plan'; }
say "batch 1 (1,000 queries): defaults, then itopk $ITOPK x width $WIDTH"
bench "$W/q1k.$ext" "$W/gt1k.ibin" --batch 1 --itopk "$ITOPK" --explain
bench "$W/q1k.$ext" "$W/gt1k.ibin" --batch 1 --itopk "$ITOPK" --search-width "$WIDTH"
for b in 10 100; do
  say "batch $b: defaults, then itopk $ITOPK x width $WIDTH"
  bench "$queries" "$gt" --batch $b --itopk "$ITOPK" --repeat 2 --explain
  bench "$queries" "$gt" --batch $b --itopk "$ITOPK" --search-width "$WIDTH" --repeat 2
done
say "batch 10K: itopk $ITOPK x width 1,2,4"
bench "$queries" "$gt" --itopk "$ITOPK" --search-width 1,2,4 --repeat 3
say "done: $J"
