#!/usr/bin/env bash
# The CPU build by thread count: one `cagra` CLI builds Fashion-MNIST (degree 32 from a 64-NN
# graph, f32 and u8 rows) with the CPU backend at each of THREADS, and hnswlib's peer (M=16,
# efConstruction=200, f32) builds at the same count, one build each, in one run.
#
#   CLI=build/cagra HNSWLIB=build/hnswlib_peer [THREADS="1 2 4 8 16"] \
#     [FASHION=/usr/share/datasets/fashion-mnist] bash scripts/dev/cpu-build-threads.sh
set -euo pipefail
CLI=${CLI:?set CLI (and HNSWLIB)}
HNSWLIB=${HNSWLIB:?set HNSWLIB}
THREADS=${THREADS:-1 2 4 8 16}
F=${FASHION:-/usr/share/datasets/fashion-mnist}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
base="$F/train-images-idx3-ubyte.gz"
queries="$F/t10k-images-idx3-ubyte.gz"
echo "# CPU build by threads, $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
"$CLI" gt "$base" "$queries" -k 10 -o "$W/gt.ibin" --threads "$(nproc)" >/dev/null 2>&1
for t in $THREADS; do
  for s in f32 input; do
    "$CLI" build "$base" -o "$W/x.cagra" --storage "$s" --graph-degree 32 --intermediate-degree 64 \
      --threads "$t" --backend cpu --force 2>/dev/null | grep total | sed "s/^/threads $t $s: /"
  done
  "$HNSWLIB" "$base" "$queries" "$W/gt.ibin" --threads "$t" --batch 0 --ef 10 --reps 1 2>&1 |
    grep -o "build_s=[0-9.]*" | sed "s/^/threads $t hnswlib: /"
done
