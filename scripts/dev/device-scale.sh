#!/usr/bin/env bash
# Builds fitted into a device-memory budget (docs/large_builds.md; docs/benchmarks.md "Scale"),
# on the GPU machine, in steps (STEPS, default "tests lean1m synthetic"):
#   tests      build with CUDA; the CUDA build tests (CudaBuild.*: budgets, the lean pieces)
#   lean1m     SIFT-wall-1M (staged in $DATA_ROOT/sift-wall-1m by scripts/dev/stage.sh): the
#              one-pass build, then `--max-device-memory` at 1/4 and 1/16 of its device_bytes
#              (kNN in partitions; optimize on the device, or on the host), each searched by
#              `cagra bench` at batch 10K (itopk sweep); the 1/4 build with `--checkpoint`, twice
#              (the second resumes every partition)
#   synthetic  for each n in SIZES: SYNTHETIC clustered 96-d f32 rows
#              (bench/make_synthetic_large.py --model $SYN_MODEL, 10K queries, exact GPU ground
#              truth k = 10), the build as the plan fits it to the device
#              (`--max-device-memory $SYN_BUDGET` when set), then `cagra bench` at batch 10K;
#              with VARIANTS, one build + bench per variant
# Every build logs its plan, stage times, the peak device memory in use (nvidia-smi every
# 0.5 s) and the peak host memory (max RSS); results go to $OUT as JSON lines
# (scale-DATASET-DEVICE-COMMIT.jsonl, the bench's fields plus build fields) and logs.
#
#   OUT=$OUT CAGRA_COMMIT=<commit> STEPS="lean1m" bash scripts/dev/device-scale.sh
#
# Environment: BUILD_DIR (build-device), DATA_ROOT (/tmp/cagra-data), WORK_DIR (/tmp/cagra-scale),
# SIZES ("10000000 30000000"), SYN_BUDGET (empty: the free memory), SYN_MODEL (manifold: the
# data set is named synthetic-manifold-96d-N; patches: synthetic-96d-N, the model of the results
# before it), SYN_NOISE (the generator's noise per coordinate when set; the data set's name gets
# -noiseX), VARIANTS (builds of each size, ';'-separated "label:cagra build options", e.g.
# "onepass:;p3m:--partition-rows 3000000"; default one build with no options),
# PHASES (synthetic: "data build bench"; a subset runs those alone, e.g. over several commands),
# DROP_BASE (1: delete the base file once the build has read it, for disks that cannot hold it
# and the index), ITOPK (32,64,128,256),
# DEGREE (32), BUDGET_S (560: no new build starts past it).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
BUILD_DIR=${BUILD_DIR:-build-device}
DATA_ROOT=${DATA_ROOT:-/tmp/cagra-data}
W=${WORK_DIR:-/tmp/cagra-scale}
STEPS=${STEPS:-"tests lean1m synthetic"}
SIZES=${SIZES:-"10000000 30000000"}
ITOPK=${ITOPK:-32,64,128,256}
DEGREE=${DEGREE:-32}
BUDGET_S=${BUDGET_S:-560}
PHASES=${PHASES:-"data build bench"}
mkdir -p "$OUT" "$W"
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DEVICE_TAG=${DEVICE_TAG:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')}
TAG="${DEVICE_TAG:-gpu}-$CAGRA_COMMIT"
L="$OUT/scale-$TAG.log"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }
has() { [[ " $STEPS " == *" $1 "* ]]; }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  echo "cores: $(nproc), host memory: $(free -g | awk '/Mem:/ {print $2}') GiB"
} >>"$L" 2>&1

say "configure + build ($BUILD_DIR, CUDA sm_90)"
targets="cagra_cli"
has tests && targets="$targets cagra_cuda_tests"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 >"$W/build.log" 2>&1 &&
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target $targets >>"$W/build.log" 2>&1 ||
  { say "build failed"; tail -30 "$W/build.log" | tee -a "$L"; exit 1; }
C="$BUILD_DIR/cagra"

if has tests; then
  say "CUDA tests: CudaBuild.*"
  "$BUILD_DIR/tests/cagra_cuda_tests" --gtest_filter='CudaBuild.*' >"$OUT/cuda-tests-build-$TAG.txt" 2>&1
  say "tests rc=$?: $(grep -E '^\[  (PASSED|FAILED)' "$OUT/cuda-tests-build-$TAG.txt" | tr '\n' ' ')"
  grep -E "^\[build\]|FAILED" "$OUT/cuda-tests-build-$TAG.txt" | tee -a "$L"
fi

# build NAME BASE EXTRA...: cagra build with the device's memory in use sampled, the host's max
# RSS measured; prints the CLI's lines into the log and sets BUILD_S, DEV_PEAK_MIB, HOST_PEAK_GIB.
build() {
  local name=$1 base=$2
  shift 2
  local idx="$W/$name.cagra" smi="$W/$name.smi"
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 >"$smi" 2>/dev/null &
  local smi_pid=$!
  python3 - "$W/$name.rss" "$C" build "$base" -o "$idx" --backend cuda --graph-degree "$DEGREE" \
    --force --explain "$@" >"$W/$name.build.log" 2>&1 <<'EOF'
import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:]).returncode
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(rc)
EOF
  local rc=$?
  kill "$smi_pid" 2>/dev/null
  wait "$smi_pid" 2>/dev/null
  grep -vE "%|^build:" "$W/$name.build.log" | tee -a "$L"
  build_stats "$name"
  say "$name: build rc=$rc, ${BUILD_S:-?} s, device peak ${DEV_PEAK_MIB:-?} MiB in use (whole device), host peak ${HOST_PEAK_GIB:-?} GiB"
  return $rc
}

# build_stats NAME: BUILD_S, DEV_PEAK_MIB, HOST_PEAK_GIB of a finished build (its files in $W).
build_stats() {
  DEV_PEAK_MIB=$(sort -n "$W/$1.smi" | tail -1)
  HOST_PEAK_GIB=$(awk '{printf "%.1f", $1 / 1048576}' "$W/$1.rss" 2>/dev/null)
  BUILD_S=$(sed -n 's/^time .*total \([0-9.]*\) s.*/\1/p' "$W/$1.build.log")
}

# bench NAME QUERIES GT DATASET JSON: batch 10K sweep of $W/NAME.cagra.
bench() {
  local name=$1 q=$2 gt=$3 ds=$4 j=$5
  "$C" bench "$W/$name.cagra" "$q" "$gt" -k 10 --itopk "$ITOPK" --repeat 3 --backend cuda \
    --dataset "$ds" --build-s "${BUILD_S:-0}" --json "$W/$name.jsonl" 2>&1 | grep -v "%" | tee -a "$L"
  # The build's fields added to each point.
  python3 - "$W/$name.jsonl" "$j" "$name" "${BUILD_S:-0}" "${DEV_PEAK_MIB:-0}" "${HOST_PEAK_GIB:-0}" \
    "$W/$name.build.log" <<'EOF'
import json, re, sys
src, dst, name, build_s, dev, host, log = sys.argv[1:]
plan = ""
for line in open(log):
    if line.startswith("plan:"):
        plan = line[5:].strip()
with open(dst, "a") as out:
    for line in open(src):
        o = json.loads(line)
        o["build"] = {"name": name, "build_s": float(build_s), "device_peak_mib": int(dev or 0),
                      "host_peak_gib": float(host or 0), "plan": plan}
        out.write(json.dumps(o) + "\n")
EOF
  rm -f "$W/$name.jsonl"
}

if has lean1m; then
  D="$DATA_ROOT/sift-wall-1m"
  J="$OUT/scale-sift-wall-1m-$TAG.jsonl"
  if [ ! -s "$D/base.u8bin" ]; then
    say "lean1m: $D/base.u8bin missing (stage it: scripts/dev/stage.sh receive sift-wall-1m)"
  else
    [ -s "$W/sift-gt.ibin" ] || "$C" gt "$D/base.u8bin" "$D/query.u8bin" -k 10 -o "$W/sift-gt.ibin" \
      --backend cuda --force >"$W/sift-gt.log" 2>&1
    build sift-onepass "$D/base.u8bin" && bench sift-onepass "$D/query.u8bin" "$W/sift-gt.ibin" sift-wall-1m "$J"
    need=$(sed -n 's/^plan: .*device_bytes=\([0-9]*\).*/\1/p' "$W/sift-onepass.build.log")
    quarter=$((need / 4))
    say "lean1m: one-pass device_bytes $need, budget $quarter (1/4)"
    build sift-quarter "$D/base.u8bin" --max-device-memory "$quarter" &&
      bench sift-quarter "$D/query.u8bin" "$W/sift-gt.ibin" sift-wall-1m "$J"
    # 1/16: partitions of a few ten thousand rows, and no room for the kNN ids (optimize on the
    # host).
    build sift-sixteenth "$D/base.u8bin" --max-device-memory $((need / 16)) &&
      bench sift-sixteenth "$D/query.u8bin" "$W/sift-gt.ibin" sift-wall-1m "$J"
    # Checkpoints: the quarter build into a folder, then again (every partition resumed).
    rm -rf "$W/ckpt"
    build sift-ckpt-first "$D/base.u8bin" --max-device-memory "$quarter" --checkpoint "$W/ckpt"
    build sift-ckpt-resumed "$D/base.u8bin" --max-device-memory "$quarter" --checkpoint "$W/ckpt"
    say "checkpoint folder: $(du -sh "$W/ckpt" | cut -f1), $(ls "$W/ckpt" | wc -l) files"
  fi
fi

if has synthetic; then
  for n in $SIZES; do
    [ $SECONDS -lt "$BUDGET_S" ] || { say "budget: $n rows and larger skipped"; break; }
    model=${SYN_MODEL:-manifold}
    sname="synthetic-96d${SYN_NOISE:+-noise$SYN_NOISE}"
    [ "$model" = patches ] || sname="synthetic-$model-96d${SYN_NOISE:+-noise$SYN_NOISE}"
    D="$W/$sname-$n"
    J="$OUT/scale-$sname-$TAG.jsonl"
    if [[ " $PHASES " == *" data "* && ! -e "$D/done" ]]; then
      python3 bench/make_synthetic_large.py "$D" --model "$model" --n "$n" --queries 10000 \
        --dim 96 ${SYN_NOISE:+--noise "$SYN_NOISE"} --workers "$(nproc)" 2>&1 | tee -a "$L" &&
        touch "$D/done" || { say "generator failed"; continue; }
    fi
    if [[ " $PHASES " == *" data "* && ! -s "$D/gt.ibin" ]]; then
      t0=$SECONDS
      "$C" gt "$D/base.fbin" "$D/query.fbin" -k 10 -o "$D/gt.ibin" --backend cuda --force \
        >"$D/gt.log" 2>&1 || { say "gt failed: $(tail -1 "$D/gt.log")"; continue; }
      say "ground truth of $n rows: $((SECONDS - t0)) s"
    fi
    IFS=';' read -r -a variants <<<"${VARIANTS:-:}"
    for variant in "${variants[@]}"; do
      label=${variant%%:*}
      read -r -a vargs <<<"${variant#*:}"
      bname="$sname-$n${label:+-$label}"
      if [[ " $PHASES " == *" build "* ]]; then
        extra=("${vargs[@]}")
        [ -n "${SYN_BUDGET:-}" ] && extra+=(--max-device-memory "$SYN_BUDGET")
        [ -s "$D/base.fbin" ] || { say "$D/base.fbin missing: run the data phase first"; break; }
        [ $SECONDS -lt "$BUDGET_S" ] || { say "budget: $bname skipped"; break; }
        watcher=
        if [ -n "${DROP_BASE:-}" ]; then
          # The rows are in the build's memory once it prints its dataset line: the file goes,
          # making room on the disk for the index. (No output: a background job holding the
          # script's stdout would keep a pipe reading it open.)
          rm -f "$W/$bname.build.log"
          (for _ in $(seq 600); do
            grep -q "^dataset" "$W/$bname.build.log" 2>/dev/null && { rm -f "$D/base.fbin"; break; }
            sleep 1
          done) >/dev/null 2>&1 &
          watcher=$!
        fi
        build "$bname" "$D/base.fbin" "${extra[@]}"
        rc=$?
        [ -n "$watcher" ] && kill "$watcher" 2>/dev/null
        [ $rc -eq 0 ] || continue
      fi
      if [[ " $PHASES " == *" bench "* ]]; then
        build_stats "$bname"
        bench "$bname" "$D/query.fbin" "$D/gt.ibin" "$sname-$n" "$J"
        rm -f "$W/$bname.cagra"
      fi
    done
  done
fi
say "done: $(ls "$OUT")"
