#!/usr/bin/env bash
# CPU benchmarks on this machine, every system in the same run with the same thread count:
# Fashion-MNIST (60,000 x 784 u8, 10,000 queries) searched by our CPU backend (u8 storage, and f32
# storage walked exactly and on its int8 copy), by hnswlib (M=16, efConstruction=200, float
# vectors) and by faiss (HNSW-Flat, HNSW over one-byte rows and IVF-Flat: bench/faiss_peer.py,
# from the faiss-cpu wheel), batch 10K and batch 1, plus the recall sweep on bigann10k. JSON lines
# go to bench/results/DATASET-DEVICE-COMMIT.jsonl (DEVICE: cpuN for N threads, e.g.
# fashion-mnist-cpu2-6b431d6.jsonl), plots to docs/, and the QPS-at-recall table is printed last.
# Needs the build from scripts/setup.sh.
#
# Environment: THREADS (default: all cores), BUILD_DIR (default build), PYTHON (for the plots),
# FAISS_PYTHON (a python that imports faiss; default: a venv in BUILD_DIR/bench-work),
# DEVICE_TAG (default cpuTHREADS), CAGRA_COMMIT (default: the short HEAD commit).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-build}
THREADS=${THREADS:-$(nproc)}
PY=${PYTHON:-/usr/bin/python3}
C="$BUILD_DIR/cagra"
F=${CAGRA_FASHION_DIR:-/usr/share/datasets/fashion-mnist}
S=${CAGRA_DATA_DIR:-../shared/data}
W="$BUILD_DIR/bench-work"
R=bench/results
mkdir -p "$W" "$R" docs
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
TAG="${DEVICE_TAG:-cpu$THREADS}-$CAGRA_COMMIT"
[ -x "$BUILD_DIR/hnswlib_peer" ] || { echo "error: $BUILD_DIR/hnswlib_peer missing (libhnswlib-dev)"; exit 1; }

base="$F/train-images-idx3-ubyte.gz"
queries="$F/t10k-images-idx3-ubyte.gz"
J="$R/fashion-mnist-$TAG.jsonl"
[ -s "$W/fashion-gt.ibin" ] || "$C" gt "$base" "$queries" -k 100 -o "$W/fashion-gt.ibin" --threads "$THREADS"
for storage in input f32; do
  log=$("$C" build "$base" -o "$W/fashion-$storage.cagra" --graph-degree 32 --intermediate-degree 64 \
    --storage "$storage" --threads "$THREADS" --force)
  echo "$log" | grep -E "^(build|time) "
  build_s=$(sed -n 's/.*total \([0-9.]*\) s.*/\1/p' <<<"$log")
  common=(--dataset fashion-mnist --json "$J" -k 10 --build-s "$build_s")
  # f32 rows are also walked on their int8 copy, the best candidates re-ranked exactly.
  trav=(); [ "$storage" = f32 ] && trav=(--traversal exact,int8)
  "$C" bench "$W/fashion-$storage.cagra" "$queries" "$W/fashion-gt.ibin" --threads "$THREADS" \
    --repeat 3 --itopk 10,12,16,24,32,48,64,96,128 "${trav[@]}" "${common[@]}"
  "$C" bench "$W/fashion-$storage.cagra" "$queries" "$W/fashion-gt.ibin" --batch 1 \
    --itopk 10,16,32,64 "${trav[@]}" "${common[@]}"
done
"$BUILD_DIR/hnswlib_peer" "$base" "$queries" "$W/fashion-gt.ibin" --threads "$THREADS" --batch 0,1 \
  --ef 10,12,16,20,24,32,48,64,96,128 --dataset fashion-mnist --json "$J"

# faiss (CPU): HNSW-Flat (hnswlib's M and efConstruction), HNSW over one-byte rows and IVF-Flat,
# from the faiss-cpu wheel in a virtual environment of its own (it needs a newer numpy than
# Debian's); skipped, with a note, where pip cannot fetch it.
FAISS_PY=${FAISS_PYTHON:-$W/faiss-venv/bin/python}
if ! "$FAISS_PY" -c "import faiss" 2>/dev/null; then
  { "$PY" -m venv "$W/faiss-venv" && "$W/faiss-venv/bin/python" -m pip install --quiet faiss-cpu; } \
    >"$W/faiss-install.log" 2>&1 || true
  FAISS_PY=$W/faiss-venv/bin/python
fi
if "$FAISS_PY" -c "import faiss" 2>/dev/null; then
  "$FAISS_PY" bench/faiss_peer.py "$base" "$queries" "$W/fashion-gt.ibin" --threads "$THREADS" \
    --batch 0,1 --ef 10,12,16,20,24,32,48,64,96,128 --nprobe 2,4,6,8,12,16,24,32,48,64 \
    --dataset fashion-mnist --json "$J"
else
  echo "faiss-cpu could not be installed ($W/faiss-install.log): faiss left out of this run"
fi

# bigann10k: the recall range of the CPU search on real SIFT (the foundation's acceptance set).
"$C" build "$S/bigann10k/base.u8bin" -o "$W/bigann10k.cagra" --graph-degree 32 \
  --intermediate-degree 64 --threads "$THREADS" --force | grep -E "^time "
"$C" bench "$W/bigann10k.cagra" "$S/bigann10k/query.u8bin" "$S/bigann10k/groundtruth.ibin" \
  --threads "$THREADS" --repeat 3 --itopk 10,16,32,64,128 --dataset bigann10k \
  --json "$R/bigann10k-$TAG.jsonl"

for b in 0 1; do
  "$PY" bench/plot.py "$J" --dataset fashion-mnist --batch "$b" -o "docs/fashion-mnist-cpu-batch$b.png" \
    --title "Fashion-MNIST, CPU ($THREADS threads), batch $([ $b = 0 ] && echo 10K || echo 1)"
done
echo "== QPS at recall@10 (interpolated along each sweep) =="
"$PY" bench/plot.py --qps-at 0.90,0.95,0.99 "$J" --dataset fashion-mnist
