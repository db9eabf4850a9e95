#!/usr/bin/env bash
# A/B of the CPU build: two `cagra` CLIs build Fashion-MNIST (60,000 x 784) with the CPU backend,
# interleaved (A B A B ...), f32 and u8 ("input") storage, degree 32 from a 64-NN graph, at THREADS
# threads, with hnswlib's build (M=16, efConstruction=200, f32) in the same rounds when its peer
# binary is given. Each side's indexes of the last round are compared byte for byte (a change that
# should keep the graphs says so here). Prints a line per build and the medians. BASE and QUERIES
# name another set (any format `cagra build` reads), STORAGES the storages to build.
#
#   A_CLI=/path/cagra-a B_CLI=/path/cagra-b [THREADS=2] [ROUNDS=3] [HNSWLIB=build/hnswlib_peer] \
#     [FASHION=/usr/share/datasets/fashion-mnist] [BASE=... QUERIES=...] [STORAGES="f32 input"] \
#     [WORK=/tmp/cpu-build-ab] bash scripts/dev/cpu-build-ab.sh
set -uo pipefail
A_CLI=${A_CLI:?set A_CLI and B_CLI}
B_CLI=${B_CLI:?set A_CLI and B_CLI}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
HNSWLIB=${HNSWLIB:-}
F=${FASHION:-/usr/share/datasets/fashion-mnist}
W=${WORK:-/tmp/cpu-build-ab}
mkdir -p "$W"
base=${BASE:-$F/train-images-idx3-ubyte.gz}
queries=${QUERIES:-$F/t10k-images-idx3-ubyte.gz}
STORAGES=${STORAGES:-f32 input}
L="$W/builds.txt"
: >"$L"
echo "# CPU build A/B of $base: A=$A_CLI B=$B_CLI, $THREADS threads, $ROUNDS rounds, $(nproc) cores," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
grep -q -m1 avx512f /proc/cpuinfo && echo "# the CPU has AVX-512F" || echo "# the CPU has no AVX-512F"

if [ -n "$HNSWLIB" ] && [ ! -s "$W/gt.ibin" ]; then
  "$B_CLI" gt "$base" "$queries" -k 10 -o "$W/gt.ibin" --threads "$(nproc)" >/dev/null
fi
for r in $(seq 1 "$ROUNDS"); do
  for side in a b; do
    cli=$A_CLI
    [ $side = b ] && cli=$B_CLI
    for storage in $STORAGES; do
      t=$("$cli" build "$base" -o "$W/$side-$storage.cagra" --storage "$storage" --graph-degree 32 \
        --intermediate-degree 64 --threads "$THREADS" --backend cpu --force 2>/dev/null |
        sed -n 's/.*knn \([0-9.]*\) s, optimize \([0-9.]*\) s, total \([0-9.]*\) s.*/\3 \1 \2/p')
      echo "$side $storage round $r total/knn/optimize s: $t" | tee -a "$L"
    done
  done
  if [ -n "$HNSWLIB" ]; then
    t=$("$HNSWLIB" "$base" "$queries" "$W/gt.ibin" --threads "$THREADS" --batch 0 --ef 10 --reps 1 \
      2>&1 | sed -n "s/.*build_s=\([0-9.]*\).*/\1/p" | head -1)
    echo "hnswlib f32 round $r total s: $t" | tee -a "$L"
  fi
done
for storage in $STORAGES; do
  cmp -s "$W/a-$storage.cagra" "$W/b-$storage.cagra" && same="the same bytes" || same="different bytes"
  echo "# $storage indexes of A and B: $same"
done
python3 - "$L" "$STORAGES" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) > 6 and f[-1] != ":":
        rows.setdefault((f[0], f[1]), []).append(float(f[6]))
for (side, storage), v in sorted(rows.items()):
    print(f"median {side} {storage}: {statistics.median(v):.2f} s (of {', '.join(f'{x:.2f}' for x in v)})")
for storage in sys.argv[2].split():
    a, b = rows.get(("a", storage)), rows.get(("b", storage))
    if a and b:
        print(f"A/B {storage}: {statistics.median(a) / statistics.median(b):.2f}x")
EOF
