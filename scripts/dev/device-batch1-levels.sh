#!/usr/bin/env bash
# Where in a batch-1 call does a slow process lose its time? The rate of a persistent batch-1
# process on SIFT-wall-1M falls into levels ~1.2 us apart (docs/cuda.md, "What does not set a
# process's rate"). This runs CudaLatency.TracedMultiCta (bench/cuda/cuda_latency.cpp, a
# -DCAGRA_TRACE_KERNELS=ON build) on the set's index in PROCS processes: each measures the
# untraced persistent call (2,000 calls, host time), then relaunches the kernel traced and takes
# the call apart (CTA 0's finding poll, the relay, each CTA's phases, the host's side). Set side by
# side by process, the parts that move with the untraced call are where the level lies. Every
# process runs on one vCPU (CORE), with that core's speed measured just before and after it
# (scripts/dev/cpu-speed.cpp).
#
#   OUT=$OUT bash scripts/dev/device-batch1-levels.sh NAME
#
# NAME: a set staged in $DATA_ROOT/NAME (base.u8bin, query.u8bin, gt.ibin; scripts/dev/stage.sh).
# Carry data/shared/bigann10k (the test's fixture). Environment: PROCS (10), CORE (2). Writes
# $OUT/levels.txt (each process's lines) and prints a table: process, the untraced call at itopk
# 32 and 64, and the traced itopk-64 call's parts.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NAME=${1:?usage: device-batch1-levels.sh NAME}
O=${OUT:-/tmp/out}
D=${DATA_ROOT:-/tmp/cagra-data}/$NAME
mkdir -p "$O"
rm -f "$O/levels.txt"
cmake -S . -B build-trace -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_TRACE_KERNELS=ON >"$O/bt.log" 2>&1 &&
  cmake --build build-trace -j "$(nproc)" --target cagra_cuda_bench cagra_cli >>"$O/bt.log" 2>&1 ||
  { tail -20 "$O/bt.log"; exit 1; }
idx=/tmp/levels-$NAME.cagra
[[ -s $idx ]] ||
  build-trace/cagra build "$D/base.u8bin" -o "$idx" --graph-degree 32 --intermediate-degree 64 \
    --backend cuda --force >"$O/index.txt" 2>&1 || { tail -5 "$O/index.txt"; exit 1; }
g++ -O2 -o /tmp/cpu-speed scripts/dev/cpu-speed.cpp || exit 1
core=${CORE:-2}
for p in $(seq "${PROCS:-10}"); do
  echo "== process $p" >>"$O/levels.txt"
  echo "cpu before: $(taskset -c "$core" /tmp/cpu-speed)" >>"$O/levels.txt"
  CAGRA_LATENCY_INDEX="$idx" CAGRA_LATENCY_QUERIES="$D/query.u8bin" \
    taskset -c "$core" build-trace/cagra_cuda_bench --gtest_filter=CudaLatency.TracedMultiCta 2>&1 |
    grep -E "auto itopk|FAIL" >>"$O/levels.txt"
  echo "cpu after: $(taskset -c "$core" /tmp/cpu-speed)" >>"$O/levels.txt"
done
# One line a process: the untraced persistent call (itopk 32, 64), then the traced itopk-64 call.
awk '/^== process/ { p = $3; n32 = n64 = "" }
  /^cpu before/ { cb = $4 " " $6 }
  /^cpu after/ { printf "  process %s: the core before %s, after %s (chain_ns chase_ns)\n", p, cb, $4 " " $6 }
  /auto itopk 32 .* persistent +call/ && !/traced/ { n32 = $(NF - 1) }
  /auto itopk 64 .* persistent +call/ && !/traced/ { n64 = $(NF - 1) }
  /auto itopk 64 .*CTA 0 on SM/ { sm = $NF; sub(/\)/, "", sm) }
  /auto itopk 64 .*persistent traced call/ {
    match($0, /call +[0-9.]+ us = body +[0-9.]+ \+ outside +[0-9.]+/); c = substr($0, RSTART, RLENGTH)
    match($0, /finding poll [0-9.]+/); f = substr($0, RSTART + 13, RLENGTH - 13)
    match($0, /start to its list [0-9.]+ \(slowest [0-9.]+\)/); s = substr($0, RSTART, RLENGTH)
    match($0, /next [0-9.]+ each/); it = substr($0, RSTART, RLENGTH)
    match($0, /post to lists merged [0-9.]+ \([0-9.]+ outside/); h = substr($0, RSTART, RLENGTH)
    printf "process %s: untraced %s / %s us | traced %s | poll %s | %s | %s | %s) | CTA 0 on SM %s\n",
      p, n32, n64, c, f, s, it, h, sm }' "$O/levels.txt"
