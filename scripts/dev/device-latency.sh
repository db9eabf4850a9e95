#!/usr/bin/env bash
# Batch-1 latency on the GPU machine, taken apart: builds the GPU measurement tool (bench/cuda,
# with the multi-CTA kernel's phase stamps: -DCAGRA_TRACE_KERNELS=ON) and the CLI, runs the
# CudaLatency cases on bigann10k (L2-resident) and, on a 1M-scale index in device memory (DRAM),
# the traced multi-CTA breakdown (bench/cuda/cuda_latency.cpp: the kernel's phases on the GPU
# clock, with the last-CTA merge and with the host merge) plus a batch-1 recall/QPS sweep,
# launching per query and with the persistent kernel; then the single-CTA kernel's phases by
# batch size on the same index (bench/cuda/cuda_single_cta_trace.cpp). Logs go to
# $OUT/latency.log. SINGLE_ONLY=1: the single-CTA phases alone; MULTI_ONLY=1: the multi-CTA
# breakdown and sweeps alone; SKIP_BIGANN=1: no bigann10k cases (no data/shared needed). The
# traced breakdown includes the automatic shape (search_width 1) at itopk 32 and 64; WIDTHS=1 makes
# the sweeps run it too.
#
#   OUT=$OUT bash scripts/dev/device-latency.sh [NAME]
#
# NAME: a data set staged into $DATA_ROOT/NAME (scripts/dev/stage.sh; base.*, query.*, gt.ibin);
# without it a SYNTHETIC 1M x 128 clustered set (bench/make_synthetic.py) is made on the machine.
# Carry data/shared (bigann10k). Environment: BUILD_DIR (build-device), DEGREE (32),
# ITOPK (16,32,64), WIDTHS (16,32,64), ITERS ("0": iterations per CTA of the sweeps, 0 = automatic),
# SAMPLINGS ("0": --random-samplings of the sweeps; at the automatic shape from 32 CTAs up, the
# rounds of d initial nodes a CTA). The sweeps' JSON lines: $OUT/latency-sweep.jsonl.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
BUILD_DIR=${BUILD_DIR:-build-trace}
DEGREE=${DEGREE:-32}
NAME=${1:-}
W=/tmp/cagra-latency
mkdir -p "$OUT" "$W"
L="$OUT/latency.log"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }

say "configure + build ($BUILD_DIR)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DCAGRA_TRACE_KERNELS=ON >"$W/build.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cuda_bench cagra_cli >>"$W/build.log" 2>&1 ||
  { say "build failed"; tail -30 "$W/build.log"; exit 1; }
C="$BUILD_DIR/cagra"
T="$BUILD_DIR/cagra_cuda_bench"

say "the host's merge of the CTAs' lists (CPU only)"
"$T" --gtest_filter='CudaLatencyHost.*' 2>&1 | grep -E "latency|OK|FAILED" | tee -a "$L"

if [[ ${SINGLE_ONLY:-0} != 1 && ${SKIP_BIGANN:-0} != 1 ]]; then
  say "CudaLatency on bigann10k"
  "$T" --gtest_filter='CudaLatency.*' 2>&1 | grep -E "latency|OK|FAILED" | tee -a "$L"
fi

if [ -n "$NAME" ]; then
  D=${DATA_ROOT:-/tmp/cagra-data}/$NAME
else
  D="$W/synthetic-1m"
  if [ ! -s "$D/gt.ibin" ]; then
    say "SYNTHETIC 1M x 128 clustered set (bench/make_synthetic.py) and its exact truth (GPU)"
    python3 bench/make_synthetic.py "$D" --n 1000000 --queries 10000 --dim 128 2>&1 | tail -2 | tee -a "$L"
    "$C" gt "$D/base.fbin" "$D/query.fbin" -k 100 -o "$D/gt.ibin" --backend cuda --force 2>&1 | tail -1
  fi
fi
pick() { for f in "$D/$1".u8bin "$D/$1".fbin "$D/$1".i8bin; do [ -s "$f" ] && { echo "$f"; return; }; done; }
base=$(pick base)
queries=$(pick query)
idx="$W/$(basename "$D")-d$DEGREE.cagra"
if [ ! -s "$idx" ]; then
  say "build $idx (GPU, degree $DEGREE)"
  "$C" build "$base" -o "$idx" --graph-degree "$DEGREE" --intermediate-degree $((2 * DEGREE)) --force 2>&1 |
    grep -E "^(build|time)" | tee -a "$L"
fi

if [[ ${MULTI_ONLY:-0} != 1 ]]; then
say "single-CTA phases by batch size on $(basename "$D")"
CAGRA_LATENCY_INDEX="$idx" CAGRA_LATENCY_QUERIES="$queries" "$T" --gtest_filter='CudaSingleCtaTrace.*' 2>&1 |
  grep -E "trace|OK|FAILED" | tee -a "$L"
fi
[[ ${SINGLE_ONLY:-0} == 1 ]] && { say "done"; exit 0; }

say "traced multi-CTA breakdown on $(basename "$D")"
CAGRA_LATENCY_INDEX="$idx" CAGRA_LATENCY_QUERIES="$queries" "$T" --gtest_filter='CudaLatency.TracedMultiCta' 2>&1 |
  grep -E "latency|OK|FAILED" | tee -a "$L"

# Batch-1 recall/QPS launching per query (--persistent off), then with the persistent kernel.
for mode in launch persistent; do
  extra=(--persistent on)
  [ "$mode" = launch ] && extra=(--persistent off)
  for it in ${ITERS:-0}; do
    say "batch 1, $mode, max iterations $it"
    "$C" bench "$idx" "$queries" "$D/gt.ibin" --backend cuda --batch 1 -k 10 \
      --itopk "${ITOPK:-16,32,64}" --search-width "${WIDTHS:-16,32,64}" --max-iterations "$it" \
      --random-samplings "${SAMPLINGS:-0}" --dataset "$(basename "$D")" --json "$OUT/latency-sweep.jsonl" "${extra[@]}" 2>&1 |
      grep -vE "^\s*$" | tee -a "$L"
  done
done
say "done"
