#!/usr/bin/env bash
# Batch 1 over float queries, a commit (A) against this tree (B), on the GPU machine: the GPU's
# default batch-1 call (host f32 queries: the finite check and, for cosine, the normalization on
# the host each call) and the CPU's one walk and latency path (`--algo multi`), interleaved round
# by round. The path that e5bf82f's team sizing changed; SIFT's byte queries skip it.
#
#   A=<commit> OUT=$OUT CPU_INDEX=/tmp/NAME-cpu-d64.cagra bash scripts/dev/device-float-batch1-ab.sh NAME [METRIC]
#
# NAME is a set staged in $DATA_ROOT/NAME (base.fbin, query.fbin, gt.ibin); CPU_INDEX a CPU-built
# index of it (scripts/dev/device-cpu-peers.sh leaves one in /tmp). B's CLIs: $CUDA_CLI
# (/tmp/build-device/cagra) and $CPU_CLI (/tmp/build-cpu/cagra), built when missing; A's are
# built from `git archive A` into /tmp/ab-A. The GPU index (library defaults) is built once by B.
# Environment: ROUNDS (3), THREADS (all), GPU_ITOPK (32,64), WALK_ITOPK (16,64), MULTI_ITOPK
# (16,64,128). The log goes to stdout; JSON lines to $OUT/float-batch1-ab.jsonl.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
: "${A:?A=<commit> to compare against}" "${CPU_INDEX:?CPU_INDEX=<a CPU-built index of NAME>}"
NAME=${1:?usage: device-float-batch1-ab.sh NAME [METRIC]}
METRIC=${2:-cosine}
OUT=${OUT:-/tmp/out}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-$(nproc)}
CUDA_CLI=${CUDA_CLI:-/tmp/build-device/cagra}
CPU_CLI=${CPU_CLI:-/tmp/build-cpu/cagra}
W=/tmp/ab-A
J=$OUT/float-batch1-ab.jsonl
mkdir -p "$OUT" "$W/src"
build() {  # SRC DIR CUDA(ON/OFF)
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA="$3" -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DCAGRA_BUILD_TESTS=OFF -DCAGRA_BUILD_BENCH=OFF >"$2.log" 2>&1 && ninja -C "$2" cagra_cli >>"$2.log" 2>&1 ||
    { echo "build of $1 into $2 failed"; tail -20 "$2.log"; exit 1; }
}
[ -x "$CUDA_CLI" ] || { build . /tmp/build-device ON; CUDA_CLI=/tmp/build-device/cagra; }
[ -x "$CPU_CLI" ] || { build . /tmp/build-cpu OFF; CPU_CLI=/tmp/build-cpu/cagra; }
if [ ! -x "$W/cuda/cagra" ] || [ ! -x "$W/cpu/cagra" ]; then
  git archive "$A" | tar -x -C "$W/src" || { echo "git archive $A failed"; exit 1; }
  build "$W/src" "$W/cuda" ON
  build "$W/src" "$W/cpu" OFF
fi
echo "a = $(git rev-parse --short "$A"), b = ${CAGRA_COMMIT:-this tree}; $NAME ($METRIC);$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(nproc) threads"
gidx=/tmp/$NAME-gpu-defaults.cagra
[ -s "$gidx" ] || "$CUDA_CLI" build "$DATA/base.fbin" -o "$gidx" --metric "$METRIC" --backend cuda --force | tail -1
points() { grep -E '^ +[0-9]' || true; }
for r in $(seq "$ROUNDS"); do
  for side in a b; do
    gcli=$CUDA_CLI ccli=$CPU_CLI label=${CAGRA_COMMIT:-b}
    [ "$side" = a ] && gcli=$W/cuda/cagra ccli=$W/cpu/cagra label=$(git rev-parse --short "$A")
    common=(--dataset "$NAME" --json "$J" --repeat 2)
    echo "== $side round $r: GPU, batch 1, defaults"
    CAGRA_COMMIT=$label "$gcli" bench "$gidx" "$DATA/query.fbin" "$DATA/gt.ibin" --backend cuda --batch 1 \
      --itopk "${GPU_ITOPK:-32,64}" "${common[@]}" 2>/dev/null | points
    echo "== $side round $r: CPU, one walk, $THREADS threads"
    CAGRA_COMMIT=$label "$ccli" bench "$CPU_INDEX" "$DATA/query.fbin" "$DATA/gt.ibin" --backend cpu --batch 1 \
      --threads "$THREADS" --itopk "${WALK_ITOPK:-16,64}" "${common[@]}" 2>/dev/null | points
    echo "== $side round $r: CPU, latency path, $THREADS threads"
    CAGRA_COMMIT=$label "$ccli" bench "$CPU_INDEX" "$DATA/query.fbin" "$DATA/gt.ibin" --backend cpu --batch 1 \
      --threads "$THREADS" --algo multi --itopk "${MULTI_ITOPK:-16,64,128}" "${common[@]}" 2>/dev/null | points
  done
done
