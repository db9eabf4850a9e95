#!/usr/bin/env bash
# The demo: CAGRA on Fashion-MNIST (60,000 x 784 training images as the base set, the 10,000 test
# images as queries, from Debian's dataset-fashion-mnist). It sets the machine up, computes the
# exact ground truth once (cached in build/demo/, so reruns skip it), builds an index and prints
# the recall/QPS trade-off for a throughput sweep (all queries per call) and a latency sweep
# (one query per call, one thread).
#
# Environment: BACKEND (auto | cpu | cuda; default auto = CUDA when available), THREADS (CPU
# threads; default all), BUILD_DIR (default build), FASHION_DIR (the IDX files).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-build}
BACKEND=${BACKEND:-auto}
FASHION_DIR=${FASHION_DIR:-/usr/share/datasets/fashion-mnist}

bash scripts/setup.sh

cagra="$BUILD_DIR/cagra"
work="$BUILD_DIR/demo"
base="$FASHION_DIR/train-images-idx3-ubyte.gz"
queries="$FASHION_DIR/t10k-images-idx3-ubyte.gz"
mkdir -p "$work"
common=(--backend "$BACKEND")
if [[ -n ${THREADS:-} ]]; then common+=(--threads "$THREADS"); fi

echo
echo "== ground truth (exact, k=100) =="
# The writer renames a complete file into place, so a file that exists is a finished one.
if [[ -s "$work/fashion-gt100.ibin" ]]; then
  echo "cached: $work/fashion-gt100.ibin"
else
  "$cagra" gt "$base" "$queries" -k 100 -o "$work/fashion-gt100.ibin" "${common[@]}"
fi

echo
echo "== build (graph degree 32, kNN degree 64) =="
build_log=$("$cagra" build "$base" -o "$work/fashion.cagra" --graph-degree 32 \
  --intermediate-degree 64 --force "${common[@]}")
echo "$build_log"
build_s=$(sed -n 's/.*total \([0-9.]*\) s.*/\1/p' <<<"$build_log")
build_opt=()
if [[ -n $build_s ]]; then build_opt=(--build-s "$build_s"); fi

echo
echo "== throughput: all 10,000 queries per call =="
"$cagra" bench "$work/fashion.cagra" "$queries" "$work/fashion-gt100.ibin" -k 10 \
  --itopk 16,32,64,128,256 --search-width 1,4 --repeat 3 --dataset fashion-mnist \
  --json "$work/bench.jsonl" "${build_opt[@]}" "${common[@]}"

echo
echo "== latency: one query per call, one thread =="
"$cagra" bench "$work/fashion.cagra" "$queries" "$work/fashion-gt100.ibin" -k 10 \
  --itopk 32,64,128 --batch 1 --dataset fashion-mnist --json "$work/bench.jsonl" \
  "${build_opt[@]}" --backend "$BACKEND"

echo
echo "JSON lines appended to $work/bench.jsonl"
