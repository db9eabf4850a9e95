#!/usr/bin/env bash
# Here (a machine with PyPI), not on the GPU machine: downloads the wheels that NVIDIA cuVS CAGRA
# needs there (scripts/dev/device-cuvs.sh installs them with --no-index --no-deps), rewrites each
# one with its members stored rather than deflated, and packs them with scripts/dev/stage.sh as
# stage/cuvs-wheels (xz -9 over the stored members: 4 pieces of 56 MiB instead of 6 for the wheels
# as published, since xz finds far more in libcuvs.so than the wheel's deflate). A rewritten wheel
# holds the same files, RECORD included, so pip installs it as it would the original.
#
# What is left out: the CUDA libraries that the RAPIDS wheels ask for through cuda-toolkit[...]
# and nvidia-nccl-cu13 (cuBLAS, cuSOLVER, cuSPARSE, cuRAND, NVRTC, NCCL, cuFile), which PyTorch
# cu130 already installed on the GPU machine, and numpy (there too). Carried although the image may
# have them: nvidia-nvjitlink 13.3 (libcuvs 26.10 was built with CUDA 13.3, links its CAGRA search
# kernels at run time with nvJitLink, and imports the __nvJitLink*_13_3 symbols, which an older
# libnvJitLink lacks: libcuvs.so would not even load; PyTorch cu130's is presumably 13.0, as this
# machine's CUDA 13.0 wheels are), cuda-bindings and cuda-pathfinder (device-cuvs.sh installs them
# only when the image's are older than cuVS asks).
#
# Environment: WHEEL_DIR (/tmp/cuvs-wheels: downloads, and stored/ with the rewritten wheels),
# CUVS_VERSION (26.10.0), PY (3.12: the GPU machine's python3), XZ_LEVEL (9), FORCE=1 (repack).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
WHEEL_DIR=${WHEEL_DIR:-/tmp/cuvs-wheels}
CUVS_VERSION=${CUVS_VERSION:-26.10.0}
PY=${PY:-3.12}
RAPIDS="${CUVS_VERSION%.*}.*"  # 26.10.*: the RAPIDS wheels of one release go together
mkdir -p "$WHEEL_DIR/stored"

wheels=(
  "cuvs-cu13==$CUVS_VERSION" "libcuvs-cu13==$CUVS_VERSION"
  "pylibraft-cu13==$RAPIDS" "libraft-cu13==$RAPIDS" "rmm-cu13==$RAPIDS" "librmm-cu13==$RAPIDS"
  "libkvikio-cu13==$RAPIDS" "rapids-logger==0.3.*"
  "nvidia-nvjitlink==13.3.33" "cuda-bindings>=13.0.1,<14" "cuda-pathfinder>=1.4.2"
)
for w in "${wheels[@]}"; do
  pip download -q --only-binary=:all: --no-deps --python-version "$PY" \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
    --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 -d "$WHEEL_DIR" "$w"
done

# Rewrite each wheel with stored members (same names, order, dates, modes and bytes).
python3 - "$WHEEL_DIR" <<'EOF'
import glob
import os
import sys
import zipfile

src = sys.argv[1]
for w in sorted(glob.glob(os.path.join(src, "*.whl"))):
    out = os.path.join(src, "stored", os.path.basename(w))
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(w):
        continue
    with zipfile.ZipFile(w) as zi, zipfile.ZipFile(out + ".tmp", "w", zipfile.ZIP_STORED) as zo:
        for info in zi.infolist():
            member = zipfile.ZipInfo(info.filename, info.date_time)
            member.external_attr = info.external_attr
            zo.writestr(member, zi.read(info), zipfile.ZIP_STORED)
    os.replace(out + ".tmp", out)
    print(f"stored {os.path.basename(w)}: {os.path.getsize(w)} -> {os.path.getsize(out)} bytes")
EOF

# Only the wheels named above (an older download in WHEEL_DIR stays out).
files=()
for w in "${wheels[@]}"; do
  base=${w%%[=<>]*}
  base=${base//-/_}
  f=$(ls -t "$WHEEL_DIR"/stored/"$base"-*.whl | head -1)
  files+=("$f")
done
ls -l "${files[@]}" | awk '{s += $5; print "  " $5, $9} END {print "  total", s, "bytes"}'
XZ_LEVEL=${XZ_LEVEL:-9} bash scripts/dev/stage.sh pack cuvs-wheels "${files[@]}"
du -cb stage/cuvs-wheels/* | tail -1
