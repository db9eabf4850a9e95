#!/usr/bin/env bash
# cagra::load of a large index from the page cache, two source trees interleaved on the GPU
# machine: both CLIs are built, B's builds a SYNTHETIC 1M x 384 f32 index of degree 64 on the GPU
# (1.79 GB), then each round times the whole `cagra search` of 16 queries on the CPU backend
# (load + search; the search itself is a few ms) for A and B in turn, and the two result files are
# compared. Written for "The host's side" in docs/benchmarks.md (its log holds the run's output).
#
#   OUT=$OUT bash scripts/dev/device-load-ab.sh A_TARBALL
#
# A_TARBALL: the other tree as `git archive COMMIT | gzip` (carried). Environment: OUT
# (/tmp/out), ROUNDS (4). Writes $OUT/load-ab.log.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

A_TAR=${1:?usage: device-load-ab.sh A_TARBALL}
OUT=${OUT:-/tmp/out}
ROUNDS=${ROUNDS:-4}
W=/tmp/cagra-load-ab
D=/tmp/cagra-data/synthetic-384
mkdir -p "$W/a" "$OUT"
tar -xzf "$A_TAR" -C "$W/a"
[[ -s $D/base.fbin ]] || python3 bench/make_synthetic.py --dim 384 "$D" >"$W/data.log" 2>&1 &
bld() {  # bld SRC DIR
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_TESTS=OFF -DCAGRA_BUILD_BENCH=OFF >"$2.log" 2>&1 &&
    ninja -C "$2" -j 8 cagra_cli >>"$2.log" 2>&1 || { echo "FAIL $2"; tail -20 "$2.log"; }
}
bld "$W/a" "$W/ba" &
bld "$PWD" "$W/bb" &
wait
echo "== builds done $SECONDS s"

{
  "$W/bb/cagra" build "$D/base.fbin" -o "$W/idx.cagra" --backend cuda --graph-degree 64 --force |
    grep -E "^dataset|^time"
  ls -l "$W/idx.cagra"
  python3 - "$D/query.fbin" "$W/q16.fbin" <<'PY'
import sys
import numpy as np
src, dst = sys.argv[1], sys.argv[2]
d = int(np.fromfile(src, dtype=np.uint32, count=2)[1])
rows = np.fromfile(src, dtype=np.float32, offset=8, count=16 * d)
with open(dst, "wb") as f:
    np.array([16, d], dtype=np.uint32).tofile(f)
    rows.tofile(f)
PY
  for r in $(seq "$ROUNDS"); do
    for s in a b; do
      t0=$EPOCHREALTIME
      "$W/b$s/cagra" search "$W/idx.cagra" "$W/q16.fbin" -k 10 --backend cpu -o "$W/res-$s.ibin" \
        --force >"$W/search-$s.txt" 2>&1
      t1=$EPOCHREALTIME
      echo "round $r $s: wall $(python3 -c "print('%.3f' % ($t1 - $t0))") s, $(grep ^time "$W/search-$s.txt")"
    done
  done
  cmp "$W/res-a.ibin" "$W/res-b.ibin" && echo "results identical"
} 2>&1 | tee "$OUT/load-ab.log"
echo "== done $SECONDS s"
