#!/usr/bin/env bash
# The SIFT-128 dataset from real photos (docs/datasets.md): uint8 SIFT descriptors of the wallpaper
# photos that Debian packages ship, 1M base vectors and 10K queries from other photos, with the
# exact ground truth (k = 100). On a clean Debian 12 machine (as root, or with sudo) it installs
# what is missing (the wallpaper packages, python3-venv, the build tools), makes a Python venv
# with a pinned OpenCV from PyPI, extracts the descriptors (bench/datasets/sift_wallpapers.py),
# builds the `cagra` tool if there is none, and computes the ground truth: on the GPU when
# `nvidia-smi -L` works and the tool has the CUDA backend, on the CPU otherwise.
#
#   bash scripts/dataset-sift.sh
#
# Writes OUT (default data/sift-wall-1m): base.u8bin, query.u8bin, gt.ibin (ids + distances,
# k = 100), manifest.json, base.photo.npy, query.photo.npy, and cache/ (per-photo descriptors;
# delete it to save ~140 MB). Every step is skipped when its output exists and was made with the
# same parameters; an output made with other parameters stops the script with an explanation
# instead of being replaced.
#
# Environment: OUT, BASE_ROWS (1000000), QUERIES (10000), K (100), MAX_SHARE (0.035), MAX_MPIX (16),
# CONTRAST (SIFT contrast threshold, 0.01),
# SEED (1), THREADS (default all cores), CAGRA (path of a `cagra` binary to use), BACKEND
# (auto | cpu | cuda), BUILD_DIR (where to build `cagra` when none is found; build-datasets),
# VENV (build-datasets/venv-sift), NO_APT=1 (report missing packages, install nothing).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${OUT:-data/sift-wall-1m}
BASE_ROWS=${BASE_ROWS:-1000000}
QUERIES=${QUERIES:-10000}
K=${K:-100}
MAX_SHARE=${MAX_SHARE:-0.035}
MAX_MPIX=${MAX_MPIX:-16}
CONTRAST=${CONTRAST:-0.01}
SEED=${SEED:-1}
THREADS=${THREADS:-$(nproc)}
BACKEND=${BACKEND:-auto}
BUILD_DIR=${BUILD_DIR:-build-datasets}
VENV=${VENV:-build-datasets/venv-sift}
# The OpenCV wheel is pinned: the descriptors depend on its version. Debian's python3-opencv would
# pull ~160 packages (Qt, VTK, GDAL, MPI) for the same few functions.
OPENCV_PIN="opencv-python-headless==4.10.0.84"
NUMPY_PIN="numpy==1.26.4"
WALLPAPERS=(gnome-backgrounds mate-backgrounds plasma-workspace-wallpapers ukui-wallpapers
            lomiri-wallpapers lomiri-wallpapers-16.04 lomiri-wallpapers-20.04 sway-backgrounds)
BUILD_PACKAGES=(cmake ninja-build g++ zlib1g-dev)

step() { echo; echo "== $* ($(date -u +%H:%M:%S)) =="; }
elapsed() { echo "   ($(($(date +%s) - $1)) s)"; }

missing_packages() {
  local p status
  for p in "$@"; do
    status=$(dpkg -s "$p" 2>/dev/null || true)
    if [[ $status != *"Status: install ok installed"* ]]; then echo "$p"; fi
  done
}

apt_install() {
  local -a missing
  mapfile -t missing < <(missing_packages "$@")
  ((${#missing[@]} > 0)) || return 0
  if [[ -n ${NO_APT:-} ]]; then
    echo "missing packages: ${missing[*]} (NO_APT is set: not installing)" >&2
    return 1
  fi
  local -a sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  echo "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  local -a apt=("${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600)
  if ! "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; then
    "${apt[@]}" update
    "${apt[@]}" install -y --no-install-recommends "${missing[@]}"
  fi
}

t_all=$(date +%s)
step "packages"
t=$(date +%s)
apt_install "${WALLPAPERS[@]}" python3 python3-venv
for p in "${WALLPAPERS[@]}"; do
  printf '   %-28s %s\n' "$p" "$(dpkg-query -W -f '${Version}' "$p")"
done
elapsed "$t"

step "python venv ($VENV: $OPENCV_PIN, $NUMPY_PIN)"
t=$(date +%s)
if ! "$VENV/bin/python" -c "import cv2, numpy; assert cv2.__version__ == '${OPENCV_PIN##*==}'[:len(cv2.__version__)]" 2>/dev/null; then
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install --disable-pip-version-check "$OPENCV_PIN" "$NUMPY_PIN"
fi
"$VENV/bin/python" -c "import cv2, numpy; print('   opencv', cv2.__version__, 'numpy', numpy.__version__)"
elapsed "$t"

step "SIFT descriptors -> $OUT"
t=$(date +%s)
packages=$(IFS=,; echo "${WALLPAPERS[*]}")
"$VENV/bin/python" -u bench/datasets/sift_wallpapers.py "$OUT" --base "$BASE_ROWS" \
  --queries "$QUERIES" --packages "$packages" --max-share "$MAX_SHARE" --max-mpix "$MAX_MPIX" \
  --contrast-threshold "$CONTRAST" \
  --seed "$SEED" --threads "$THREADS" 2> >(grep -v 'libpng warning: iCCP' >&2)
elapsed "$t"

step "the cagra tool"
t=$(date +%s)
gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi
has_cuda() { ! "$1" --version | grep -q "CUDA backend not available"; }
cagra=${CAGRA:-}
if [[ -z $cagra ]]; then
  found=()
  for c in build/cagra "$BUILD_DIR/cagra"; do [[ -x $c ]] && found+=("$c"); done
  # On a GPU machine, a build with the CUDA backend; else (or when nvcc is missing to make one)
  # any build.
  if ((gpu)); then
    for c in "${found[@]}"; do if has_cuda "$c"; then cagra=$c; break; fi; done
  fi
  if [[ -z $cagra ]] && ((${#found[@]} > 0)) && ! { ((gpu)) && command -v nvcc >/dev/null; }; then
    cagra=${found[0]}
  fi
fi
if [[ -z $cagra ]]; then
  cuda=OFF
  if ((gpu)) && command -v nvcc >/dev/null; then cuda=ON; fi
  echo "   building $BUILD_DIR/cagra (CAGRA_CUDA=$cuda)"
  apt_install "${BUILD_PACKAGES[@]}"
  generator=()
  if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then generator=(-G Ninja); fi
  cmake -S . -B "$BUILD_DIR" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA="$cuda" \
    -DCAGRA_BUILD_TESTS=OFF -DCAGRA_BUILD_BENCH=OFF
  cmake --build "$BUILD_DIR" --target cagra_cli -j "$THREADS"
  cagra="$BUILD_DIR/cagra"
fi
"$cagra" --version | sed 's/^/   /'
if [[ $BACKEND == auto ]]; then
  BACKEND=cpu
  if ((gpu)) && has_cuda "$cagra"; then BACKEND=cuda; fi
fi
elapsed "$t"

step "ground truth (exact, k = $K, backend $BACKEND) -> $OUT/gt.ibin"
t=$(date +%s)
# u8bin/ibin headers: uint32 rows, uint32 cols.
header() { od -An -tu4 -N8 "$1" | awk '{print $1, $2}'; }
read -r nq _ < <(header "$OUT/query.u8bin")
gt="$OUT/gt.ibin"
if [[ -f $gt ]]; then
  read -r gt_rows gt_cols < <(header "$gt")
  if [[ $gt_rows != "$nq" || $gt_cols != "$K" ]]; then
    echo "error: $gt exists but is $gt_rows x $gt_cols, not $nq queries x k = $K:" \
      "it belongs to other data or another K; move it away to recompute" >&2
    exit 1
  fi
  if [[ $gt -ot $OUT/base.u8bin || $gt -ot $OUT/query.u8bin ]]; then
    echo "error: $gt is older than base.u8bin or query.u8bin: it may belong to an earlier" \
      "version of the data; move it away to recompute" >&2
    exit 1
  fi
  echo "   $gt exists ($gt_rows x $gt_cols, newer than the data): kept"
else
  # The tool writes a temporary file and renames it into place: an existing gt.ibin is complete.
  "$cagra" gt "$OUT/base.u8bin" "$OUT/query.u8bin" -k "$K" -o "$gt" --backend "$BACKEND" \
    --threads "$THREADS"
fi
elapsed "$t"

step "done"
ls -l "$OUT"/base.u8bin "$OUT"/query.u8bin "$OUT"/gt.ibin "$OUT"/manifest.json | awk '{print "   " $5, $9}'
echo "   total $(($(date +%s) - t_all)) s"
