#!/usr/bin/env bash
# Does the host core that posts the job and waits for the lists set the batch-1 rate? The rate of
# a `cagra bench --batch 1 --persistent on` process falls into groups ~1.2 us apart (docs/cuda.md,
# "Two polls of the host in flight"), and neither the page under the job's words (pinned-rtt.cu,
# the CAGRA_PINNED_PICK patch) nor a NUMA node explained them. The job's words are written by the
# host core just before CTA 0 reads them, so the GPU's read is served from that core's cache, and
# the lists the GPU writes invalidate lines that core then reads again: the core's place on the
# host's interconnect is on the path twice. This runs the bench pinned to each core in turn
# (taskset), ROUNDS times, cores in a different order each round, each run just after the bare
# host-GPU round trip on the same core (scripts/dev/host-gpu-rtt.cu), and records the topology.
#
#   OUT=$OUT bash scripts/dev/device-batch1-cores.sh NAME
#
# NAME: a set staged in $DATA_ROOT/NAME (base.u8bin, query.u8bin, gt.ibin; scripts/dev/stage.sh).
# Environment: ROUNDS (2), CORES (default: every core the process may use), ITOPK (64),
# B_ENV (VAR=VALUE ... for every run). Writes $OUT/cores.txt (round, core, the round trip's
# p10/p50/p90 ns, QPS), $OUT/cores.jsonl, $OUT/topology.txt and prints each core's QPS over the
# rounds, then the runs in order of their round trip with the correlation of the two.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
NAME=${1:?usage: device-batch1-cores.sh NAME}
O=${OUT:-/tmp/out}
D=${DATA_ROOT:-/tmp/cagra-data}/$NAME
mkdir -p "$O"
rm -f "$O/cores.txt" "$O/cores.jsonl"
CM=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90)
cmake -S . -B build-device "${CM[@]}" >"$O/bd.log" 2>&1 &&
  cmake --build build-device -j "$(nproc)" --target cagra_cli >>"$O/bd.log" 2>&1 ||
  { tail -20 "$O/bd.log"; exit 1; }
nvcc -O2 -arch=sm_90 -o /tmp/host-gpu-rtt scripts/dev/host-gpu-rtt.cu || exit 1
{
  lscpu
  echo
  lscpu -e
  echo
  nvidia-smi topo -m
} >"$O/topology.txt" 2>&1
[[ -f /tmp/batch1.cagra ]] ||
  build-device/cagra build "$D/base.u8bin" -o /tmp/batch1.cagra --graph-degree 32 \
    --intermediate-degree 64 --backend cuda --force >"$O/index.txt" 2>&1 ||
  { tail -5 "$O/index.txt"; exit 1; }
read -r -a cores <<<"${CORES:-$(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' |
  awk -F- '{ if (NF == 2) for (i = $1; i <= $2; i++) print i; else print $1 }' | tr '\n' ' ')}"
read -r -a benv <<<"${B_ENV:-}"
for r in $(seq "${ROUNDS:-2}"); do
  # Rotate the order so that no core always runs first (or just after the same neighbour).
  n=${#cores[@]}
  for ((j = 0; j < n; j++)); do
    c=${cores[$(((j + (r - 1) * 5) % n))]}
    rtt=$(taskset -c "$c" /tmp/host-gpu-rtt | sed 's/^rtt_ns //')
    qps=$(env CAGRA_COMMIT="${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo b)}" \
      "${benv[@]}" taskset -c "$c" build-device/cagra bench /tmp/batch1.cagra "$D/query.u8bin" \
      "$D/gt.ibin" --backend cuda --batch 1 -k 10 --persistent on --dataset "$NAME" \
      --itopk "${ITOPK:-64}" --json "$O/cores.jsonl" 2>&1 |
      awk '/^ +[0-9]+ +[0-9]+ +[a-z0-9]+ +[0-9.]+ / { print $5 }' | tail -1)
    echo "round $r core $c rtt ${rtt:-? ? ?} qps $qps" >>"$O/cores.txt"
  done
done
echo "QPS by core (rounds in order):"
awk '{ q[$4] = q[$4] " " $10 } END { for (c in q) print "core " c ":" q[c] }' "$O/cores.txt" |
  sort -k2 -n
echo "runs by the host-GPU round trip's median (ns: p10 p50 p90), and their QPS:"
sort -k7 -n "$O/cores.txt" | awk '{ print "  rtt " $6, $7, $8, " qps " $10, " (round " $2 ", core " $4 ")" }'
awk '$7 ~ /^[0-9]+$/ && $10 ~ /^[0-9]+$/ { n++; x = $7; y = $10; sx += x; sy += y; sxx += x * x;
  syy += y * y; sxy += x * y }
  END { if (n > 2) { c = (n * sxy - sx * sy) / sqrt((n * sxx - sx * sx) * (n * syy - sy * sy));
    printf "correlation of the round trip (p50) and QPS over %d runs: %.2f\n", n, c } }' "$O/cores.txt"
