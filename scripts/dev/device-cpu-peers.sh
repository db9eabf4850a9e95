#!/usr/bin/env bash
# The CPU systems on one host, same run: our CPU backend (index built on the CPU), hnswlib (M=16,
# efConstruction=200) and faiss (HNSW-Flat and HNSW over one-byte rows, bench/faiss_peer.py), batch
# 10K on THREADS threads and batch 1 on one thread, over a staged data set. Builds a CPU-only CLI
# into $BUILD_DIR unless it is there. JSON lines to $OUT/NAME-cpuTHREADS-COMMIT.jsonl, the
# QPS-at-recall table last.
#
#   OUT=$OUT CAGRA_COMMIT=<commit> bash scripts/dev/device-cpu-peers.sh NAME [METRIC]
#
# NAME is a set staged by scripts/dev/stage.sh into $DATA_ROOT/NAME (base.*, query.*, gt.ibin).
# faiss comes from python3 if it imports it, else from the wheel carried in stage/wheels/
# (unpacked into /tmp/faiss-pkgs; the machine has no network). Carry third_party/ (hnswlib).
# Environment: BUILD_DIR (/tmp/build-cpu), THREADS (all), ITOPK, EF, FAISS_INDEX (hnsw,hnsw-sq8),
# FAISS_BATCH1 (2000 queries at batch 1), REPS (3 for ours, 2 for the peers' sweeps), TRAVERSAL
# (ours: exact for byte rows, exact,int8 for float rows), SAMPLINGS (ours' --random-samplings
# list: 0 = automatic), SKIP (a comma list of systems left out: ours, hnswlib, faiss), DEGREE
# (our graph degree, 32; the intermediate degree twice it), STEPS=build (build our index only, so
# that a later call with KEEP_INDEX=1 searches it: a warm machine keeps /tmp), BATCHES (0,1: the
# batches run), WALKERS (a comma list of thread counts: ours at batch 1 also with --algo multi,
# each query walked on that many threads; src/cpu/parallel_walk.cpp).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NAME=${1:?usage: device-cpu-peers.sh NAME [METRIC]}
METRIC=${2:-l2}
OUT=${OUT:-/tmp/out}
BUILD_DIR=${BUILD_DIR:-/tmp/build-cpu}
THREADS=${THREADS:-$(nproc)}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
ITOPK=${ITOPK:-10,12,16,24,32,48,64,96,128}
DEGREE=${DEGREE:-32}
EF=${EF:-10,16,24,32,48,64,96,128,192}
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
J="$OUT/$NAME-cpu$THREADS-$CAGRA_COMMIT.jsonl"
mkdir -p "$OUT"
pick() { for f in "$DATA/$1".u8bin "$DATA/$1".fbin "$DATA/$1".i8bin; do [ -s "$f" ] && { echo "$f"; return; }; done; }
base=$(pick base)
queries=$(pick query)
gt="$DATA/gt.ibin"
[ -n "$base" ] && [ -n "$queries" ] && [ -s "$gt" ] || { echo "$DATA lacks base.*, query.* or gt.ibin"; exit 2; }
echo "cpu: $(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2), $(nproc) threads; commit $CAGRA_COMMIT"
if [ ! -x "$BUILD_DIR/cagra" ] || [ ! -x "$BUILD_DIR/hnswlib_peer" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=OFF -DCAGRA_BUILD_TESTS=OFF \
    -DHNSWLIB_INCLUDE_DIR="$PWD/third_party/include" >"$OUT/cpu-peers-build.log" 2>&1 &&
    ninja -C "$BUILD_DIR" cagra_cli hnswlib_peer >>"$OUT/cpu-peers-build.log" 2>&1 ||
    { echo "build failed"; tail -20 "$OUT/cpu-peers-build.log"; exit 1; }
fi
rc=0
idx=/tmp/$NAME-cpu-d$DEGREE.cagra
if [ -n "${KEEP_INDEX:-}" ] && [ -s "$idx" ] && [ -s "$idx.log" ]; then
  echo "index: $idx kept from an earlier call (KEEP_INDEX)"
else
  "$BUILD_DIR/cagra" build "$base" -o "$idx" --metric "$METRIC" --graph-degree "$DEGREE" \
    --intermediate-degree $((2 * DEGREE)) --backend cpu --threads "$THREADS" --force >"$idx.log" || { echo "index build failed"; exit 1; }
fi
grep -E "^time" "$idx.log"
build_s=$(sed -n 's/.*total \([0-9.]*\) s.*/\1/p' "$idx.log")
[ "${STEPS:-build,search}" = build ] && exit 0
trav=${TRAVERSAL:-exact}
[ -z "${TRAVERSAL:-}" ] && [[ $base == *.fbin ]] && trav=exact,int8
skip=",${SKIP:-},"
BATCHES=${BATCHES:-0,1}
for batch in ${BATCHES//,/ }; do
  [[ $skip == *,ours,* ]] && break
  "$BUILD_DIR/cagra" bench "$idx" "$queries" "$gt" --backend cpu --batch "$batch" --threads "$THREADS" \
    --itopk "$ITOPK" --traversal "$trav" --random-samplings "${SAMPLINGS:-0}" --repeat "${REPS:-3}" \
    --dataset "$NAME" --json "$J" --build-s "$build_s" | tail -n +5 || rc=1
done
WALKERS=${WALKERS:-}
for t in ${WALKERS//,/ }; do
  [[ $skip == *,ours,* ]] && break
  echo "== ours, batch 1, --algo multi on $t threads"
  "$BUILD_DIR/cagra" bench "$idx" "$queries" "$gt" --backend cpu --batch 1 --algo multi --threads "$t" \
    --itopk "$ITOPK" --traversal "$trav" --random-samplings "${SAMPLINGS:-0}" --repeat "${REPS:-3}" \
    --dataset "$NAME" --json "$J" --build-s "$build_s" | tail -n +5 || rc=1
done
[[ $skip == *,hnswlib,* ]] || "$BUILD_DIR/hnswlib_peer" "$base" "$queries" "$gt" --metric "$METRIC" --threads "$THREADS" --batch "$BATCHES" \
  --reps 2 --ef "$EF" --dataset "$NAME" --json "$J" || rc=1
fpy() { PYTHONPATH=/tmp/faiss-pkgs${PYTHONPATH:+:$PYTHONPATH} python3 "$@"; }
if [[ $skip != *,faiss,* ]] && ! fpy -c "import faiss" 2>/dev/null; then
  whl=$(ls stage/wheels/faiss_cpu-*.whl 2>/dev/null | head -1)
  [ -n "$whl" ] && python3 -m pip install --quiet --no-index --no-deps --target /tmp/faiss-pkgs "$whl" >/dev/null 2>&1
fi
if [[ $skip == *,faiss,* ]]; then
  :
elif fpy -c "import faiss" 2>/dev/null; then
  fpy bench/faiss_peer.py "$base" "$queries" "$gt" --metric "$METRIC" --threads "$THREADS" \
    --index "${FAISS_INDEX:-hnsw,hnsw-sq8}" --batch "$BATCHES" --batch1-queries "${FAISS_BATCH1:-2000}" --reps 2 \
    --ef "$EF" --dataset "$NAME" --json "$J" || rc=1
else
  echo "faiss: not importable and no wheel in stage/wheels/"; rc=1
fi
echo "== QPS at recall@10 ($NAME, CPU) =="
python3 bench/plot.py --qps-at 0.90,0.95,0.99 "$J" --dataset "$NAME" || rc=1
exit $rc
