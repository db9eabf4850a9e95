#!/usr/bin/env bash
# Runs the CPU test suites (what CI runs): set-up and build through scripts/setup.sh, then every
# test labelled `cpu` with ctest. Exits non-zero on any failure. The `cuda` tests need a GPU and
# run through the device scripts instead.
#
# Then the installed C++ package (scripts/check-install.sh) and the Python package.
#
# Environment: BUILD_DIR (default build), CTEST_JOBS (default 2, the CI machine's core count);
# CAGRA_CUDA and CAGRA_WERROR as for scripts/setup.sh (both builds, CMake's and pip's, take them);
# PIP_FULL_BUILD=1: pip compiles the library itself, as `pip install .` does for users, instead
# of linking the one the CMake build made.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${BUILD_DIR:-build}

bash scripts/setup.sh
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
ctest --test-dir "$BUILD_DIR" -L cpu --output-on-failure -j "${CTEST_JOBS:-2}"

# The C++ package, installed into $BUILD_DIR/install (made afresh: a copy), used by a project
# outside the tree; the Python package below links the library installed there.
PREFIX="$BUILD_DIR/install"
rm -rf "$PREFIX"
PREFIX="$PREFIX" bash scripts/check-install.sh

# Python package: install it with `pip install .` (the top-level CMake through scikit-build-core)
# into a virtual environment of whichever python3 comes first on PATH, then run pytest against the
# CLI built above. The wheel's CMake build compiles only the extension and links the library
# installed above (CAGRA_USE_INSTALLED; PIP_FULL_BUILD=1 compiles it all). The environment
# ($PY_ENV, default $BUILD_DIR/pyenv) and the wheel's CMake folder ($BUILD_DIR/python) are kept,
# so a second run only rebuilds what changed; both are made afresh when python3 changes.
# pytest's exit status 5 (no tests collected) is a failure.
PY_ENV=${PY_ENV:-$BUILD_DIR/pyenv}
py_id=$(python3 -c 'import sys; print(sys.executable, sys.version)')
if [[ ! -x $PY_ENV/bin/python || $(cat "$PY_ENV/.python-id" 2>/dev/null) != "$py_id" ]]; then
  rm -rf "$PY_ENV" "$BUILD_DIR/python"
  python3 -m venv "$PY_ENV"
  echo "$py_id" >"$PY_ENV/.python-id"
fi
pip=("$PY_ENV/bin/python" -m pip install -q --disable-pip-version-check)
# ruff is pinned: a new release may add findings, which should come with a commit, not a CI run.
"${pip[@]}" "nanobind>=2.0" "scikit-build-core>=0.10" numpy pytest ruff==0.17.6

# Python lint ([tool.ruff] in pyproject.toml): any finding, or a file `ruff format` would change,
# fails the script.
"$PY_ENV/bin/ruff" check --no-cache python bench
"$PY_ENV/bin/ruff" format --check --no-cache python bench

# pip -q prints nothing while it compiles: a line every 30 s says that it is still going.
with_heartbeat() {  # with_heartbeat WHAT COMMAND...: COMMAND's exit status
  local what=$1 start=$SECONDS status=0
  shift
  (
    trap 'kill "$sleeper" 2>/dev/null; exit 0' TERM
    while :; do
      sleep 30 &
      sleeper=$!
      wait "$sleeper"
      echo "test: $what ... $((SECONDS - start)) s"
    done
  ) &
  heartbeat=$!
  trap 'kill "$heartbeat" 2>/dev/null' EXIT
  "$@" || status=$?
  kill "$heartbeat"
  trap - EXIT
  echo "test: $what took $((SECONDS - start)) s"
  return "$status"
}
config=$(find "$(cd "$PREFIX" && pwd)" -name cagraConfig.cmake -print -quit)
reuse=(--config-settings=cmake.define.CAGRA_USE_INSTALLED=ON
       --config-settings=cmake.define.cagra_DIR="$(dirname "$config")")
if [[ -n ${PIP_FULL_BUILD:-} ]]; then reuse=(--config-settings=cmake.define.CAGRA_USE_INSTALLED=OFF); fi
with_heartbeat "building the Python package" \
  env CMAKE_BUILD_PARALLEL_LEVEL="${JOBS:-$(nproc)}" "${pip[@]}" --no-build-isolation \
  --config-settings=build-dir="$BUILD_DIR/python" \
  --config-settings=cmake.define.CAGRA_CUDA="${CAGRA_CUDA:-AUTO}" \
  --config-settings=cmake.define.CAGRA_WERROR="${CAGRA_WERROR:-OFF}" "${reuse[@]}" .
status=0
CAGRA_CLI="$(cd "$BUILD_DIR" && pwd)/cagra" \
  "$PY_ENV/bin/python" -m pytest python/tests -q -rs -p no:cacheprovider || status=$?
if ((status == 5)); then echo "test: pytest collected no tests" >&2; fi
if ((status != 0)); then exit 1; fi
