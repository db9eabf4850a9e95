#!/usr/bin/env bash
# Build time against dataset size on the GPU machine (paper Q-C5), on SYNTHETIC clustered
# 96-d f32 data (bench/make_synthetic.py, labeled synthetic): for each size in SIZES, the data is
# drawn on the machine, then `cagra build --backend cuda` (graph degree 32, intermediate 64)
# builds the index; the stage times (kNN graph, optimize, total including reading the file and
# all transfers) become one JSON line each in
# $OUT/synthetic-96d-build-scaling-DEVICE-COMMIT.jsonl (system cagra-cuda-build,
# dataset synthetic-96d, build_s = total) and a table is printed.
#
#   OUT=$OUT CAGRA_COMMIT=<commit> bash scripts/dev/device-build-scaling.sh
#
# Environment: SIZES (default "1000000 3000000 10000000"), BUILD_DIR (build-device), WORK_DIR
# (/tmp/cagra-scaling), BUDGET_S (540: no new size is started past it).
# 100M x 96 does not fit: the GPU NN-descent needs about 2.5 KB of device memory per row at
# d_init 64 (docs/cuda.md), 250 GB for 100M rows, more than one H200 holds; the build says so.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
BUILD_DIR=${BUILD_DIR:-build-device}
W=${WORK_DIR:-/tmp/cagra-scaling}
SIZES=${SIZES:-"1000000 3000000 10000000"}
BUDGET_S=${BUDGET_S:-540}
mkdir -p "$OUT" "$W"
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
# Result files are named DATASET-DEVICE-COMMIT (bench/results/README.md); DEVICE from nvidia-smi.
DEVICE_TAG=${DEVICE_TAG:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')}
TAG="${DEVICE_TAG:-gpu}-$CAGRA_COMMIT"
J="$OUT/synthetic-96d-build-scaling-$TAG.jsonl"

cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  >"$W/build.log" 2>&1 && cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cli >>"$W/build.log" 2>&1 ||
  { echo "build failed"; tail -20 "$W/build.log"; exit 1; }
C="$BUILD_DIR/cagra"
device=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
run_id="$(date -u +%Y%m%dT%H%M%SZ)-$$"
printf '%10s %8s %8s %8s %8s\n' rows knn_s opt_s total_s iters
for n in $SIZES; do
  [ $SECONDS -lt "$BUDGET_S" ] || { echo "budget: $n and larger skipped"; break; }
  d="$W/n$n"
  if [ ! -s "$d/base.fbin" ]; then
    python3 bench/make_synthetic.py "$d" --n "$n" --queries 1000 --dim 96 --clusters 1000 --seed 1 \
      >"$d.gen.log" 2>&1 || { echo "generator failed for $n"; cat "$d.gen.log"; continue; }
  fi
  "$C" build "$d/base.fbin" -o "$W/index.cagra" --backend cuda --graph-degree 32 --intermediate-degree 64 \
    --force >"$d.build.log" 2>&1 || { echo "build of $n rows failed: $(tail -1 "$d.build.log")"; continue; }
  line=$(grep -E '^time' "$d.build.log")
  knn=$(sed -n 's/.*knn \([0-9.]*\) s.*/\1/p' <<<"$line")
  opt=$(sed -n 's/.*optimize \([0-9.]*\) s.*/\1/p' <<<"$line")
  tot=$(sed -n 's/.*total \([0-9.]*\) s.*/\1/p' <<<"$line")
  it=$(sed -n 's/.*(\([0-9]*\) iterations).*/\1/p' "$d.build.log" | head -1)
  printf '%10s %8s %8s %8s %8s\n' "$n" "$knn" "$opt" "$tot" "${it:-?}"
  printf '{"run_id":"%s","system":"cagra-cuda-build","device":"%s","commit":"%s","dataset":"synthetic-96d","metric":"l2","n":%s,"dim":96,"nq":0,"batch":0,"k":0,"params":{"graph_degree":32,"intermediate_graph_degree":64,"knn_iterations":%s},"recall":null,"qps":null,"build_s":%s,"knn_s":%s,"optimize_s":%s}\n' \
    "$run_id" "$device" "$CAGRA_COMMIT" "$n" "${it:-null}" "$tot" "$knn" "$opt" >>"$J"
  rm -f "$W/index.cagra"
done
echo "JSON lines: $(wc -l <"$J") in $J"
