#!/usr/bin/env bash
# NN-descent iteration by iteration, on a staged set: what each iteration costs and what the
# search recall of the finished index gains from it, on the CPU and on the GPU, to choose
# knn_graph_params::termination_threshold. For each backend, builds the index (DEGREE from twice
# DEGREE) with the iterations capped at each of CAPS and once at the default stop, then searches
# every index on the GPU at batch 10K (itopk ITOPK), so that only the graphs differ.
#
# The CPU builds come from a CPU-only CLI of this tree with PATCH applied (default: the
# per-iteration counts of bench/results/logs/cpu-nnd-iteration-changes-89e5293.patch, lines
# "nnd-it I SECONDS s proposed P listed L changed C of N*k (C/(N*k))"); the GPU builds and every
# search from the CUDA CLI in $BUILD_DIR (built here when missing).
#
#   OUT=$OUT bash scripts/dev/device-nnd-iterations.sh NAME [METRIC]
#
# Environment: OUT (/tmp/out), DATA_ROOT (/tmp/cagra-data), BUILD_DIR (build-device), DEGREE
# (32), CAPS ("3 4 5 6"), BACKENDS ("cpu cuda"), ITOPK (32,64,128), PATCH, CAGRA_COMMIT.
# Writes $OUT/nnd-iterations-NAME-COMMIT.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NAME=${1:?usage: device-nnd-iterations.sh NAME [METRIC]}
METRIC=${2:-l2}
OUT=${OUT:-/tmp/out}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
BUILD_DIR=${BUILD_DIR:-build-device}
DEGREE=${DEGREE:-32}
CAPS=${CAPS:-3 4 5 6}
BACKENDS=${BACKENDS:-cpu cuda}
ITOPK=${ITOPK:-32,64,128}
PATCH=${PATCH:-bench/results/logs/cpu-nnd-iteration-changes-89e5293.patch}
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
W=/tmp/cagra-nnd
L="$OUT/nnd-iterations-$NAME-$CAGRA_COMMIT.log"
mkdir -p "$OUT" "$W"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }
pick() { for f in "$DATA/$1".u8bin "$DATA/$1".fbin; do [ -s "$f" ] && { echo "$f"; return; }; done; }
base=$(pick base) queries=$(pick query) gt="$DATA/gt.ibin"
[[ -n $base && -n $queries && -s $gt ]] || { say "no staged data in $DATA"; exit 2; }
say "$NAME ($METRIC), degree $DEGREE from $((2 * DEGREE)), caps $CAPS, commit $CAGRA_COMMIT"
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(nproc) threads"

if [ ! -x "$BUILD_DIR/cagra" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 >"$W/build.log" 2>&1 &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cli >>"$W/build.log" 2>&1 ||
    { say "CUDA build failed"; tail -30 "$W/build.log"; exit 1; }
fi
GPU_CLI="$(cd "$BUILD_DIR" && pwd)/cagra"
CPU_CLI="$W/tree/build/cagra"
if [[ $BACKENDS == *cpu* && ! -x $CPU_CLI ]]; then
  rm -rf "$W/tree" && mkdir -p "$W/tree"
  git archive HEAD | tar -x -C "$W/tree" && (cd "$W/tree" && git apply "$OLDPWD/$PATCH") ||
    { say "patch $PATCH does not apply"; exit 1; }
  (cd "$W/tree" && cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=OFF \
    -DCAGRA_BUILD_TESTS=OFF >"$W/cpu-build.log" 2>&1 && ninja -C build cagra_cli >>"$W/cpu-build.log" 2>&1) ||
    { say "CPU build failed"; tail -30 "$W/cpu-build.log"; exit 1; }
fi

for backend in $BACKENDS; do
  cli=$GPU_CLI
  [ "$backend" = cpu ] && cli=$CPU_CLI
  for cap in $CAPS default; do
    idx="$W/$backend-$cap.cagra"
    args=()
    [ "$cap" = default ] || args=(--knn-iterations "$cap")
    say "build $backend, iterations ${cap}"
    "$cli" build "$base" -o "$idx" --metric "$METRIC" --graph-degree "$DEGREE" \
      --intermediate-degree "$((2 * DEGREE))" --backend "$backend" --force "${args[@]}" \
      >"$W/build-out.log" 2>&1 || { say "build failed"; tail -5 "$W/build-out.log" | tee -a "$L"; continue; }
    grep -E "^nnd-it|^build  |^time" "$W/build-out.log" | tee -a "$L"
    "$GPU_CLI" bench "$idx" "$queries" "$gt" --backend cuda --itopk "$ITOPK" --batch 10000 \
      --repeat 2 >"$W/bench.log" 2>&1
    grep -E "^ *[0-9]+ " "$W/bench.log" | tee -a "$L"
    rm -f "$idx"
  done
done
say "done: $L"
