#!/usr/bin/env bash
# Two CLIs' CPU search of one index, interleaved round by round, with hnswlib in the same run: batch
# 1 (one thread, every query a call) and batch 10K (THREADS threads), each point the best of
# REPEAT passes. The index is built once by B (CPU, THREADS threads) unless INDEX names one. JSON
# lines: $OUT/cpu-search-ab-{a,b,hnswlib}.jsonl (system names as `cagra bench` writes them; the
# side is in the file name), the log on stdout.
#
#   A_CLI=... B_CLI=... HNSWLIB=... BASE=base.u8bin QUERIES=query.u8bin GT=gt.ibin \
#     OUT=dir [THREADS=16] [ROUNDS=3] [REPEAT=3] [ITOPK=16,24,32,48,64] [INDEX=file] \
#     [HNSW_EF=16,24,32,48,64,96] bash scripts/dev/cpu-search-ab.sh
set -euo pipefail
: "${A_CLI:?}" "${B_CLI:?}" "${BASE:?}" "${QUERIES:?}" "${GT:?}" "${OUT:?}"
THREADS=${THREADS:-$(nproc)}
ROUNDS=${ROUNDS:-3}
REPEAT=${REPEAT:-3}
ITOPK=${ITOPK:-16,24,32,48,64}
mkdir -p "$OUT"
idx=${INDEX:-$OUT/cpu-search-ab.cagra}
if [ -z "${INDEX:-}" ]; then
  "$B_CLI" build "$BASE" -o "$idx" --graph-degree 32 --intermediate-degree 64 --backend cpu \
    --threads "$THREADS" --force | grep -E "^time"
fi
echo "cpu: $(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2), $(nproc) threads; index $idx"
for r in $(seq "$ROUNDS"); do
  for side in a b; do
    cli=$A_CLI; [ "$side" = b ] && cli=$B_CLI
    for batch in 1 0; do
      echo "== round $r side $side batch $batch"
      "$cli" bench "$idx" "$QUERIES" "$GT" --backend cpu --batch "$batch" --threads "$THREADS" \
        --itopk "$ITOPK" --repeat "$REPEAT" --dataset "$(basename "$(dirname "$BASE")")" \
        --json "$OUT/cpu-search-ab-$side.jsonl" | tail -n +5
    done
  done
done
if [ -n "${HNSWLIB:-}" ]; then
  echo "== hnswlib"
  "$HNSWLIB" "$BASE" "$QUERIES" "$GT" --threads "$THREADS" --batch 0,1 --reps "$REPEAT" \
    --ef "${HNSW_EF:-16,24,32,48,64,96}" --dataset "$(basename "$(dirname "$BASE")")" \
    --json "$OUT/cpu-search-ab-hnswlib.jsonl"
fi
