#!/usr/bin/env bash
# Where one GPU's batch search spends its time (issue 18 item 4, and issue 19's per-GPU slice of a
# replicated batch), on a staged 1M set (scripts/dev/stage.sh; default SIFT-wall-1M): builds the
# CLI, the exact ground truth (when the stage has none) and one index (degree 32), then
#  1. `cagra bench` at each batch of $BATCHES queries a call (the host call: copies and the
#     host-side result handling included), for each kernel in $ALGOS (auto: the default plan;
#     single: at each search width of $WIDTHS; multi: the automatic CTA count), plan printed;
#  2. Nsight Compute on one search launch at each batch of $NCU_BATCHES: duration, DRAM and L2
#     bytes, occupancy, waves per SM, issue activity and warp stall reasons (clocks left alone);
#  3. the device-to-device copy bandwidth (bench/copy_bandwidth.py), the ceiling to quote against;
#  4. (step `source`, not by default) a CLI built with -lineinfo in $BUILD_DIR-lineinfo and one
#     profile of the first single-CTA launch of a $SOURCE_BATCH-query call with warp-stall
#     sampling, exported per CUDA source line (ncu --page source --csv) to source-BATCH.csv.
# `--stats` adds the counted bytes per query (CPU pass) to the bench lines. Everything goes to $OUT:
# profile.log (the summary), profile-NAME-DEVICE-COMMIT.jsonl, and the bench-*.log and ncu-*.txt
# files packed in profile-logs.tar.gz (the device tool returns few files).
#
# Environment: OUT (/tmp/out), NAME (sift-wall-1m), METRIC (l2; cosine for the text sets),
# DATA_ROOT (/tmp/cagra-data), BUILD_DIR (build-device), ITOPK (32), BATCHES (1250,2500,5000,10000,20000), ALGOS (auto single multi),
# WIDTHS (1,2,4), TEAMS (0 = automatic; e.g. 2,4,8: with width 2 on 128-d bytes, CTAs of 64, 128,
# 256 threads), SAMPLINGS (0 = automatic; e.g. 0,1,2,3: random draws per initial slot, swept by
# every bench), NCU_BATCHES (2500 10000; "" skips ncu; the launch the default plan makes),
# STEPS (build,bench,ncu,copy; add source), SOURCE_BATCH (2000: one launch a call), CAGRA_COMMIT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
NAME=${NAME:-sift-wall-1m}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
BUILD_DIR=${BUILD_DIR:-build-device}
ITOPK=${ITOPK:-32}
BATCHES=${BATCHES:-1250,2500,5000,10000,20000}
ALGOS=${ALGOS:-auto single multi}
WIDTHS=${WIDTHS:-1,2,4}
TEAMS=${TEAMS:-0}
SAMPLINGS=${SAMPLINGS:-0}
NCU_BATCHES=${NCU_BATCHES-2500 10000}
STEPS=,${STEPS:-build,bench,ncu,copy},
W=/tmp/cagra-profile
mkdir -p "$OUT" "$W"
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DEVICE_TAG=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')
J="$OUT/profile-$NAME-${DEVICE_TAG:-gpu}-$CAGRA_COMMIT.jsonl"
L="$OUT/profile.log"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }
has() { [[ $STEPS == *",$1,"* ]]; }
say "$(nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | head -1)"

if has build; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 >"$W/build.log" 2>&1 &&
    cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cli >>"$W/build.log" 2>&1 ||
    { say "build failed"; tail -30 "$W/build.log"; exit 1; }
fi
CLI=${CLI:-$BUILD_DIR/cagra}
pick() { for f in "$DATA/$1".u8bin "$DATA/$1".fbin; do [ -s "$f" ] && { echo "$f"; return; }; done; }
base=$(pick base) queries=$(pick query) gt="$DATA/gt.ibin"
[[ -n $base && -n $queries ]] || { say "no staged data in $DATA"; exit 1; }
if [[ ! -s $gt ]]; then
  gt="$W/$NAME-gt.ibin"
  [[ -s $gt ]] || "$CLI" gt "$base" "$queries" -k 100 -o "$gt" --backend cuda 2>&1 | tail -1 | tee -a "$L"
fi
idx="$W/$NAME-${METRIC:-l2}-d32.cagra"
[[ -s $idx ]] || "$CLI" build "$base" -o "$idx" --graph-degree 32 --metric "${METRIC:-l2}" --backend cuda 2>&1 |
  grep -E "^time|^build" | tee -a "$L"

if has bench; then
  for algo in $ALGOS; do
    for b in ${BATCHES//,/ }; do
      say "bench: algo $algo, $b queries a call, itopk $ITOPK"
      shape=(--random-samplings "$SAMPLINGS")
      [ "$algo" = auto ] || shape+=(--algo "$algo")
      [ "$algo" = single ] && shape+=(--search-width "$WIDTHS" --team-size "$TEAMS")
      "$CLI" bench "$idx" "$queries" "$gt" --backend cuda "${shape[@]}" --itopk "$ITOPK" \
        --batch "$b" --repeat 5 --explain --json "$J" --dataset "$NAME" \
        >"$OUT/bench-$algo-$b.log" 2>&1
      grep -E "^ *[0-9]+ " "$OUT/bench-$algo-$b.log" | tee -a "$L"
    done
  done
  say "counted bytes per query (CPU pass, --stats)"
  "$CLI" bench "$idx" "$queries" "$gt" --backend cuda --itopk "$ITOPK" --stats --repeat 1 \
    >"$OUT/bench-stats.log" 2>&1
  tail -4 "$OUT/bench-stats.log" | tee -a "$L"
fi

if has ncu && [[ -n $NCU_BATCHES ]]; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  nq=$(od -An -t u4 -N4 "$queries" | tr -d ' ')
  for b in $NCU_BATCHES; do
    # A call of b >= 2048 queries makes one launch per chunk (the copy pipeline,
    # src/cuda/search/copy_pipeline.cu: chunks of max(b / 4, 1024) queries); the bench's untimed
    # pass makes nq / b calls; every launch of the first timed call is profiled.
    per_call=1
    ((b >= 2048)) && { c=$(((b + 3) / 4)); ((c < 1024)) && c=1024; per_call=$(((b + c - 1) / c)); }
    skip=$(((nq + b - 1) / b * per_call))
    say "ncu: the $per_call single-CTA launches of a $b-query call, default plan (skip $skip)"
    "$NCU" --clock-control none --kernel-name regex:single_cta_search --launch-skip "$skip" \
      --launch-count "$per_call" --section SpeedOfLight --section LaunchStats --section Occupancy \
      --section MemoryWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
      --section ComputeWorkloadAnalysis \
      --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,gpu__time_duration.sum,launch__waves_per_multiprocessor,sm__cycles_active.avg \
      "$CLI" bench "$idx" "$queries" "$gt" --backend cuda --itopk "$ITOPK" \
      --batch "$b" --repeat 1 >"$OUT/ncu-$b.txt" 2>&1
    grep -E "Duration|DRAM Throughput|dram__bytes_read.sum|lts__t_bytes.sum|Waves Per SM|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Block Limit|Registers Per|Memory Throughput|L2 Hit|Compute \(SM\) Throughput" \
      "$OUT/ncu-$b.txt" | tee -a "$L"
  done
fi

if has source; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  LB="$BUILD_DIR-lineinfo"
  cmake -S . -B "$LB" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_FLAGS=-lineinfo >"$W/build-lineinfo.log" 2>&1 &&
    cmake --build "$LB" -j "$(nproc)" --target cagra_cli >>"$W/build-lineinfo.log" 2>&1 ||
    { say "lineinfo build failed"; tail -20 "$W/build-lineinfo.log"; }
  sb=${SOURCE_BATCH:-2000}
  nq=$(od -An -t u4 -N4 "$queries" | tr -d ' ')
  say "ncu source: the first timed launch of a $sb-query call (default plan)"
  "$NCU" --clock-control none --kernel-name regex:single_cta_search \
    --launch-skip $(((nq + sb - 1) / sb)) --launch-count 1 --set full --import-source yes \
    -f -o "$W/source" "$LB/cagra" bench "$idx" "$queries" "$gt" --backend cuda --itopk "$ITOPK" \
    --batch "$sb" --repeat 1 >"$OUT/ncu-source.txt" 2>&1
  "$NCU" --import "$W/source.ncu-rep" --page source --csv --print-source cuda \
    >"$OUT/source-$sb.csv" 2>>"$OUT/ncu-source.txt"
  say "source-$sb.csv: $(wc -l <"$OUT/source-$sb.csv") lines"
fi

if has copy; then
  python3 bench/copy_bandwidth.py 2>&1 | tail -1 | tee -a "$L"
fi
(cd "$OUT" && tar czf profile-logs.tar.gz bench-*.log ncu-*.txt source-*.csv 2>/dev/null;
  rm -f bench-*.log ncu-*.txt source-*.csv)
say "done: $J"
