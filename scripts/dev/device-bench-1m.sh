#!/usr/bin/env bash
# 1M-scale benchmark on the GPU machine over a SYNTHETIC dataset (labeled synthetic: the real
# 1M sets are not here yet). One run, one machine: bench/make_synthetic.py draws 1,000,000 x 128
# f32 base vectors and 10,000 held-out queries from 1,000 low-rank Gaussian clusters (seed 1) into
# $WORK_DIR; exact ground truth by `cagra gt` on the CPU (`--backend cuda` timed and compared
# beside it); `cagra build` (degree 32, intermediate 64, all host threads); then the CUDA backend
# at batch 10K (itopk 16..1024; > 512 is the multi-CTA kernel) and batch 1 (itopk 16..256), our CPU backend at batch 10K on all host threads
# with --stats (distance computations and bytes per query at each itopk), hnswlib (M=16,
# efConstruction=200, all threads, batch 10K and 1), and a device-to-device copy bandwidth
# measurement (torch, CUDA events). JSON lines to $OUT/synthetic-1m-DEVICE-COMMIT.jsonl (dataset name
# "synthetic-1m-clustered") and one log $OUT/bench-1m.log (the tool returns at most 8 files), the
# QPS-at-recall table printed last. f16 storage (another index build) follows unless SKIP_F16=1.
# Run as: OUT=$OUT CAGRA_COMMIT=<commit> bash scripts/dev/device-bench-1m.sh   (carry third_party/)
#
# Needs: third_party/include/hnswlib (carried; bash scripts/dev/fetch_hnswlib.sh), python3 + numpy
# (torch for the bandwidth line) on the machine. Environment: OUT, BUILD_DIR (build-device),
# THREADS, WORK_DIR (/tmp/cagra-1m), NQ (10000), SPREAD (0.15), RANK (8), SKIP_F16, BUDGET_S (560: optional steps are skipped past it).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
BUILD_DIR=${BUILD_DIR:-build-device}
JOBS=${JOBS:-$(nproc)}
THREADS=${THREADS:-$(nproc)}
W=${WORK_DIR:-/tmp/cagra-1m}
NQ=${NQ:-10000}
SPREAD=${SPREAD:-0.15}   # generator: scale of the cluster centers (smaller = more overlap)
RANK=${RANK:-8}         # generator: intrinsic dimension of each cluster
BUDGET_S=${BUDGET_S:-560}
DS=synthetic-1m-clustered
mkdir -p "$OUT" "$W"
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
# Result files are named DATASET-DEVICE-COMMIT (bench/results/README.md); DEVICE from nvidia-smi.
DEVICE_TAG=${DEVICE_TAG:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')}
TAG="${DEVICE_TAG:-gpu}-$CAGRA_COMMIT"
J="$OUT/synthetic-1m-$TAG.jsonl"
L="$OUT/bench-1m.log"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv || true
  echo "cores: $(nproc)"; lscpu | grep -E "Model name|^CPU\(s\)" || true
  echo "commit: $CAGRA_COMMIT (+ working tree)"
} >"$L" 2>&1

# The data (numpy, mostly one core) while the build takes the others.
if [ ! -s "$W/base.fbin" ]; then
  python3 bench/make_synthetic.py "$W" --n 1000000 --queries "$NQ" --dim 128 --clusters 1000 \
    --spread "$SPREAD" --rank "$RANK" --seed 1 >"$W/make-synthetic.log" 2>&1 &
  gen_pid=$!
fi
say "configure + build ($BUILD_DIR, CUDA sm_90, bench targets)"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_BENCH=ON -DHNSWLIB_INCLUDE_DIR="$PWD/third_party/include" \
  >"$W/build-1m.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$JOBS" --target cagra_cli hnswlib_peer >>"$W/build-1m.log" 2>&1 ||
  { say "build failed"; tail -30 "$W/build-1m.log"; exit 1; }
[ -n "${gen_pid:-}" ] && { wait "$gen_pid" || { say "generator failed"; cat "$W/make-synthetic.log"; exit 1; }; }
say "$(cat "$W/make-synthetic.log" 2>/dev/null)"
C="$BUILD_DIR/cagra"
base="$W/base.fbin"
queries="$W/query.fbin"

say "device copy bandwidth (torch, 4 GiB device-to-device, CUDA events)"
python3 bench/copy_bandwidth.py 2>&1 | tee -a "$L"

# Exact ground truth by the CPU (the reference); `cagra gt --backend cuda` (new, another helper's
# work) is timed beside it and compared, when the option works.
if [ ! -s "$W/gt.ibin" ]; then
  t0=$SECONDS
  if timeout 120 "$C" gt "$base" "$queries" -k 100 -o "$W/gt-cuda.ibin" --backend cuda --force >"$W/gt.log" 2>&1; then
    say "ground truth: cagra gt --backend cuda, $((SECONDS - t0)) s for $NQ queries"
  else
    say "ground truth: --backend cuda failed or timed out ($(tail -1 "$W/gt.log"))"
  fi
  t0=$SECONDS
  "$C" gt "$base" "$queries" -k 100 -o "$W/gt.ibin" --backend cpu --threads "$THREADS" --force \
    >>"$W/gt.log" 2>&1 || { say "ground truth failed"; tail "$W/gt.log"; exit 1; }
  say "ground truth: cagra gt --backend cpu --threads $THREADS, $((SECONDS - t0)) s for $NQ queries"
  grep -vh "%" "$W/gt.log" >>"$L"
  [ -s "$W/gt-cuda.ibin" ] && say "cuda vs cpu ground truth files: $(cmp -s "$W/gt.ibin" "$W/gt-cuda.ibin" && echo identical || echo "differ; cuda's $("$C" eval "$W/gt-cuda.ibin" "$W/gt.ibin" -k 10) and $("$C" eval "$W/gt-cuda.ibin" "$W/gt.ibin" -k 100) against the cpu's")"
fi

idx="$W/syn-f32.cagra"
say "cagra build: degree 32, intermediate 64, $THREADS threads"
"$C" build "$base" -o "$idx" --graph-degree 32 --intermediate-degree 64 --storage f32 --force \
  --threads "$THREADS" >"$W/build-index-f32.log" 2>&1 || { say "index build failed"; tail "$W/build-index-f32.log"; exit 1; }
build_s=$(sed -n 's/.*total \([0-9.]*\) s.*/\1/p' "$W/build-index-f32.log")
say "$(grep -E '^(build|time)' "$W/build-index-f32.log" | tr '\n' ' ')"

rc=0
common=(--dataset "$DS" --json "$J" -k 10 --build-s "$build_s")
ITOPK=16,24,32,48,64,96,128,192,256,384,512,768,1024
bench() { say "$1"; shift; "$C" bench "$@" "${common[@]}" 2>&1 | tee -a "$L" || rc=1; }
bench "cuda f32, batch 10000, width 1" "$idx" "$queries" "$W/gt.ibin" --backend cuda --repeat 5 --itopk "$ITOPK"
bench "cuda f32, batch 1" "$idx" "$queries" "$W/gt.ibin" --backend cuda --batch 1 --itopk 16,32,64,128,256
bench "cpu f32 ($THREADS threads), batch 10000, with --stats" "$idx" "$queries" "$W/gt.ibin" \
  --backend cpu --threads "$THREADS" --repeat 2 --itopk "$ITOPK" --stats

say "hnswlib M=16 efC=200 ($THREADS threads; batch 1 on one thread)"
"$BUILD_DIR/hnswlib_peer" "$base" "$queries" "$W/gt.ibin" --threads "$THREADS" --batch 0,1 \
  --ef 10,16,24,32,48,64,96,128,192,256,384,512 --dataset "$DS" --json "$J" 2>&1 | tee -a "$L" || rc=1

# Optional: FP16 storage (another kNN build), only while the budget lasts.
if [ "${SKIP_F16:-0}" != 1 ] && [ $SECONDS -lt $((BUDGET_S - 240)) ]; then
  idx16="$W/syn-f16.cagra"
  say "cagra build --storage f16"
  if "$C" build "$base" -o "$idx16" --graph-degree 32 --intermediate-degree 64 --storage f16 --force \
    --threads "$THREADS" >"$W/build-index-f16.log" 2>&1; then
    b16=$(sed -n 's/.*total \([0-9.]*\) s.*/\1/p' "$W/build-index-f16.log")
    common=(--dataset "$DS" --json "$J" -k 10 --build-s "$b16")
    bench "cuda f16, batch 10000" "$idx16" "$queries" "$W/gt.ibin" --backend cuda --repeat 5 --itopk "$ITOPK"
    [ $SECONDS -lt "$BUDGET_S" ] && bench "cuda f16, batch 1" "$idx16" "$queries" "$W/gt.ibin" --backend cuda --batch 1 --itopk 16,32,64,128
    [ $SECONDS -lt "$BUDGET_S" ] && bench "cpu f16 stats" "$idx16" "$queries" "$W/gt.ibin" --backend cpu --threads "$THREADS" --itopk "$ITOPK" --stats
  fi
else
  say "f16 storage skipped (budget)"
fi

say "== QPS at recall@10 ($DS, SYNTHETIC) =="
python3 bench/plot.py --qps-at 0.90,0.95,0.99 "$J" --dataset "$DS" 2>&1 | tee -a "$L"
say "bench exit $rc; JSON lines: $(wc -l <"$J") in $J"
exit $rc
