#!/usr/bin/env bash
# Where the GPU build's time goes (issue 18 item 5), on a staged 1M set (scripts/dev/stage.sh;
# default SIFT-wall-1M): a CLI built with -DCAGRA_NND_TIMING=1 (every NN-descent iteration prints
# its sample / join / update times) in $BUILD_DIR, then for each degree of $DEGREES:
#  1. `cagra build` (intermediate degree 2d), its stage times and the per-iteration phases;
#  2. `graph_metrics --knn-recall` on the kNN graph (exact neighbors of 1000 rows), when
#     STEPS has `recall`;
#  3. Nsight Compute on the join and update kernels of iteration $NCU_ITER, when STEPS has `ncu`
#     (duration, throughput of SM / memory, issue activity, warp stalls; clocks left alone);
#  4. when STEPS has `tests`: the CUDA tests of $TESTS (a gtest filter; the build's stages).
# Everything goes to $OUT: build-profile.log (the summary) and one log per step.
#
# Environment: OUT (/tmp/out), NAME (sift-wall-1m), DATA_ROOT (/tmp/cagra-data), BUILD_DIR
# (build-timing), DEGREES (32 64), STEPS (configure,build,recall,ncu), NCU_ITER (3), TESTS
# (CudaBuild*:CudaNnDescent*:CudaOptimize*; data from data/shared when carried),
# BUILD_ARGS (more `cagra build` options, e.g. "--knn-iterations 8").
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
NAME=${NAME:-sift-wall-1m}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
BUILD_DIR=${BUILD_DIR:-build-timing}
DEGREES=${DEGREES:-32 64}
STEPS=,${STEPS:-configure,build,recall,ncu},
NCU_ITER=${NCU_ITER:-3}
TESTS=${TESTS:-'CudaBuild*:CudaNnDescent*:CudaOptimize*'}
BUILD_ARGS=${BUILD_ARGS:-}
W=/tmp/cagra-build-profile
mkdir -p "$OUT" "$W"
L="$OUT/build-profile.log"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }
has() { [[ $STEPS == *",$1,"* ]]; }
say "$(nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | head -1)"

if has configure; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_BENCH=ON -DCMAKE_CUDA_FLAGS=-DCAGRA_NND_TIMING=1 \
    >"$W/build.log" 2>&1 &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cli graph_metrics cagra_cuda_tests \
      >>"$W/build.log" 2>&1 ||
    { say "build failed"; tail -30 "$W/build.log"; exit 1; }
fi
CLI=$BUILD_DIR/cagra
if has tests; then
  say "CUDA tests: $TESTS"
  CAGRA_DATA_DIR=$PWD/data/shared "$BUILD_DIR/tests/cagra_cuda_tests" --gtest_filter="$TESTS" \
    >"$OUT/tests.log" 2>&1
  say "tests exit $?: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/tests.log" | tr '\n' ' ')"
  grep -E '^\[  FAILED|Failure' "$OUT/tests.log" | head -20 | tee -a "$L"
fi
base=""
for f in "$DATA/base.u8bin" "$DATA/base.fbin"; do [ -s "$f" ] && { base=$f; break; }; done
[[ -n $base ]] || { say "no staged data in $DATA"; exit 1; }

for d in $DEGREES; do
  k=$((2 * d))
  if has build; then
    say "cagra build: degree $d, intermediate $k $BUILD_ARGS"
    # shellcheck disable=SC2086
    "$CLI" build "$base" -o "$W/index-d$d.cagra" --backend cuda --graph-degree "$d" \
      --intermediate-degree "$k" --force $BUILD_ARGS >"$OUT/build-d$d.log" 2>&1 ||
      say "build failed: $(tail -1 "$OUT/build-d$d.log")"
    grep -E "^\[gpu nn-descent\]|^time|^build  " "$OUT/build-d$d.log" | tee -a "$L"
  fi
  if has recall; then
    say "graph_metrics: kNN recall at intermediate degree $k"
    # Only its first lines are wanted: it is stopped 60 s in, during the graph variants.
    timeout 60 stdbuf -oL "$BUILD_DIR/graph_metrics" "$base" --graph-degree "$d" \
      --intermediate-degree "$k" --backend cuda --knn-recall 1000 >"$OUT/recall-d$d.log" 2>&1
    grep -iE "recall|knn" "$OUT/recall-d$d.log" | grep -v nn-descent | head -5 | tee -a "$L"
  fi
  if has ncu && command -v ncu >/dev/null; then
    say "ncu: join and update kernels of iteration $NCU_ITER, degree $d"
    # shellcheck disable=SC2086
    ncu --clock-control none -k regex:'join_kernel|update_kernel' --launch-skip $((2 * (NCU_ITER - 1))) \
      --launch-count 2 --section SpeedOfLight --section ComputeWorkloadAnalysis \
      --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats \
      --section LaunchStats "$CLI" build "$base" -o "$W/ncu.cagra" --backend cuda --graph-degree "$d" \
      --intermediate-degree "$k" --force $BUILD_ARGS >"$OUT/ncu-d$d.txt" 2>&1 ||
      say "ncu failed: $(tail -3 "$OUT/ncu-d$d.txt")"
    grep -E "join_kernel|update_kernel|Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|Issue Slots Busy|Achieved Occupancy|Registers Per|L1/TEX Hit|L2 Hit" \
      "$OUT/ncu-d$d.txt" | tee -a "$L"
  fi
done
say "done"
