#!/usr/bin/env bash
# A/B of the CPU brute force: two `cagra` CLIs compute Fashion-MNIST's ground truth (60,000 x 784
# u8 base, 10,000 queries, k 100) interleaved (A B A B ...) at THREADS threads, wall seconds a
# call; the two sides' files are compared byte for byte.
#
#   A_CLI=/path/cagra-a B_CLI=/path/cagra-b [THREADS=2] [ROUNDS=2] \
#     [FASHION=/usr/share/datasets/fashion-mnist] bash scripts/dev/cpu-gt-ab.sh
set -euo pipefail
A_CLI=${A_CLI:?set A_CLI and B_CLI}
B_CLI=${B_CLI:?set A_CLI and B_CLI}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-2}
F=${FASHION:-/usr/share/datasets/fashion-mnist}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
echo "# cagra gt, Fashion-MNIST (u8), k 100, $THREADS threads, $(nproc) cores," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); A=$A_CLI B=$B_CLI"
for r in $(seq 1 "$ROUNDS"); do
  for side in a b; do
    cli=$A_CLI
    [ $side = b ] && cli=$B_CLI
    t0=$EPOCHREALTIME
    "$cli" gt "$F/train-images-idx3-ubyte.gz" "$F/t10k-images-idx3-ubyte.gz" -k 100 \
      -o "$W/$side.ibin" --threads "$THREADS" --force >/dev/null 2>&1
    t1=$EPOCHREALTIME
    python3 -c "print('$side round $r: %.2f s' % ($t1 - $t0))"
  done
done
cmp -s "$W/a.ibin" "$W/b.ibin" && echo "# A and B wrote the same bytes" || echo "# A and B differ"
