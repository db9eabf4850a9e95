#!/usr/bin/env bash
# The demo: CAGRA on Fashion-MNIST (60,000 x 784 training images as the base set, the 10,000 test
# images as queries, from Debian's dataset-fashion-mnist). It sets the machine up, builds the two
# programs it runs (the `cagra` CLI and bench/hnswlib_peer), computes the exact ground truth once
# (cached in build/demo/ with the exact search's speed, so reruns skip it), builds an index and
# prints the recall/QPS trade-off for a throughput sweep (all queries per call) and a latency
# sweep (one query per call, one thread), each followed by hnswlib's sweep on the same queries
# and one line per CAGRA point: its speed-up over the exact search and over hnswlib at the same
# recall (bench/demo_report.py).
#
# Without a visible GPU (no working nvidia-smi) a new build folder is configured without the CUDA
# backend, whose objects are most of the compile time; an existing one keeps its setting.
#
# Environment: BACKEND (auto | cpu | cuda; default auto = CUDA when available), THREADS (CPU
# threads; default all), BUILD_DIR (default build), FASHION_DIR (the IDX files), CAGRA_CUDA (as
# for scripts/setup.sh; default: see above).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-build}
BACKEND=${BACKEND:-auto}
FASHION_DIR=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}
start=$SECONDS

if [[ -z ${CAGRA_CUDA:-} ]]; then
  if [[ -f $BUILD_DIR/CMakeCache.txt ]]; then
    CAGRA_CUDA=$(sed -n 's/^CAGRA_CUDA:STRING=//p' "$BUILD_DIR/CMakeCache.txt")
  elif [[ $BACKEND != cuda ]] && ! nvidia-smi -L >/dev/null 2>&1; then
    CAGRA_CUDA=OFF
    echo "demo: no GPU visible (nvidia-smi); building without the CUDA backend"
  fi
fi
targets=(cagra_cli)
# bench/CMakeLists.txt builds the peer where hnswlib's headers are (Debian's libhnswlib-dev).
if [[ -f /usr/include/hnswlib/hnswlib.h || -f third_party/include/hnswlib/hnswlib.h ]]; then
  targets+=(hnswlib_peer)
fi
CAGRA_CUDA=${CAGRA_CUDA:-AUTO} TARGETS="${targets[*]}" bash scripts/setup.sh
echo "demo: built in $((SECONDS - start)) s"

cagra="$BUILD_DIR/cagra"
peer="$BUILD_DIR/hnswlib_peer"
work="$BUILD_DIR/demo"
run="$work/last-run"  # this run's JSON lines, appended to $work/bench.jsonl at the end
base="$FASHION_DIR/train-images-idx3-ubyte.gz"
queries="$FASHION_DIR/t10k-images-idx3-ubyte.gz"
rm -rf "$run"
mkdir -p "$run"
common=(--backend "$BACKEND")
peer_threads=()
if [[ -n ${THREADS:-} ]]; then
  common+=(--threads "$THREADS")
  peer_threads=(--threads "$THREADS")
fi

echo
echo "== ground truth (exact, k=100) =="
# The writer renames a complete file into place, so a file that exists is a finished one. The
# exact search's speed is kept beside it (fashion-exact.jsonl) for the comparisons below.
if [[ -s "$work/fashion-gt100.ibin" ]]; then
  echo "cached: $work/fashion-gt100.ibin"
else
  rm -f "$work/fashion-exact.jsonl"
  "$cagra" gt "$base" "$queries" -k 100 -o "$work/fashion-gt100.ibin" --dataset fashion-mnist \
    --json "$work/fashion-exact.jsonl" "${common[@]}"
fi
if [[ -s "$work/fashion-exact.jsonl" ]]; then cp "$work/fashion-exact.jsonl" "$run/exact.jsonl"; fi

echo
echo "== build (graph degree 32, kNN degree 64) =="
build_log=$("$cagra" build "$base" -o "$work/fashion.cagra" --graph-degree 32 \
  --intermediate-degree 64 --force "${common[@]}")
echo "$build_log"
build_s=$(sed -n 's/.*total \([0-9.]*\) s.*/\1/p' <<<"$build_log")
build_opt=()
if [[ -n $build_s ]]; then build_opt=(--build-s "$build_s"); fi

# hnswlib_peer SWEEP_ARGS...: hnswlib (M 16, ef_construction 200) on the same files; the index is
# built once and kept in $work (with its build time).
hnswlib() {
  local index=(--save-index "$work/fashion.hnsw")
  if [[ -s "$work/fashion.hnsw" && -s "$work/fashion.hnsw.meta" ]]; then
    index=(--load-index "$work/fashion.hnsw")
  fi
  "$peer" "$base" "$queries" "$work/fashion-gt100.ibin" -k 10 --dataset fashion-mnist \
    "${index[@]}" --json "$run/hnswlib.jsonl" "$@"
}

echo
echo "== throughput: all 10,000 queries per call =="
echo "demo: measuring after $((SECONDS - start)) s"
"$cagra" bench "$work/fashion.cagra" "$queries" "$work/fashion-gt100.ibin" -k 10 \
  --itopk 16,32,64,128,256 --search-width 1,4 --repeat 3 --dataset fashion-mnist \
  --json "$run/throughput.jsonl" "${build_opt[@]}" "${common[@]}"
if [[ -x $peer ]]; then
  echo
  echo "== hnswlib, all queries per call (same queries, same machine) =="
  hnswlib --batch 0 --ef 10,16,32,64,128,256,512 --reps 3 "${peer_threads[@]}"
fi
echo
echo "== what the throughput numbers mean =="
python3 bench/demo_report.py "$run/throughput.jsonl" "$run/hnswlib.jsonl" "$run/exact.jsonl"

echo
echo "== latency: one query per call, one thread =="
"$cagra" bench "$work/fashion.cagra" "$queries" "$work/fashion-gt100.ibin" -k 10 \
  --itopk 32,64,128 --batch 1 --dataset fashion-mnist --json "$run/latency.jsonl" \
  "${build_opt[@]}" --backend "$BACKEND"
if [[ -x $peer ]]; then
  echo
  echo "== hnswlib, one query per call, one thread =="
  hnswlib --batch 1 --ef 16,32,64,128,256 --reps 1
fi
echo
echo "== what the latency numbers mean =="
python3 bench/demo_report.py "$run/latency.jsonl" "$run/hnswlib.jsonl" "$run/exact.jsonl"

cat "$run"/*.jsonl >>"$work/bench.jsonl"
echo
echo "demo: done in $((SECONDS - start)) s; JSON lines appended to $work/bench.jsonl"
