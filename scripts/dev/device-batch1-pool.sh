#!/usr/bin/env bash
# Batch 1 with the initial-node pool against the random initial nodes it replaced, in one process
# per call, interleaved (bench/results/logs/batch1-pool-slices-h200-12b0b25.txt and
# batch1-init-rounds-h200-eec033b.txt): builds the CLI, indexes SIFT-wall-1M (staged with
# scripts/dev/stage.sh) and the synthetic clustered set (drawn here by bench/make_synthetic.py,
# its ground truth on the GPU), then per round and set
#   pool:   cagra bench ... --batch 1 --persistent on --itopk 32,64  (the defaults: the pool)
#   random: ... --itopk 32 --random-samplings 3 --max-iterations 3, and itopk 64 with 4 (the
#           shape the defaults had before the pool: 96 random nodes a CTA)
# and, on SIFT-wall-1M once, more random rounds at 2 and 3 iterations (--random-samplings
# 3,8,16,32). JSON lines and ab.txt in $OUT. (The logs named above came from these commands
# run by hand on the GPU machine; this script collects them and has not itself run there.)
#
#   OUT=$OUT bash scripts/dev/device-batch1-pool.sh
#
# Environment: OUT (/tmp/out), DATA_ROOT (/tmp/cagra-data), ROUNDS (3), COMMIT (the label in the
# JSON lines; default this tree's HEAD where .git is there).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
DATA=${DATA_ROOT:-/tmp/cagra-data}
D=$DATA/sift-wall-1m S=$DATA/synthetic-1m
COMMIT=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
mkdir -p "$OUT" "$S"
[ -f "$D/base.u8bin" ] || { echo "device-batch1-pool: stage sift-wall-1m first" >&2; exit 1; }
[ -s "$S/base.fbin" ] || python3 bench/make_synthetic.py "$S" --n 1000000 --queries 10000 --dim 128 \
  --clusters 1000 --spread 0.15 --rank 8 --seed 1 >"$OUT/synthetic.log" 2>&1 &
cmake -S . -B build-pool -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_TESTS=OFF -DCAGRA_BUILD_BENCH=OFF >"$OUT/build.log" 2>&1 &&
  cmake --build build-pool --target cagra_cli -j "$(nproc)" >>"$OUT/build.log" 2>&1 ||
  { tail -20 "$OUT/build.log"; exit 1; }
wait
C=build-pool/cagra
$C build "$D/base.u8bin" -o /tmp/pool-sift.cagra --graph-degree 32 --intermediate-degree 64 \
  --backend cuda --force >"$OUT/index.log" 2>&1
[ -s "$S/gt.ibin" ] || $C gt "$S/base.fbin" "$S/query.fbin" -k 100 -o "$S/gt.ibin" --backend cuda >>"$OUT/index.log" 2>&1
$C build "$S/base.fbin" -o /tmp/pool-syn.cagra --graph-degree 32 --intermediate-degree 64 \
  --backend cuda --force >>"$OUT/index.log" 2>&1
run() {  # run NAME SIDE ARGS...: one bench call, its rows into ab.txt
  local name=$1 side=$2 idx q gt
  shift 2
  if [ "$name" = sift-wall-1m ]; then idx=/tmp/pool-sift.cagra q=$D/query.u8bin gt=$D/gt.ibin; else
    idx=/tmp/pool-syn.cagra q=$S/query.fbin gt=$S/gt.ibin
  fi
  CAGRA_COMMIT=$COMMIT $C bench "$idx" "$q" "$gt" --backend cuda --batch 1 -k 10 --persistent on \
    --dataset "$name" --json "$OUT/batch1-$side-$name.jsonl" "$@" 2>&1 | grep -E "^(random| +[0-9]+ )" >>"$OUT/ab.txt"
}
for r in $(seq 1 "${ROUNDS:-3}"); do
  for name in synthetic-1m sift-wall-1m; do
    echo "== round $r $name pool (defaults)" >>"$OUT/ab.txt"
    run $name pool --itopk 32,64
    echo "== round $r $name random (3 samplings, 3 iterations at itopk 32, 4 at 64)" >>"$OUT/ab.txt"
    run $name random --itopk 32 --random-samplings 3 --max-iterations 3
    run $name random --itopk 64 --random-samplings 3 --max-iterations 4
  done
done
for it in 2 3; do
  echo "== sift-wall-1m random, max iterations $it" >>"$OUT/ab.txt"
  run sift-wall-1m rounds --itopk 32 --max-iterations $it --random-samplings 3,8,16,32
done
cat "$OUT/ab.txt"
