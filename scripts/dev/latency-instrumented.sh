#!/usr/bin/env bash
# The measurements of the CPU latency path that need code main does not carry
# (docs/benchmarks.md, "The CPU's latency path"): a CPU-only CLI built from a commit with a patch
# applied, then the runs. Two experiments:
#
#   scripts/dev/latency-instrumented.sh trace   32a2fd9 + bench/results/logs/latency-walker-trace-32a2fd9.patch:
#       a walker's phase times (WTRACE) and the call's (TRACE: region, threads' start delay,
#       mean and slowest walker), at exit; 16 walkers in turn on one thread against at once on
#       16 (search_width 16), a visited set per walker (CAGRA_WALK_PRIVATE=1), the automatic
#       walkers on 8 and 16 threads; and huge pages for the rows and graph against none
#       (CAGRA_NO_HUGE=1), two rounds, for the one walk, the walkers and batch 10K.
#   scripts/dev/latency-instrumented.sh slot-ab  e83c4a6 + bench/results/logs/latency-slot-prefetch-ab-e83c4a6.patch:
#       the visited-set slot prefetch (0fd36d2) on and off (CAGRA_NO_SLOT_PREFETCH=1), two
#       interleaved rounds at 8 and 16 threads
#       (bench/results/logs/latency-slot-prefetch-ab-sift-wall-1m-cpu16.txt).
#
# Needs the repository's history (a git worktree goes to $WORK/src) and SIFT-wall-1M staged by
# scripts/dev/stage.sh into $DATA_ROOT/sift-wall-1m. Environment: WORK (/tmp/latency-exp),
# DATA_ROOT (/tmp/cagra-data), THREADS (16).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
what=${1:?usage: latency-instrumented.sh trace|slot-ab}
case $what in
  trace) commit=32a2fd9 patch=bench/results/logs/latency-walker-trace-32a2fd9.patch ;;
  slot-ab) commit=e83c4a6 patch=bench/results/logs/latency-slot-prefetch-ab-e83c4a6.patch ;;
  *) echo "usage: latency-instrumented.sh trace|slot-ab" >&2; exit 2 ;;
esac
WORK=${WORK:-/tmp/latency-exp}/$what
T=${THREADS:-16}
D=${DATA_ROOT:-/tmp/cagra-data}/sift-wall-1m
patch=$PWD/$patch
rm -rf "$WORK/src" && git worktree prune && git worktree add -q --detach "$WORK/src" "$commit"
git -C "$WORK/src" apply "$patch"
cmake -S "$WORK/src" -B "$WORK/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=OFF \
  -DCAGRA_BUILD_TESTS=OFF >"$WORK/build.log" 2>&1 && ninja -C "$WORK/build" cagra_cli >>"$WORK/build.log" 2>&1 ||
  { tail -20 "$WORK/build.log"; exit 1; }
B=$WORK/build/cagra
I=$WORK/sift-wall-1m-d32.cagra
[ -s "$I" ] || "$B" build "$D/base.u8bin" -o "$I" --graph-degree 32 --intermediate-degree 64 \
  --backend cpu --force | grep ^time
bench() { "$B" bench "$I" "$D/query.u8bin" "$D/gt.ibin" --backend cpu "$@" 2>&1 | tail -n +4; }
if [ "$what" = trace ]; then
  for env in X=1 CAGRA_WALK_PRIVATE=1; do for t in 1 "$T"; do
    echo "== $env threads $t width 16"
    env $env "$B" bench "$I" "$D/query.u8bin" "$D/gt.ibin" --backend cpu --batch 1 --algo multi \
      --threads "$t" --search-width 16 --itopk 64 --repeat 1 2>&1 | tail -3
  done; done
  for t in 8 "$T"; do
    echo "== automatic walkers, threads $t"
    bench --batch 1 --algo multi --threads "$t" --itopk 64 --repeat 1
  done
  for round in 1 2; do for env in X=1 CAGRA_NO_HUGE=1; do
    echo "== round $round $env: one walk (1 thread), walkers ($T threads), batch 10K ($T threads)"
    env $env "$B" bench "$I" "$D/query.u8bin" "$D/gt.ibin" --backend cpu --batch 1 --itopk 32,64 --repeat 2 2>&1 | tail -2
    env $env "$B" bench "$I" "$D/query.u8bin" "$D/gt.ibin" --backend cpu --batch 1 --algo multi --threads "$T" --itopk 64 --repeat 2 2>&1 | tail -3
    env $env "$B" bench "$I" "$D/query.u8bin" "$D/gt.ibin" --backend cpu --batch 0 --threads "$T" --itopk 32,64 --repeat 3 2>&1 | tail -3
  done; done
else
  for round in 1 2; do for env in X=1 CAGRA_NO_SLOT_PREFETCH=1; do for t in 8 "$T"; do
    echo "== round $round $env threads $t"
    env $env "$B" bench "$I" "$D/query.u8bin" "$D/gt.ibin" --backend cpu --batch 1 --algo multi \
      --threads "$t" --itopk 16,64,128 --repeat 3 2>&1 | tail -3
  done; done; done
fi
git worktree remove --force "$WORK/src"
