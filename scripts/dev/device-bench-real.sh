#!/usr/bin/env bash
# Benchmark of one 1M-scale real data set on the GPU machine, every system in the same run:
# CAGRA on the GPU (batch 10K and batch 1, swept and at the defaults), exact GPU brute force (cuBLAS), our CPU backend on all
# host cores (with --stats: distance computations and bytes per query) and at batch 1 on one thread, hnswlib (M=16,
# efConstruction=200, all host cores; batch 1 on one thread), and a device-to-device copy
# bandwidth measured in the same run. JSON lines go to $OUT/NAME-DEVICE-COMMIT.jsonl, the log to $OUT/NAME.log,
# and a QPS-at-recall table is printed last.
#
#   OUT=$OUT CAGRA_COMMIT=<commit> bash scripts/dev/device-bench-real.sh NAME [METRIC]
#
# NAME is a data set staged by scripts/dev/stage.sh into $DATA_ROOT/NAME (default /tmp/cagra-data)
# holding base.{u8bin,fbin}, query.{u8bin,fbin} and gt.ibin (k = 100): the recipes in
# docs/datasets.md (sift-wall-1m: l2; minilm-1m: cosine). Carry third_party/ (hnswlib).
# Environment: BUILD_DIR (build-device), THREADS (all), DEGREE (32), INTERMEDIATE (64),
# BUILD_BACKEND (auto), F16=1 also benchmarks FP16 storage (another build), ABLATIONS=1 adds
# the paper's Q-B1/Q-B2/Q-B3 sweeps, GRAPH_METRICS=1 the kNN recall and graph metrics, BUDGET_S (560: optional steps are skipped past it),
# SKIP_HNSW=1 leaves hnswlib out, FAISS=1 adds faiss (CPU: HNSW-Flat and IVF-Flat; the wheel
# carried in stage/wheels/; FAISS_BATCH1 queries at batch 1, 2000; FAISS_REPS, 2), SKIP_CAGRA=1 runs hnswlib alone (a set too large for one
# 10-minute call is benchmarked in two back-to-back calls on the same machine), TRAVERSAL
# (exact; a list such as exact,int8 sweeps search_params::traversal on the GPU), SKIP_CPU=1 leaves
# our CPU backend out, SKIP_PERSISTENT=1 the persistent-kernel batch-1 sweeps, HNSW_EF (hnswlib's
# ef list) and HNSW_REPS (3; at 768-d its single-thread sweep to ef 512 with 3 repetitions and
# its 140 s build do not fit one 600 s call: HNSW_REPS=1 HNSW_EF=10,16,24,32,48,64,96,128,192).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NAME=${1:?usage: device-bench-real.sh NAME [METRIC]}
METRIC=${2:-l2}
OUT=${OUT:-/tmp/out}
BUILD_DIR=${BUILD_DIR:-build-device}
JOBS=${JOBS:-$(nproc)}
THREADS=${THREADS:-$(nproc)}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
W=${WORK_DIR:-/tmp/cagra-bench-$NAME}
DEGREE=${DEGREE:-32}
INTERMEDIATE=${INTERMEDIATE:-64}
BUDGET_S=${BUDGET_S:-560}
mkdir -p "$OUT" "$W"
rc=0
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
# Result files are named DATASET-DEVICE-COMMIT (bench/results/README.md); DEVICE from nvidia-smi.
DEVICE_TAG=${DEVICE_TAG:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')}
TAG="${DEVICE_TAG:-gpu}-$CAGRA_COMMIT"
J="$OUT/$NAME-$TAG.jsonl"
L="$OUT/$NAME.log"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }
pick() { for f in "$DATA/$1".u8bin "$DATA/$1".fbin "$DATA/$1".i8bin; do [ -s "$f" ] && { echo "$f"; return; }; done; }
base=$(pick base)
queries=$(pick query)
gt="$DATA/gt.ibin"
[ -n "$base" ] && [ -n "$queries" ] && [ -s "$gt" ] ||
  { echo "device-bench-real: $DATA lacks base.*, query.* or gt.ibin (stage it first: docs/datasets.md)"; exit 2; }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv || true
  echo "cores: $(nproc)"; lscpu | grep -E "Model name|^CPU\(s\)" || true
  echo "commit: $CAGRA_COMMIT; data: $base $queries $gt; metric $METRIC"
} >"$L" 2>&1

say "configure + build ($BUILD_DIR, CUDA sm_90, cagra_cli + hnswlib_peer)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_BENCH=ON -DHNSWLIB_INCLUDE_DIR="$PWD/third_party/include" \
  >"$W/build.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$JOBS" --target cagra_cli hnswlib_peer graph_metrics >>"$W/build.log" 2>&1 ||
  { say "build failed"; tail -30 "$W/build.log"; exit 1; }
C="$BUILD_DIR/cagra"

if [ "${SKIP_CAGRA:-0}" != 1 ]; then
say "device copy bandwidth (torch, 4 GiB device-to-device, CUDA events)"
python3 bench/copy_bandwidth.py 2>&1 | tee -a "$L"

say "exact GPU brute force (cuBLAS), k = 10 (as the other systems), checked against the staged ground truth"
"$C" gt "$base" "$queries" -k 10 -o "$W/gt-gpu.ibin" --metric "$METRIC" --backend cuda --force \
  --json "$J" --dataset "$NAME" 2>&1 | grep -vE "%" | tee -a "$L"
say "GPU brute force vs staged truth: $("$C" eval "$W/gt-gpu.ibin" "$gt" -k 10 2>&1 | tail -1)"

run_bench() { say "$1"; shift; "$C" bench "$@" 2>&1 | tee -a "$L" || rc=1; }
bench_index() {  # STORAGE LABEL
  local storage=$1 idx="$W/$NAME-$1.cagra"
  say "cagra build: degree $DEGREE, intermediate $INTERMEDIATE, storage $storage, backend ${BUILD_BACKEND:-auto}"
  "$C" build "$base" -o "$idx" --metric "$METRIC" --graph-degree "$DEGREE" --intermediate-degree "$INTERMEDIATE" \
    --storage "$storage" --backend "${BUILD_BACKEND:-auto}" --force --threads "$THREADS" >"$W/build-$storage.log" 2>&1 ||
    { say "index build failed"; tail "$W/build-$storage.log" | tee -a "$L"; rc=1; return; }
  grep -E "^(build|time)" "$W/build-$storage.log" | tee -a "$L"
  local build_s
  build_s=$(sed -n 's/.*total \([0-9.]*\) s.*/\1/p' "$W/build-$storage.log")
  local common=(--dataset "$NAME" --json "$J" -k 10 --build-s "$build_s")
  local trav=(--traversal "${TRAVERSAL:-exact}")
  run_bench "cuda $storage, batch 10000" "$idx" "$queries" "$gt" --backend cuda --repeat 5 \
    --itopk 16,20,24,28,32,40,48,64,96,128,192,256,384,512 --search-width 1,2 "${trav[@]}" "${common[@]}"
  run_bench "cuda $storage, batch 1, a launch per query" "$idx" "$queries" "$gt" --backend cuda \
    --batch 1 --persistent off --itopk 16,32,64,128 --search-width 4,8,16,32,64 "${trav[@]}" \
    "${common[@]}"
  # Every parameter but itopk at its default (the automatic width, CTA count and iterations):
  # what a user who sets nothing else gets (issue 18, "fast by default").
  run_bench "cuda $storage, batch 10000, defaults" "$idx" "$queries" "$gt" --backend cuda --repeat 5 \
    --itopk 16,20,24,28,32,40,48,64,96,128 "${common[@]}"
  run_bench "cuda $storage, batch 1, defaults but a launch per query" "$idx" "$queries" "$gt" \
    --backend cuda --batch 1 --persistent off --itopk 16,24,32,48,64 "${common[@]}"
  if [ "${SKIP_PERSISTENT:-0}" != 1 ]; then
    run_bench "cuda $storage, batch 1, defaults (persistent kernel)" "$idx" "$queries" "$gt" \
      --backend cuda --batch 1 --persistent on --itopk 16,24,32,48,64 "${common[@]}"
    run_bench "cuda $storage, batch 1, persistent kernel" "$idx" "$queries" "$gt" --backend cuda --batch 1 \
      --persistent on --itopk 16,32,64 --search-width 8,16,32,64 "${common[@]}"
    for it in 2 3; do
      run_bench "cuda $storage, batch 1, persistent kernel, $it iterations per CTA" "$idx" "$queries" "$gt" \
        --backend cuda --batch 1 --persistent on --itopk 16,32 --search-width 16,32,64 --max-iterations "$it" \
        "${common[@]}"
    done
  fi
  { [ "$storage" = f16 ] || [ "${SKIP_CPU:-0}" = 1 ]; } && return
  run_bench "cpu $storage ($THREADS threads), batch 10000, --stats" "$idx" "$queries" "$gt" --backend cpu \
    --threads "$THREADS" --repeat 2 --itopk 10,12,16,24,32,48,64,96,128,192,256 --stats "${common[@]}"
  run_bench "cpu $storage (1 thread), batch 1" "$idx" "$queries" "$gt" --backend cpu --batch 1 --repeat 3 \
    --itopk 10,12,16,24,32,48,64,96 "${common[@]}"
}
case "$base" in *.fbin) main_storage=f32 ;; *) main_storage=input ;; esac
bench_index "$main_storage"
fi

# The paper's search ablations on the same index (ABLATIONS=1), JSON lines in $OUT/NAME-ablations-DEVICE-COMMIT.jsonl:
# Q-B1 team size, Q-B2 forgettable vs standard hash (single-CTA), Q-B3 single vs multi-CTA by batch size.
if [ "${SKIP_CAGRA:-0}" != 1 ] && [ "${ABLATIONS:-0}" = 1 ] && [ $SECONDS -lt $((BUDGET_S - 120)) ]; then
  idx="$W/$NAME-$main_storage.cagra"
  A=(--dataset "$NAME" --json "$OUT/$NAME-ablations-$TAG.jsonl" -k 10)
  run_bench "Q-B1 team size (batch 10000, single-CTA)" "$idx" "$queries" "$gt" --backend cuda --repeat 3 \
    --itopk 32,64,128 --team-size 2,4,8,16,32 --algo single "${A[@]}"
  run_bench "Q-B2 standard hash (auto size)" "$idx" "$queries" "$gt" --backend cuda --repeat 3 \
    --itopk 32,64,128,256 --algo single "${A[@]}"
  for hb in 9 10 11; do
    for ri in 1 2 4; do
      run_bench "Q-B2 forgettable hash 2^$hb, reset every $ri" "$idx" "$queries" "$gt" --backend cuda --repeat 3 \
        --itopk 32,64,128,256 --algo single --hash-bits "$hb" --hash-reset-interval "$ri" "${A[@]}"
    done
  done
  for b in 1 10 100 1000 10000; do
    for algo in single multi; do
      [ $SECONDS -lt "$BUDGET_S" ] || break 2
      run_bench "Q-B3 batch $b, $algo-CTA" "$idx" "$queries" "$gt" --backend cuda --batch "$b" \
        --itopk 32,64,128 --algo "$algo" "${A[@]}"
    done
  done
fi

# The kNN graph's recall and the optimization steps' graph metrics (paper Q-A1/Q-A2) at the
# default degrees (64, intermediate 128), built on the GPU (GRAPH_METRICS=1).
if [ "${GRAPH_METRICS:-0}" = 1 ]; then
  say "graph metrics (GPU build, default degrees 64/128; 2-hop over 100,000 sampled nodes)"
  "$BUILD_DIR/graph_metrics" "$base" --graph-degree 64 --intermediate-degree 128 --metric "$METRIC" \
    --backend cuda --knn-recall 1000 --two-hop-samples 100000 --threads "$THREADS" --dataset "$NAME" \
    --json "$OUT/$NAME-graph-$TAG.jsonl" 2>&1 | tee -a "$L" || rc=1
fi

if [ "${SKIP_HNSW:-0}" != 1 ]; then
  say "hnswlib M=16 efC=200 ($THREADS threads; batch 1 on one thread)"
  "$BUILD_DIR/hnswlib_peer" "$base" "$queries" "$gt" --metric "$METRIC" --threads "$THREADS" --batch 0,1 \
    --ef "${HNSW_EF:-10,16,24,32,48,64,96,128,192,256,384,512}" --reps "${HNSW_REPS:-3}" \
    --dataset "$NAME" --json "$J" 2>&1 | tee -a "$L" || rc=1
fi

# faiss on the CPU (FAISS=1): HNSW-Flat (hnswlib's M and efConstruction) and IVF-Flat, all host
# threads, batch 1 on one thread over the first FAISS_BATCH1 queries. The machine has no network:
# the faiss-cpu wheel comes carried in stage/wheels/ (pip download faiss-cpu --no-deps) and is
# unpacked into /tmp/faiss-pkgs for the system's python (numpy >= 1.25 and packaging are there).
if [ "${FAISS:-0}" = 1 ]; then
  fpy() { PYTHONPATH=/tmp/faiss-pkgs${PYTHONPATH:+:$PYTHONPATH} python3 "$@"; }
  if ! fpy -c "import faiss" 2>/dev/null; then
    whl=$(ls stage/wheels/faiss_cpu-*.whl 2>/dev/null | head -1)
    { [ -n "$whl" ] && python3 -m pip install --quiet --no-index --no-deps --target /tmp/faiss-pkgs "$whl"; } \
      >"$W/faiss-install.log" 2>&1
  fi
  if fpy -c "import faiss" 2>/dev/null; then
    say "faiss HNSW-Flat (M=16 efC=200) and IVF-Flat ($THREADS threads; batch 1 on one thread, ${FAISS_BATCH1:-2000} queries)"
    fpy bench/faiss_peer.py "$base" "$queries" "$gt" --metric "$METRIC" --threads "$THREADS" \
      --batch 0,1 --batch1-queries "${FAISS_BATCH1:-2000}" --reps "${FAISS_REPS:-2}" \
      --ef "${HNSW_EF:-10,16,24,32,48,64,96,128,192,256,384,512}" \
      --nprobe 1,2,4,8,12,16,24,32,48,64,96,128,192,256 --dataset "$NAME" --json "$J" 2>&1 |
      tee -a "$L" || rc=1
  else
    say "faiss: not importable, and no wheel installed from stage/wheels/ ($(tail -1 "$W/faiss-install.log" 2>/dev/null))"
    rc=1
  fi
fi

if [ "${SKIP_CAGRA:-0}" != 1 ] && [ "${F16:-0}" = 1 ] && [ $SECONDS -lt $((BUDGET_S - 200)) ]; then
  bench_index f16
else
  say "f16 storage skipped (F16=${F16:-0} or budget)"
fi

say "== QPS at recall@10 ($NAME) =="
python3 bench/plot.py --qps-at 0.90,0.95,0.99 "$J" --dataset "$NAME" 2>&1 | tee -a "$L"
say "bench exit $rc; JSON lines: $(wc -l <"$J") in $J"
exit $rc
