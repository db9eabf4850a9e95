#!/usr/bin/env bash
# NVIDIA cuVS CAGRA as a peer benchmark on the GPU machine, on a staged 1M set (default
# SIFT-wall-1M): installs the cuVS wheels staged as cuvs-wheels (scripts/dev/cuvs-wheels.sh packs
# them here; the machine has no network) into $CUVS_SITE with pip --no-index --no-deps, next to the
# CUDA libraries that PyTorch cu130 installed (cuBLAS, cuSOLVER, cuSPARSE, cuRAND, NVRTC, NCCL),
# then
#  1. gt: the exact ground truth when the stage has none (the repo CLI, `cagra gt --backend cuda`,
#     built here as scripts/dev/device-profile.sh builds it; an earlier script's file is reused);
#  2. py: bench/cuvs_peer.py, cuvs.neighbors.cagra from Python: one build per graph degree of
#     $DEGREES (intermediate 2x, NN-descent) and one at cuVS's defaults, itopk x width sweeps in
#     calls of $BATCH queries, queries on the device and copied from the host ($IO);
#  3. c: bench/cuvs_c_peer.c against libcuvs_c (cuVS's C API), compiled here, batch 1: one
#     cuvsCagraSearch + cuvsStreamSync a query.
# JSON lines (the layout of `cagra bench`, systems cuvs-cagra and cuvs-cagra-c) go to
# $OUT/cuvs-NAME-DEVICE-COMMIT.jsonl, the summary to $OUT/cuvs.log, every other log into
# $OUT/cuvs-logs.tar.gz (the device tool returns few files).
#
# Before it, one device call per piece (each carrying stage/cuvs-wheels/manifest.sha256 and one
# stage/cuvs-wheels/part-NN), on the same warm machine:
#   bash scripts/dev/stage.sh receive cuvs-wheels
# and the data set likewise (stage/NAME: docs/datasets.md). A call runs at most 10 minutes: when
# the CLI must be built for the ground truth, run STEPS=install,gt first, then STEPS=py,c.
#
# libcuvs 26.10 was built with CUDA 13.3 and links its CAGRA search kernels at run time with
# nvJitLink, which must be at least that new (libcuvs.so imports __nvJitLink*_13_3 symbols: with an
# older libnvJitLink it does not load): the staged nvidia-nvjitlink 13.3 goes into $CUVS_SITE and
# its folder comes first on LD_LIBRARY_PATH, before PyTorch's (logged: presumably 13.0);
# cuvs_peer.py imports cuvs before anything else can load another libnvJitLink.
#
# Environment: OUT (/tmp/out), NAME (sift-wall-1m), METRIC (l2), DATA_ROOT (/tmp/cagra-data),
# WHEELS ($DATA_ROOT/cuvs-wheels), CUVS_SITE (/tmp/cuvs-site), BUILD_DIR (build-device), GT (an
# existing ground-truth .ibin), DEGREES (32,64), ITOPK (32,64,96,128,192,256), WIDTHS (1,2), BATCH
# (10000), IO (device,copy), REPS (5), DEFAULTS (1: also the cuVS-defaults point), C_DEGREES (32),
# C_ITOPK (32,64,128), C_REPS (3), C_PERSISTENT (0; 1 adds a pass with cuVS's persistent kernel),
# STEPS (install,gt,py,c; add ncu for Nsight Compute on one search call: NCU_DEGREE 32, NCU_ITOPK
# 32, NCU_WIDTH 1, NCU_KERNEL regex "search", NCU_SKIP 1, NCU_COUNT 1), CAGRA_COMMIT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
NAME=${NAME:-sift-wall-1m}
METRIC=${METRIC:-l2}
DATA_ROOT=${DATA_ROOT:-/tmp/cagra-data}
DATA=$DATA_ROOT/$NAME
WHEELS=${WHEELS:-$DATA_ROOT/cuvs-wheels}
CUVS_SITE=${CUVS_SITE:-/tmp/cuvs-site}
BUILD_DIR=${BUILD_DIR:-build-device}
DEGREES=${DEGREES:-32,64}
ITOPK=${ITOPK:-32,64,96,128,192,256}
WIDTHS=${WIDTHS:-1,2}
BATCH=${BATCH:-10000}
IO=${IO:-device,copy}
REPS=${REPS:-5}
C_DEGREES=${C_DEGREES:-32}
C_ITOPK=${C_ITOPK:-32,64,128}
C_REPS=${C_REPS:-3}
STEPS=,${STEPS:-install,gt,py,c},
W=/tmp/cagra-cuvs
mkdir -p "$OUT" "$W"
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DEVICE_TAG=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')
J="$OUT/cuvs-$NAME-${DEVICE_TAG:-gpu}-$CAGRA_COMMIT.jsonl"
L="$OUT/cuvs.log"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }
has() { [[ $STEPS == *",$1,"* ]]; }
summary=()
failed=0
# note NAME RC: one summary line per step.
note() {
  summary+=("$(printf '%-10s %s' "$1" "$([ "$2" -eq 0 ] && echo ok || echo "FAILED rc=$2")")")
  [ "$2" -eq 0 ] || failed=1
}
pack_logs() {
  (cd "$W" && shopt -s nullglob && f=(*.log *.txt) && ((${#f[@]})) &&
    tar czf "$OUT/cuvs-logs.tar.gz" "${f[@]}") || true
}
finish() {
  pack_logs
  say "== summary ($NAME, commit $CAGRA_COMMIT) =="
  for s in "${summary[@]}"; do say "  $s"; done
  [ -s "$J" ] && say "JSON lines: $(wc -l <"$J") in $J"
  exit $failed
}
say "$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader |
  head -1); python3 $(python3 -c 'import sys; print(sys.version.split()[0])'); steps ${STEPS//,/ }"

# --- the environment: cuVS's libraries first, then PyTorch's nvidia/*/lib folders ---------------
SITES=$(python3 -c 'import site, sysconfig
seen = []
for p in site.getsitepackages() + [sysconfig.get_paths()["purelib"]]:
    if p not in seen:
        seen.append(p)
print(" ".join(seen))')
torch_libs=()
for sp in $SITES; do
  for d in "$sp"/nvidia/cu13/lib "$sp"/nvidia/*/lib; do
    [ -d "$d" ] && [[ " ${torch_libs[*]} " != *" $d "* ]] && torch_libs+=("$d")
  done
done
cuvs_libs=("$CUVS_SITE/nvidia/cu13/lib" "$CUVS_SITE/libcuvs/lib64" "$CUVS_SITE/libraft/lib64"
  "$CUVS_SITE/librmm/lib64" "$CUVS_SITE/libkvikio/lib64" "$CUVS_SITE/rapids_logger/lib64")
LIBPATH=$(IFS=:; echo "${cuvs_libs[*]}${torch_libs[*]:+:${torch_libs[*]}}")
export LD_LIBRARY_PATH="$LIBPATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PYTHONPATH="$CUVS_SITE${PYTHONPATH:+:$PYTHONPATH}"

# pip_version DIST: the installed version of DIST on the image (without $CUVS_SITE), or 0.
pip_version() {
  env -u PYTHONPATH python3 -c "import importlib.metadata as m, sys
try: print(m.version(sys.argv[1]))
except m.PackageNotFoundError: print(0)" "$1"
}
# at_least V MIN: V >= MIN, comparing the leading numbers.
at_least() {
  python3 -c "import re, sys
v = [int(x) for x in re.findall(r'\d+', sys.argv[1])[:3]]
m = [int(x) for x in re.findall(r'\d+', sys.argv[2])[:3]]
sys.exit(0 if v >= m else 1)" "$1" "$2"
}

if has install; then
  if [ -f "$CUVS_SITE/.installed" ] && cmp -s "$WHEELS/.staged" "$CUVS_SITE/.installed"; then
    say "install: $CUVS_SITE is up to date"
    note install 0
  elif ! ls "$WHEELS"/libcuvs_cu13-*.whl >/dev/null 2>&1; then
    say "install: no wheels in $WHEELS (bash scripts/dev/stage.sh receive cuvs-wheels, per piece)"
    note install 1
    finish
  else
    whl=()
    for p in cuvs_cu13 libcuvs_cu13 pylibraft_cu13 libraft_cu13 rmm_cu13 librmm_cu13 libkvikio_cu13 \
      rapids_logger nvidia_nvjitlink; do
      whl+=("$(ls "$WHEELS/$p"-*.whl | head -1)")
    done
    img_nvjitlink=$(pip_version nvidia-nvjitlink) img_bindings=$(pip_version cuda-bindings)
    img_pathfinder=$(pip_version cuda-pathfinder)
    say "install: the image has nvidia-nvjitlink $img_nvjitlink, cuda-bindings $img_bindings," \
      "cuda-pathfinder $img_pathfinder, numpy $(pip_version numpy), cupy-cuda13x" \
      "$(pip_version cupy-cuda13x), torch $(pip_version torch)"
    # cuvs and pylibraft ask for cuda-bindings >= 13.0.1, < 14; cuda-bindings 13.5 for
    # cuda-pathfinder >= 1.4.2. The image's are used when new enough (CuPy shares them).
    if ! at_least "$img_bindings" 13.0.1 || at_least "$img_bindings" 14; then
      whl+=("$(ls "$WHEELS"/cuda_bindings-*.whl | head -1)")
      img_pathfinder=0
    fi
    at_least "$img_pathfinder" 1.4.2 || whl+=("$(ls "$WHEELS"/cuda_pathfinder-*.whl | head -1)")
    rm -rf "$CUVS_SITE"
    say "install: pip --no-index --no-deps --target $CUVS_SITE: ${whl[*]##*/}"
    python3 -m pip install --no-index --no-deps --no-compile --target "$CUVS_SITE" "${whl[@]}" \
      >"$W/pip.log" 2>&1
    rc=$?
    [ $rc -eq 0 ] && cp "$WHEELS/.staged" "$CUVS_SITE/.installed" 2>/dev/null
    tail -2 "$W/pip.log" | tee -a "$L"
    note install $rc
    [ $rc -eq 0 ] || finish
  fi
  {
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    for so in libcuvs/lib64/libcuvs_c.so libcuvs/lib64/libcuvs.so libraft/lib64/libraft.so; do
      echo "== ldd $so"
      ldd "$CUVS_SITE/$so"
    done
  } >"$W/ldd.txt" 2>&1
  # libkvikio's loader asks cuda.pathfinder for cuFile (nvidia-cufile, a PyTorch cu130 dependency):
  # import cuvs fails without it.
  cufile=$(for sp in $SITES; do find "$sp"/nvidia -name 'libcufile.so*' 2>/dev/null; done | head -1)
  say "libcufile: ${cufile:-NOT FOUND in $SITES (import cuvs will fail)}"
  say "libcuvs_c.so's CUDA libraries (ldd):"
  awk '/^== ldd/ {p = ($3 == "libcuvs/lib64/libcuvs_c.so"); next} p' "$W/ldd.txt" |
    grep -E "not found|cublas|cusolver|cusparse|curand|nvJitLink|nvrtc|nccl|cudart|rmm|kvikio|logger|libcuvs" |
    sed 's/ (0x[0-9a-f]*)//' | tee -a "$L"
  python3 -c 'import cuvs, re
print("cuvs", cuvs.__version__)
maps = open("/proc/self/maps").read()
print("nvJitLink loaded from", *sorted(set(re.findall(r"\S*libnvJitLink\.so\S*", maps))))' \
    >"$W/import.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ]; then
    tee -a "$L" <"$W/import.log"
  else
    say "import cuvs failed: $(grep -m1 -E '^[A-Za-z_.]*(Error|Exception)' "$W/import.log" | cut -c1-300)"
  fi
  note import $rc
  [ $rc -eq 0 ] || finish
fi

# --- data and ground truth -------------------------------------------------------------------------
pick() { for f in "$DATA/$1".u8bin "$DATA/$1".fbin "$DATA/$1".i8bin; do [ -s "$f" ] && { echo "$f"; return; }; done; }
base=$(pick base) queries=$(pick query)
if has gt || has py || has c; then
  [[ -n $base && -n $queries ]] || { say "no staged data in $DATA (stage.sh receive $NAME)"; note data 1; finish; }
fi
gt=${GT:-}
if [[ -z $gt ]]; then
  for f in "$DATA/gt.ibin" "$W/$NAME-gt.ibin" /tmp/cagra-profile/"$NAME"-gt.ibin /tmp/cagra-*/"$NAME"-gt.ibin; do
    [ -s "$f" ] && { gt=$f; break; }
  done
fi
if has gt; then
  if [[ -n $gt ]]; then
    say "gt: using $gt"
    note gt 0
  else
    gt="$W/$NAME-gt.ibin"
    CLI=${CLI:-$BUILD_DIR/cagra}
    if [ ! -x "$CLI" ]; then
      say "gt: building the CLI ($BUILD_DIR, CUDA sm_90, target cagra_cli)"
      cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90 >"$W/build.log" 2>&1 &&
        cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cli >>"$W/build.log" 2>&1 ||
        { say "build failed"; tail -30 "$W/build.log" | tee -a "$L"; note gt 1; finish; }
    fi
    say "gt: $CLI gt (k = 100, CUDA brute force)"
    "$CLI" gt "$base" "$queries" -k 100 -o "$gt" --backend cuda >"$W/gt.log" 2>&1
    rc=$?
    tail -1 "$W/gt.log" | tee -a "$L"
    note gt $rc
    [ $rc -eq 0 ] || finish
  fi
fi
if (has py || has c) && [[ ! -s $gt ]]; then
  say "no ground truth for $NAME (run STEPS=gt first, or set GT)"
  note gt 1
  finish
fi

# --- Python: cuvs.neighbors.cagra, batch $BATCH --------------------------------------------------
if has py; then
  say "py: cuvs_peer.py degrees $DEGREES, itopk $ITOPK, widths $WIDTHS, batch $BATCH, io $IO"
  defaults=()
  [ "${DEFAULTS:-1}" = 1 ] || defaults=(--no-defaults)
  timeout "${PY_TIMEOUT:-480}" python3 bench/cuvs_peer.py "$base" "$queries" "$gt" \
    --graph-degree "$DEGREES" --itopk "$ITOPK" --search-width "$WIDTHS" --batch "$BATCH" \
    --io "$IO" --reps "$REPS" --metric "$METRIC" --dataset "$NAME" --commit "$CAGRA_COMMIT" \
    "${defaults[@]}" --json "$J" >"$W/py.log" 2>&1
  rc=$?
  grep -E "^cuvs [0-9]|^build|^  d=" "$W/py.log" | tee -a "$L"
  [ $rc -eq 0 ] || tail -25 "$W/py.log" | tee -a "$L"
  note py $rc
fi

# --- Nsight Compute on cuVS's search (STEPS=ncu, not by default): one $BATCH-query call ---------
if has ncu; then
  NCU_BIN=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  say "ncu: kernels matching '${NCU_KERNEL:-search}' of a $BATCH-query call (degree ${NCU_DEGREE:-32}, itopk ${NCU_ITOPK:-32}, width ${NCU_WIDTH:-1}; skip ${NCU_SKIP:-1})"
  "$NCU_BIN" --clock-control none --target-processes all --kernel-name "regex:${NCU_KERNEL:-search}" \
    --launch-skip "${NCU_SKIP:-1}" --launch-count "${NCU_COUNT:-1}" --section SpeedOfLight \
    --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
    --section SchedulerStats --section WarpStateStats \
    --metrics dram__bytes_read.sum,lts__t_bytes.sum,gpu__time_duration.sum,launch__waves_per_multiprocessor \
    python3 bench/cuvs_peer.py "$base" "$queries" "$gt" --graph-degree "${NCU_DEGREE:-32}" \
    --itopk "${NCU_ITOPK:-32}" --search-width "${NCU_WIDTH:-1}" --batch "$BATCH" --io device \
    --reps 1 --metric "$METRIC" --no-defaults >"$W/ncu.txt" 2>&1
  rc=$?
  grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|dram__bytes_read.sum|lts__t_bytes.sum|Waves Per SM|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Block Limit|Registers Per|Block Size|Grid Size|L2 Hit|recall" \
    "$W/ncu.txt" | tee -a "$L"
  note ncu $rc
fi

# --- C API: batch 1 ----------------------------------------------------------------------------
if has c; then
  CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")}
  # cuvs/core/c_api.h includes <dlpack/dlpack.h>, which the wheels lack: use one that a Python
  # package of the image ships (CuPy, PyTorch, JAX ...), else a minimal one of the DLPack ABI.
  inc="$W/include"
  mkdir -p "$inc/dlpack"
  dl=""
  for sp in $SITES; do
    dl=$(find "$sp" -name dlpack.h -size +2k -print0 2>/dev/null | xargs -0r grep -l "DLManagedTensor" |
      xargs -r grep -l "DLPACK_MAJOR_VERSION" | head -1)
    [ -n "$dl" ] && break
  done
  if [ -n "$dl" ]; then
    cp "$dl" "$inc/dlpack/dlpack.h"
  else
    dl="(minimal, written here)"
    cat >"$inc/dlpack/dlpack.h" <<'EOF'
/* The DLPack 1.x ABI that cuVS's C API uses (DLManagedTensor), for want of the real header. */
#ifndef DLPACK_DLPACK_H_
#define DLPACK_DLPACK_H_
#include <stddef.h>
#include <stdint.h>
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0
#ifdef __cplusplus
extern "C" {
#endif
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 } DLDeviceType;
typedef struct { DLDeviceType device_type; int32_t device_id; } DLDevice;
typedef enum { kDLInt = 0U, kDLUInt = 1U, kDLFloat = 2U, kDLBfloat = 4U } DLDataTypeCode;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;
#ifdef __cplusplus
}
#endif
#endif
EOF
  fi
  say "c: compiling bench/cuvs_c_peer.c (dlpack.h: $dl)"
  cflags=(-O2 -I"$CUVS_SITE/libcuvs/include" -I"$inc" -I"$CUDA_HOME/include")
  ldflags=(-L"$CUVS_SITE/libcuvs/lib64" -lcuvs_c -L"$CUDA_HOME/lib64" -lcudart
    -Wl,-rpath-link,"$LIBPATH" -Wl,-rpath,"$CUVS_SITE/libcuvs/lib64")
  {
    echo "gcc -std=c99 -Wall -Wextra ${cflags[*]} bench/cuvs_c_peer.c -o $W/cuvs_c_peer ${ldflags[*]}"
    gcc -std=c99 -Wall -Wextra "${cflags[@]}" bench/cuvs_c_peer.c -o "$W/cuvs_c_peer" "${ldflags[@]}" ||
      { echo "gcc failed: nvcc -x cu"
        nvcc -x cu -arch=sm_90 "${cflags[@]}" bench/cuvs_c_peer.c -o "$W/cuvs_c_peer" \
          -L"$CUVS_SITE/libcuvs/lib64" -lcuvs_c -Xlinker -rpath-link="$LIBPATH" \
          -Xlinker -rpath="$CUVS_SITE/libcuvs/lib64"; }
  } >"$W/c-build.log" 2>&1
  rc=$?
  if [ $rc -ne 0 ]; then
    tail -20 "$W/c-build.log" | tee -a "$L"
    note c-build $rc
  else
    note c-build 0
    say "c: cuvs_c_peer degrees $C_DEGREES, itopk $C_ITOPK, batch 1, best of $C_REPS"
    modes=(0)
    [ "${C_PERSISTENT:-0}" = 1 ] && modes+=(1)
    for p in "${modes[@]}"; do
      timeout "${C_TIMEOUT:-300}" "$W/cuvs_c_peer" "$base" "$queries" "$gt" "$C_DEGREES" "$C_ITOPK" \
        --reps "$C_REPS" --persistent "$p" --metric "$METRIC" --dataset "$NAME" \
        --commit "$CAGRA_COMMIT" --json "$J" >"$W/c-$p.log" 2>&1
      rc=$?
      grep -E "^cuvs [0-9]|^build|^  d=" "$W/c-$p.log" | tee -a "$L"
      [ $rc -eq 0 ] || tail -20 "$W/c-$p.log" | tee -a "$L"
      note "c$([ "$p" = 1 ] && echo -persist)" $rc
    done
  fi
fi

if [ -s "$J" ] && [ -f bench/plot.py ]; then
  say "== QPS at recall@10 ($NAME) =="
  python3 bench/plot.py --qps-at 0.90,0.95,0.99 "$J" --dataset "$NAME" 2>&1 | tee -a "$L"
fi
finish
