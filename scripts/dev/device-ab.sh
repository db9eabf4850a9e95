#!/usr/bin/env bash
# A/B on the GPU machine: the same search benchmark with the `cagra` CLI of two source trees,
# interleaved (A B A B ...), on one index, so a change's effect on recall and QPS is measured in
# one run on one device. The index is built once by B (this tree) and searched by both: the
# comparison is of the search path only.
#
#   OUT=$OUT bash scripts/dev/device-ab.sh A_TARBALL NAME
#
# A_TARBALL: the other tree as `git archive COMMIT | gzip` (carried, e.g. stage/before-COMMIT.tar.gz);
# NAME: a staged dataset in $DATA_ROOT/NAME (base.u8bin, query.u8bin; gt.ibin is computed on the
# GPU when missing). Points: batch 10K (all queries in one call) at itopk 32/64/128 x width 1/2,
# batch 1 (one query per call) at the default shape (itopk 32 and 64, launching per query and with
# the persistent kernel), at 16 and 64 CTAs launching per query, and at 64 CTAs with the
# persistent kernel. Either side's CLI may take `--persistent on|off` or, older, the flag
# `--persistent` (off without it): each side gets the switch its CLI knows.
# Writes $OUT/ab-NAME-{a,b}.jsonl and prints one table: best QPS of each side per point, B/A.
#
# Environment: OUT (/tmp/out), DATA_ROOT (/tmp/cagra-data), ROUNDS (3), BATCHES (queries a call
# of the large-batch points, "0" = all in one call; e.g. "0 2500"), WIDTHS (1,2), SAMPLINGS
# (--random-samplings LIST; unset: the plan's), SKIP_BATCH1=1 (no batch-1 points), A_COMMIT / B_COMMIT
# (labels in the JSON lines; B_COMMIT defaults to this tree's HEAD when .git is there), FILTER
# (a --filter-selectivity list, e.g. 0.9,0.5: the batch-1 points are then filtered searches at the
# default plan, itopk 32 and 64, instead of the CTA and persistent points), METRIC (l2;
# cosine for minilm-1m: base.fbin and query.fbin are used when there is no base.u8bin), DEGREE (32:
# the index's graph degree), HNSW=1 (then hnswlib's batch 1 on one thread, built on all cores:
# $OUT/ab-NAME-hnswlib.jsonl; carry third_party/include), DELETED (a --deleted-share for every
# point: both sides' CLIs must know --deleted-share), LARGE_FILTER (a --filter-selectivity list
# for the large-batch points, e.g. 1,0.5,0.1).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

A_TAR=${1:?usage: device-ab.sh A_TARBALL NAME}
NAME=${2:?usage: device-ab.sh A_TARBALL NAME}
OUT=${OUT:-/tmp/out}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
ROUNDS=${ROUNDS:-3}
W=/tmp/cagra-ab
mkdir -p "$OUT" "$W/a"
L="$OUT/ab-$NAME.log"
say() { echo "== $* ($(date -u +%H:%M:%S))" | tee -a "$L"; }

say "unpack A ($A_TAR) and build both CLIs"
tar -xzf "$A_TAR" -C "$W/a"
build() {  # build SRC_DIR: configure and build the CLI only
  cmake -S "$1" -B "$1/build-ab" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_TESTS=OFF -DCAGRA_BUILD_BENCH=OFF >/dev/null &&
    cmake --build "$1/build-ab" --target cagra_cli -j 8
}
build "$W/a" >"$OUT/ab-build-a.log" 2>&1 &
pa=$!
build "$PWD" >"$OUT/ab-build-b.log" 2>&1
rb=$?
wait $pa
ra=$?
((ra == 0 && rb == 0)) || { echo "build failed (A rc=$ra, B rc=$rb): $OUT/ab-build-*.log"; tail -20 "$OUT"/ab-build-*.log; exit 1; }
A="$W/a/build-ab/cagra"
B="$PWD/build-ab/cagra"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv | tee -a "$L"

ext=u8bin
[[ -f $DATA/base.u8bin ]] || ext=fbin  # a float set (e.g. minilm-1m, METRIC=cosine)
base="$DATA/base.$ext" queries="$DATA/query.$ext" gt="$DATA/gt.ibin"
if [[ ! -f $gt ]]; then
  say "ground truth (GPU brute force, k 100)"
  "$B" gt "$base" "$queries" -k 100 -o "$gt" --backend cuda 2>&1 | tail -2 | tee -a "$L"
fi
DEGREE=${DEGREE:-32}
idx="$W/$NAME-d$DEGREE.cagra"
say "index (B, GPU, graph degree $DEGREE)"
"$B" build "$base" -o "$idx" --graph-degree "$DEGREE" --intermediate-degree $((2 * DEGREE)) \
  --metric "${METRIC:-l2}" --backend cuda --force 2>&1 | tail -3 | tee -a "$L"

B_COMMIT=${B_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo b)}
A_COMMIT=${A_COMMIT:-a}
COMMON=(--backend cuda --dataset "$NAME")
[[ -n ${DELETED:-} ]] && COMMON+=(--deleted-share "$DELETED")
# The persistent kernel on or off in BIN's syntax: `--persistent on|off`, or the older flag.
persistent() {  # persistent BIN on|off
  if "$1" bench --help 2>&1 | grep -q -- '--persistent on|off'; then
    echo "--persistent $2"
  elif [[ $2 == on ]]; then
    echo "--persistent"
  fi
}
run() {  # run SIDE BIN: one round of every point
  local side=$1 bin=$2 commit
  commit=$([[ $side == a ]] && echo "$A_COMMIT" || echo "$B_COMMIT")
  local on off
  on=$(persistent "$bin" on)
  off=$(persistent "$bin" off)
  local j="$OUT/ab-$NAME-$side.jsonl"
  local b
  for b in ${BATCHES:-0}; do
    CAGRA_COMMIT=$commit "$bin" bench "$idx" "$queries" "$gt" "${COMMON[@]}" --repeat 3 --itopk 32,64,128 \
      --search-width "${WIDTHS:-1,2}" --batch "$b" --json "$j" $SAMPLING_ARGS $LARGE_FILTER_ARGS >>"$L" 2>&1
  done
  [[ ${SKIP_BATCH1:-0} == 1 ]] && return
  if [[ -n ${FILTER:-} ]]; then
    CAGRA_COMMIT=$commit "$bin" bench "$idx" "$queries" "$gt" "${COMMON[@]}" --batch 1 --itopk 32,64 \
      --filter-selectivity "$FILTER" --json "$j" >>"$L" 2>&1
    return
  fi
  CAGRA_COMMIT=$commit "$bin" bench "$idx" "$queries" "$gt" "${COMMON[@]}" --batch 1 $off --itopk 32,64 \
    --json "$j" >>"$L" 2>&1
  CAGRA_COMMIT=$commit "$bin" bench "$idx" "$queries" "$gt" "${COMMON[@]}" --batch 1 $on \
    --itopk 32,64 --json "$j" >>"$L" 2>&1
  CAGRA_COMMIT=$commit "$bin" bench "$idx" "$queries" "$gt" "${COMMON[@]}" --batch 1 $off --itopk 16,32 \
    --search-width 16,64 --json "$j" >>"$L" 2>&1
  CAGRA_COMMIT=$commit "$bin" bench "$idx" "$queries" "$gt" "${COMMON[@]}" --batch 1 $on --itopk 16 \
    --search-width 64 --json "$j" >>"$L" 2>&1
}
# Both sides' CLIs must know --random-samplings when SAMPLINGS is set (A at d4eb4c4 or later).
SAMPLING_ARGS=${SAMPLINGS:+--random-samplings $SAMPLINGS}
LARGE_FILTER_ARGS=${LARGE_FILTER:+--filter-selectivity $LARGE_FILTER}
for r in $(seq 1 "$ROUNDS"); do
  say "round $r: A then B"
  run a "$A"
  run b "$B"
done

python3 - "$OUT/ab-$NAME-a.jsonl" "$OUT/ab-$NAME-b.jsonl" <<'PY' | tee -a "$L"
import json, sys
def load(path):
    best = {}
    for line in open(path):
        r = json.loads(line)
        p = r.get("params", {})
        # A filtered point is matched whatever kernel each side's plan chose ("-"): a side may
        # run the resident kernel where the other launches.
        sel = r.get("selectivity", 1.0)
        pers = p.get("persistent", False) if sel >= 1 else "-"
        key = (r.get("batch", 0), pers, p.get("itopk"), p.get("search_width"),
               p.get("num_random_samplings", 0), sel)
        q = r.get("qps", 0)
        if key not in best or q > best[key][0]:
            best[key] = (q, r.get("recall"))
    return best
a, b = load(sys.argv[1]), load(sys.argv[2])
print(f"{'batch':>6} {'pers':>5} {'itopk':>6} {'width':>6} {'samp':>5} {'select':>7} {'recall A':>9} {'recall B':>9} {'QPS A':>12} {'QPS B':>12} {'B/A':>7}")
for key in sorted(set(a) & set(b), key=str):
    (qa, ra), (qb, rb) = a[key], b[key]
    print(f"{key[0]:>6} {str(key[1]):>5} {key[2]:>6} {key[3]:>6} {key[4]:>5} {key[5]:>7} {ra:>9.4f} {rb:>9.4f} {qa:>12.0f} {qb:>12.0f} {qb / qa:>7.3f}")
PY
if [[ ${HNSW:-0} == 1 ]]; then  # hnswlib's single thread at batch 1, same machine, same run
  say "hnswlib M=16 efC=200 (built on $(nproc) threads), batch 1 on one thread"
  cmake -S . -B build-ab-hnsw -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=OFF -DCAGRA_BUILD_TESTS=OFF \
    -DCAGRA_BUILD_BENCH=ON -DHNSWLIB_INCLUDE_DIR="$PWD/third_party/include" >"$OUT/ab-build-hnsw.log" 2>&1 &&
    cmake --build build-ab-hnsw --target hnswlib_peer -j 8 >>"$OUT/ab-build-hnsw.log" 2>&1 &&
    build-ab-hnsw/hnswlib_peer "$base" "$queries" "$gt" --metric "${METRIC:-l2}" --threads "$(nproc)" \
      --batch 1 --ef "${HNSW_EF:-10,16,24,32,48,64}" --reps 1 --dataset "$NAME" \
      --json "$OUT/ab-$NAME-hnswlib.jsonl" 2>&1 | tee -a "$L" || say "hnswlib failed: $OUT/ab-build-hnsw.log"
fi
say "done"
