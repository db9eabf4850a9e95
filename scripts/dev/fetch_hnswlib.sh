#!/usr/bin/env bash
# Copies the hnswlib headers (Debian libhnswlib-dev, installed here when missing) into the ignored
# folder third_party/include/hnswlib. The GPU machine has no package mirror, so the peer
# benchmark can only be built there from a copy that travels with the working tree;
# bench/CMakeLists.txt looks in third_party/include (or pass -DHNSWLIB_INCLUDE_DIR=...).
# Idempotent: an up-to-date copy is left as it is.
#
# HNSWLIB_VERSION=0.8.0 takes the headers of hnswlib's 0.8.0 release from its PyPI source archive
# instead (pinned by sha256): Debian 12's 0.6.2 has no filter functor, which the filtered
# benchmarks (scripts/dev/device-bench-filter.sh) need.
#
# Environment: HNSWLIB_SRC (default /usr/include/hnswlib), HNSWLIB_VERSION (unset: Debian's),
# CAGRA_SETUP_NO_APT=1 (never call apt).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
src=${HNSWLIB_SRC:-/usr/include/hnswlib}
dst=third_party/include/hnswlib

if [[ ${HNSWLIB_VERSION:-} == 0.8.0 ]]; then
  url=https://files.pythonhosted.org/packages/cf/7a/1a9b1405f2eb59515f06c3074750b03e0e96edf7fee0f6dd6df81d9c21d7/hnswlib-0.8.0.tar.gz
  sha=cb6d037eedebb34a7134e7dc78966441dfd04c9cf5ee93911be911ced951c44c
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  curl -sSfL -o "$tmp/h.tar.gz" "$url"
  echo "$sha  $tmp/h.tar.gz" | sha256sum -c --quiet
  tar xzf "$tmp/h.tar.gz" -C "$tmp"
  src=$tmp/hnswlib-0.8.0/hnswlib
elif [[ -n ${HNSWLIB_VERSION:-} ]]; then
  echo "error: HNSWLIB_VERSION: only 0.8.0 is pinned here (got ${HNSWLIB_VERSION})" >&2
  exit 1
fi

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
version=${HNSWLIB_VERSION:-$(dpkg-query -W -f='${Version}' libhnswlib-dev 2>/dev/null || echo "unknown version")}
echo "fetch_hnswlib: copied $src ($version) to $dst ($(find "$dst" -type f | wc -l) files)"
