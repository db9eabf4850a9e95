#!/usr/bin/env bash
# Copies the hnswlib headers (Debian libhnswlib-dev, installed here when missing) into the ignored
# folder third_party/include/hnswlib. The GPU machine has no package mirror, so the peer
# benchmark can only be built there from a copy that travels with the working tree;
# bench/CMakeLists.txt looks in third_party/include (or pass -DHNSWLIB_INCLUDE_DIR=...).
# Idempotent: an up-to-date copy is left as it is.
#
# Environment: HNSWLIB_SRC (default /usr/include/hnswlib), CAGRA_SETUP_NO_APT=1 (never call apt).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
src=${HNSWLIB_SRC:-/usr/include/hnswlib}
dst=third_party/include/hnswlib

if [[ ! -f $src/hnswlib.h ]]; then
  if [[ -n ${CAGRA_SETUP_NO_APT:-} || $src != /usr/include/hnswlib ]]; then
    echo "error: no hnswlib headers in $src (install libhnswlib-dev or set HNSWLIB_SRC)" >&2
    exit 1
  fi
  echo "fetch_hnswlib: installing libhnswlib-dev"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends libhnswlib-dev
  if [[ ! -f $src/hnswlib.h ]]; then
    echo "error: libhnswlib-dev installed no $src/hnswlib.h" >&2
    exit 1
  fi
fi

if [[ -d $dst ]] && diff -rq "$src" "$dst" >/dev/null 2>&1; then
  echo "fetch_hnswlib: $dst is up to date"
  exit 0
fi
# Copy beside, then swap: an interrupted copy never leaves a half-filled folder that CMake accepts.
mkdir -p "$(dirname "$dst")"
rm -rf "$dst.tmp"
cp -r "$src" "$dst.tmp"
rm -rf "$dst"
mv "$dst.tmp" "$dst"
version=$(dpkg-query -W -f='${Version}' libhnswlib-dev 2>/dev/null || echo "unknown version")
echo "fetch_hnswlib: copied $src ($version) to $dst ($(find "$dst" -type f | wc -l) files)"
