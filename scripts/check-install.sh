#!/usr/bin/env bash
# Checks the installed C++ package as a user meets it: installs an already-built build folder
# (`cmake --install`) into a prefix, then compiles tests/consumer against that prefix the two
# documented ways, CMake's find_package(cagra) (cagra::cagra, the shared library, and
# cagra::cagra_static) and pkg-config (shared and static), runs each program (a build, a search,
# a recall check) and the installed `cagra --version`. Exits non-zero on the first failure.
# scripts/test.sh calls it after its CMake build; it costs a copy and four compiles of one file.
#
# Environment: BUILD_DIR (default build; built already), PREFIX (default: a temporary folder,
# removed at the end; a given one is kept), CXX (the compiler of the pkg-config builds; c++).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-build}
if [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
  echo "check-install: $BUILD_DIR is not a CMake build folder; build first (scripts/setup.sh)" >&2
  exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/cagra-check-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
PREFIX=${PREFIX:-$work/prefix}
PREFIX=$(mkdir -p "$PREFIX" && cd "$PREFIX" && pwd)

cmake --install "$BUILD_DIR" --prefix "$PREFIX" >"$work/install.log"
echo "check-install: installed $BUILD_DIR into $PREFIX ($(grep -c 'Installing:\|Up-to-date:' \
  "$work/install.log") files)"
"$PREFIX/bin/cagra" --version

# CMake: the consumer project, once per exported target.
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
for target in cagra::cagra cagra::cagra_static; do
  dir="$work/consumer-${target#cagra::}"
  cmake -S tests/consumer -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$PREFIX" -DCAGRA_TARGET="$target" >"$work/configure.log" ||
    { cat "$work/configure.log" >&2; exit 1; }
  cmake --build "$dir" >"$work/build.log" || { cat "$work/build.log" >&2; exit 1; }
  for program in "$dir"/consumer "$dir"/consumer_c; do
    if [[ -x $program ]]; then
      echo -n "check-install: find_package, $target, $(basename "$program"): "
      "$program"
    fi
  done
done

# pkg-config: `--libs cagra` links the shared library; the static one comes in by file name with
# the flags of `--static` (Libs.private).
pc_file=$(find "$PREFIX" -path '*/pkgconfig/cagra.pc' -print -quit)
if [[ -z $pc_file ]]; then echo "check-install: no cagra.pc under $PREFIX" >&2; exit 1; fi
export PKG_CONFIG_PATH="$(dirname "$pc_file")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
read -r -a cflags <<<"$(pkg-config --cflags cagra)"
read -r -a libs_shared <<<"$(pkg-config --libs cagra)"
read -r -a libs_static <<<"$(pkg-config --static --libs cagra | sed 's/-lcagra\b/-l:libcagra.a/')"
libdir=$(pkg-config --variable=libdir cagra)
"${CXX:-c++}" -std=c++17 -O1 "${cflags[@]}" tests/consumer/main.cpp -o "$work/pc-shared" \
  "${libs_shared[@]}" -Wl,-rpath,"$libdir"
echo -n "check-install: pkg-config, shared: "
"$work/pc-shared"
"${CXX:-c++}" -std=c++17 -O1 "${cflags[@]}" tests/consumer/main.cpp -o "$work/pc-static" \
  "${libs_static[@]}"
echo -n "check-install: pkg-config, static: "
"$work/pc-static"
if ldd "$work/pc-static" | grep -q libcagra; then
  echo "check-install: the pkg-config static build links libcagra.so" >&2
  exit 1
fi
echo "check-install: ok"
