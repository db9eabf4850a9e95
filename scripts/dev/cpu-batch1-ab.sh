#!/usr/bin/env bash
# Batch-1 CPU search of two trees, interleaved round by round on one machine: a commit (A, from
# `git archive`) against this working tree (B), each built CPU-only here. For each metric in
# METRICS an index is built once by B (CPU, degree 32 from 64); then every round runs, for A and B
# in turn, one walk on one thread (itopk WALK_ITOPK) and the latency path (`--algo multi`) on
# WALKERS threads (itopk MULTI_ITOPK). Under cosine the queries are converted and normalized on
# every call: the path that the teams of e5bf82f fixed. Each point is the best of REPEAT passes over
# all queries. The log goes to stdout.
#
#   A=<commit> BASE=base QUERIES=queries [OUT=dir] [METRICS="l2 cosine"] [ROUNDS=2] [REPEAT=2]
#     [WALKERS=$(nproc)] [WALK_ITOPK=16,32,64,128] [MULTI_ITOPK=16,64,128] \
#     bash scripts/dev/cpu-batch1-ab.sh
#
# BASE and QUERIES are any files `cagra` reads (e.g. Fashion-MNIST's train-images-idx3-ubyte.gz
# and t10k-images-idx3-ubyte.gz); the exact ground truth of each metric is computed here by B.
# Used for bench/results/logs/team-size-ab-bigann10k-cosine-cpu16.txt and
# cpu-batch1-ab-fashion-cpu16-a1b02db.txt (16-core Xeon of an H200 machine).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
: "${A:?A=<commit> to compare against}" "${BASE:?}" "${QUERIES:?}"
OUT=${OUT:-/tmp/cpu-batch1-ab}
METRICS=${METRICS:-l2 cosine}
ROUNDS=${ROUNDS:-2}
REPEAT=${REPEAT:-2}
WALKERS=${WALKERS:-$(nproc)}
WALK_ITOPK=${WALK_ITOPK:-16,32,64,128}
MULTI_ITOPK=${MULTI_ITOPK:-16,64,128}
mkdir -p "$OUT/a"
flags=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=OFF -DCAGRA_BUILD_TESTS=OFF)
git archive "$A" | tar -x -C "$OUT/a"
(cd "$OUT/a" && cmake -S . -B build "${flags[@]}" >/dev/null && ninja -C build cagra_cli >/dev/null) &
cmake -S . -B "$OUT/b" "${flags[@]}" >/dev/null && ninja -C "$OUT/b" cagra_cli >/dev/null
wait
cli_a=$OUT/a/build/cagra cli_b=$OUT/b/cagra
echo "a = $(git rev-parse --short "$A"), b = this tree ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' + changes'));$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(nproc) threads"
for m in $METRICS; do
  "$cli_b" gt "$BASE" "$QUERIES" -k 100 -o "$OUT/gt-$m.ibin" --metric "$m" --backend cpu --force 2>/dev/null | tail -1
  "$cli_b" build "$BASE" -o "$OUT/$m.cagra" --metric "$m" --graph-degree 32 --intermediate-degree 64 \
    --backend cpu --force 2>/dev/null | tail -1
done
points() { grep -E '^ +[0-9]' || true; }
for r in $(seq "$ROUNDS"); do
  for side in a b; do
    cli=$cli_a
    [ "$side" = b ] && cli=$cli_b
    for m in $METRICS; do
      echo "== $side round $r, $m: one walk, one thread"
      "$cli" bench "$OUT/$m.cagra" "$QUERIES" "$OUT/gt-$m.ibin" --backend cpu --batch 1 --threads 1 \
        --itopk "$WALK_ITOPK" --repeat "$REPEAT" 2>/dev/null | points
      echo "== $side round $r, $m: latency path, $WALKERS threads"
      "$cli" bench "$OUT/$m.cagra" "$QUERIES" "$OUT/gt-$m.ibin" --backend cpu --batch 1 \
        --threads "$WALKERS" --algo multi --itopk "$MULTI_ITOPK" --repeat "$REPEAT" 2>/dev/null | points
    done
  done
done
