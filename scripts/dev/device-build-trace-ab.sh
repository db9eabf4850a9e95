#!/usr/bin/env bash
# A/B of the GPU build's stages on the GPU machine: timing builds (-DCAGRA_NND_TIMING=1, the
# build's trace: dataset upload, random start, iterations, optimize) of two source trees,
# interleaved (A B A B), at one degree on SYNTHETIC sets made here, after every CUDA test of
# this tree (B). Written for the runs of "Float rows on tf32 tensor cores" and "The upload and
# the random start" (docs/benchmarks.md; their logs hold the exact scripts of those runs).
#
#   OUT=$OUT bash scripts/dev/device-build-trace-ab.sh A_TARBALL
#
# A_TARBALL: the other tree as `git archive COMMIT | gzip` (carried). Carry data/shared for the
# tests (CAGRA_DATA_DIR). Environment: OUT (/tmp/out), ROUNDS (2), DEGREE (64), SETS (the
# "NAME:DIM:METRIC" builds, default "synthetic-1m:128:l2 synthetic-384:384:l2
# synthetic-384:384:cosine"), SKIP_TESTS=1. Writes $OUT/tests.log and $OUT/ab.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

A_TAR=${1:?usage: device-build-trace-ab.sh A_TARBALL}
OUT=${OUT:-/tmp/out}
ROUNDS=${ROUNDS:-2}
DEGREE=${DEGREE:-64}
SETS=${SETS:-synthetic-1m:128:l2 synthetic-384:384:l2 synthetic-384:384:cosine}
DATA=/tmp/cagra-data
W=/tmp/cagra-build-trace-ab
mkdir -p "$W/a" "$OUT"
tar -xzf "$A_TAR" -C "$W/a"

(for spec in $SETS; do
  IFS=: read -r name dim _ <<<"$spec"
  [[ -s $DATA/$name/base.fbin ]] || python3 bench/make_synthetic.py --dim "$dim" "$DATA/$name"
done) >"$W/data.log" 2>&1 &
bld() {  # bld SRC DIR TESTS FLAGS TARGETS...
  local src=$1 dir=$2 tests=$3 flags=$4
  shift 4
  cmake -S "$src" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_TESTS="$tests" -DCAGRA_BUILD_BENCH=OFF \
    "-DCMAKE_CUDA_FLAGS=$flags" >"$dir.log" 2>&1 &&
    ninja -C "$dir" -j 6 "$@" >>"$dir.log" 2>&1 || { echo "FAIL $dir"; tail -20 "$dir.log"; }
}
[[ ${SKIP_TESTS:-0} == 1 ]] || bld "$PWD" "$W/bt" ON "" cagra_cuda_tests &
bld "$W/a" "$W/ba" OFF -DCAGRA_NND_TIMING=1 cagra_cli &
bld "$PWD" "$W/bb" OFF -DCAGRA_NND_TIMING=1 cagra_cli &
wait
echo "== builds done $SECONDS s"

if [[ ${SKIP_TESTS:-0} != 1 ]]; then
  T=$(find "$W/bt" -name cagra_cuda_tests -type f | head -1)
  CAGRA_DATA_DIR=$PWD/data/shared "$T" >"$OUT/tests.log" 2>&1
  echo "tests rc=$?"
  grep -E "^\[  FAILED|PASSED" "$OUT/tests.log" | head -20
fi

for spec in $SETS; do
  IFS=: read -r name _ metric <<<"$spec"
  for r in $(seq "$ROUNDS"); do
    for s in a b; do
      echo "== $name $metric round $r $s"
      "$W/b$s/cagra" build "$DATA/$name/base.fbin" -o "$W/$s-$name-$metric.cagra" --backend cuda \
        --graph-degree "$DEGREE" --metric "$metric" --force >"$W/log" 2>&1
      grep -E "^time|^dataset |nn-descent\] (dataset|n=|upload|iterations done)" "$W/log"
    done
  done
done 2>&1 | tee "$OUT/ab.log"
echo "== done $SECONDS s"
