#!/usr/bin/env bash
# Batch-1 QPS from one process to the next on the GPU machine (bench/results/logs/
# batch1-modes-h200-ef0402b.txt): builds the CLI and bench/batch1_modes, indexes bigann10k
# (data/shared, carried), then
#  1. cagra bench --batch 1 --itopk 32 --repeat 20 with the calling thread pinned to one CPU
#     (taskset; five CPUs spread over the machine) and unpinned, 3 rounds;
#  2. 12 such processes one after another while nvidia-smi samples the GPU's clocks every 50 ms;
#  3. bench/batch1_modes (one process, fresh index loads, segments of 5,000 calls), 3 processes.
# Logs in $OUT: topo.txt, numa.txt, runs.txt + clocks.csv, modes.txt.
#
#   OUT=$OUT bash scripts/dev/device-batch1-modes.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
D=data/shared/bigann10k
[ -f "$D/base.u8bin" ] || { echo "device-batch1-modes: carry data/shared (bigann10k)" >&2; exit 1; }
{ nvidia-smi topo -m; lscpu | grep -Ei "numa|socket|model name|^cpu\(s\)"; } >"$OUT/topo.txt" 2>&1
cmake -S . -B build-modes -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_TESTS=OFF -DCAGRA_BUILD_BENCH=ON >"$OUT/build.log" 2>&1 &&
  cmake --build build-modes --target cagra_cli batch1_modes -j "$(nproc)" >>"$OUT/build.log" 2>&1 ||
  { tail -20 "$OUT/build.log"; exit 1; }
I=/tmp/cagra-modes-bigann10k.cagra
build-modes/cagra build "$D/base.u8bin" -o "$I" --graph-degree 32 --force >/dev/null
bench() {
  "$@" build-modes/cagra bench "$I" "$D/query.u8bin" "$D/groundtruth.ibin" --backend cuda --batch 1 \
    -k 10 --itopk 32 --repeat 20 2>&1 | grep -E "^ +32 "
}
n=$(nproc)
for r in 1 2 3; do
  for cpu in 0 $((n / 4)) $((n / 2)) $((3 * n / 4)) $((n - 1)); do
    printf "round %d cpu %2d: " "$r" "$cpu"
    bench taskset -c "$cpu"
  done
  printf "round %d unpinned: " "$r"
  bench env
done | tee "$OUT/numa.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,pstate --format=csv,noheader \
  -lms 50 >"$OUT/clocks.csv" 2>&1 &
smi=$!
for r in $(seq 12); do
  echo "start $(date +%H:%M:%S.%N | cut -c1-12)"
  bench env
  echo "end   $(date +%H:%M:%S.%N | cut -c1-12)"
done | tee "$OUT/runs.txt"
kill "$smi"
for p in 1 2 3; do
  echo "process $p"
  build-modes/batch1_modes "$I" "$D/query.u8bin" 6
done | tee "$OUT/modes.txt"
