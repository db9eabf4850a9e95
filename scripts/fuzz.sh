#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, clang, ASan + UBSan) and runs each one for a bounded
# time over its seed and regression corpus (tests/fuzz/corpus/<target>/). Exits non-zero when any
# target finds a crash, a hang (an input running over 10 s), a leak, an allocation over 2 GiB or
# a sanitizer report; each such input is copied into tests/fuzz/corpus/<target>/ (commit it with
# the fix: it becomes a regression input that every later run replays first) and the command that
# reproduces it is printed.
#
# Usage: scripts/fuzz.sh [TARGET...]   (default: all; names as in tests/fuzz/fuzz_<name>.cpp)
# Environment:
#   FUZZ_SECONDS       seconds per target (default 20)
#   FUZZ_HDF5_SECONDS  seconds for the hdf5 target (default 10): libhdf5 runs in a reader process
#                      per call, so it does few inputs per second and gets no coverage feedback
#   FUZZ_JOBS          targets run at the same time (default: the number of cores)
#   FUZZ_BUILD_DIR     build folder (default build-fuzz; kept, so a second run only rebuilds what
#                      changed, and the inputs found so far stay in FUZZ_BUILD_DIR/corpus)
#   FUZZ_TMPDIR        where the targets write their input files (default /dev/shm/cagra-fuzz-UID,
#                      else FUZZ_BUILD_DIR/tmp); emptied first
#   CAGRA_SETUP_NO_APT=1  report missing packages instead of installing them (as setup.sh)
#
# Reproduce a finding: FUZZ_BUILD_DIR/tests/fuzz/fuzz_<target> FILE (CAGRA_FUZZ_VERBOSE=1 also
# prints the cagra::error messages of the inputs the target rejects).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
SECS=${FUZZ_SECONDS:-20}
HDF5_SECS=${FUZZ_HDF5_SECONDS:-10}
PAR=${FUZZ_JOBS:-$(nproc)}

# clang 14 and its runtimes (Debian 12): libFuzzer and the sanitizer runtimes are in
# libclang-rt-14-dev and clang's OpenMP in libomp-14-dev, both only recommended by clang-14.
packages=(clang libclang-rt-14-dev libomp-14-dev cmake ninja-build zlib1g-dev libhdf5-dev)
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg -s "$p" 2>/dev/null || true)
  if [[ $status != *"Status: install ok installed"* ]]; then missing+=("$p"); fi
done
if ((${#missing[@]} > 0)); then
  if [[ -n ${CAGRA_SETUP_NO_APT:-} ]]; then
    echo "fuzz: missing ${missing[*]}; CAGRA_SETUP_NO_APT is set, not installing" >&2
    exit 1
  fi
  echo "fuzz: installing ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi

# Only the library and the targets (no tests, CLI, benchmarks). The compiler and generator are
# given on the first configure only: CMake refuses to change them in an existing folder.
first=()
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  first=(-G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
fi
cmake -S . -B "$BUILD_DIR" "${first[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCAGRA_CUDA=OFF \
  -DCAGRA_FUZZ=ON -DCAGRA_SANITIZE=ON -DCAGRA_BUILD_TESTS=OFF -DCAGRA_BUILD_CLI=OFF \
  -DCAGRA_BUILD_BENCH=OFF -DCAGRA_BUILD_PYTHON=OFF >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"

targets=("$@")
if ((${#targets[@]} == 0)); then
  for f in "$BUILD_DIR"/tests/fuzz/fuzz_*; do targets+=("${f##*/fuzz_}"); done
fi

# The targets write every input to a file under TMPDIR (and the writers fsync what they write):
# in memory (/dev/shm) when it can be used, which runs the file-based targets about twice as fast.
# A crashed run leaves its folder behind; the whole folder goes at the next run.
if [[ -z ${FUZZ_TMPDIR:-} ]]; then
  if [[ -d /dev/shm && -w /dev/shm ]]; then FUZZ_TMPDIR=/dev/shm/cagra-fuzz-$(id -u); else
    FUZZ_TMPDIR=$PWD/$BUILD_DIR/tmp; fi
fi
rm -rf "$FUZZ_TMPDIR" && mkdir -p "$FUZZ_TMPDIR" "$BUILD_DIR/logs"
export TMPDIR=$FUZZ_TMPDIR
# UBSan is fatal already (-fno-sanitize-recover, CMakeLists.txt); print where it happened.
export UBSAN_OPTIONS=print_stacktrace=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
# OpenMP workers sleep between parallel regions instead of spinning (libomp spins 200 ms by
# default): with a target per core, spinning threads took the other target's core (3x fewer
# build_search inputs per second).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

run_target() {  # run_target NAME: fuzzes one target; its output goes to logs/NAME.log
  local t=$1 secs=$SECS
  if [[ $t == hdf5 ]]; then secs=$HDF5_SECS; fi
  local bin="$BUILD_DIR/tests/fuzz/fuzz_$t" work="$BUILD_DIR/corpus/$t"
  local found="$BUILD_DIR/findings/$t" seeds="tests/fuzz/corpus/$t"
  mkdir -p "$work" "$found" "$seeds"
  # The first folder collects new inputs (kept in the build folder); the committed seeds and
  # regression inputs are only read. `timeout` guards against a stuck libFuzzer itself.
  timeout --kill-after=30 $((secs + 300)) "$bin" -max_total_time="$secs" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$found/" "$work" "$seeds" \
    >"$BUILD_DIR/logs/$t.log" 2>&1
}

declare -A pid_of
failed=()
finish() {  # finish NAME: waits for NAME's run and reports it
  local t=$1 rc=0
  wait "${pid_of[$t]}" || rc=$?
  local log="$BUILD_DIR/logs/$t.log"
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  if ((rc == 0)); then
    echo "fuzz: $t ok ($execs inputs)"
    return
  fi
  failed+=("$t")
  echo "fuzz: $t FAILED (exit $rc); the end of $log:" >&2
  tail -n 40 "$log" >&2
  local f
  for f in "$BUILD_DIR/findings/$t"/*; do
    [[ -f $f ]] || continue
    cp "$f" "tests/fuzz/corpus/$t/"
    echo "fuzz: kept tests/fuzz/corpus/$t/${f##*/}; reproduce: $BUILD_DIR/tests/fuzz/fuzz_$t tests/fuzz/corpus/$t/${f##*/}" >&2
  done
}

echo "fuzz: ${targets[*]}: ${SECS}s each (hdf5 ${HDF5_SECS}s), $PAR at a time"
running=()
for t in "${targets[@]}"; do
  [[ -x $BUILD_DIR/tests/fuzz/fuzz_$t ]] || { echo "fuzz: no target '$t'" >&2; exit 2; }
  rm -rf "$BUILD_DIR/findings/$t"
  run_target "$t" &
  pid_of[$t]=$!
  running+=("$t")
  if ((${#running[@]} >= PAR)); then
    finish "${running[0]}"
    running=("${running[@]:1}")
  fi
done
for t in "${running[@]}"; do finish "$t"; done

if ((${#failed[@]} > 0)); then
  echo "fuzz: findings in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: no findings"
