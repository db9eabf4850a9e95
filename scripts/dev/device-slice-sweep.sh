#!/usr/bin/env bash
# What one GPU does with a replica's share of a batch (issue 19: a replicated call of 10,000
# queries gives each of 4 GPUs 2,500, and one GPU is less efficient with fewer queries): on a
# staged 1M set, `cagra bench` at BATCHES queries a call over itopk x kernel shape:
#  - the defaults (the plan printed once per batch),
#  - the single-CTA kernel at search widths 1, 2, 4 with one random sampling (the automatic
#    shape's draws) and team sizes TEAMS,
#  - the multi-CTA kernel at 2, 4, 8 CTAs a query.
# With LATENCY=1 also batch 1 (the first 1,000 queries, one per call) at 32 and 64 CTAs (64 is
# search_width's limit), the automatic iteration floor and caps of 3 and 2, launching per query
# and with the persistent kernel.
# Uses the CLI in BUILD_DIR (scripts/dev/device-background.sh builds it); builds the index
# (degree 32) once into /tmp/cagra-slice. JSON lines to
# $OUT/slice-sweep-NAME-DEVICE-COMMIT.jsonl, the log to $OUT/slice-sweep.log.
#
# Environment: OUT (/tmp/out), NAME (sift-wall-1m), METRIC (l2), DATA_ROOT (/tmp/cagra-data),
# BUILD_DIR (build-device), BATCHES (1000 2500 5000 10000), ITOPK (16,24,32,48,64,96,128),
# TEAMS (0,8), LATENCY (0), CAGRA_COMMIT.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
NAME=${NAME:-sift-wall-1m}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
BUILD_DIR=${BUILD_DIR:-build-device}
BATCHES=${BATCHES:-1000 2500 5000 10000}
ITOPK=${ITOPK:-16,24,32,48,64,96,128}
TEAMS=${TEAMS:-0,8}
W=/tmp/cagra-slice
mkdir -p "$OUT" "$W"
export CAGRA_COMMIT=${CAGRA_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
DEVICE_TAG=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 |
  sed 's/^NVIDIA //; s/ .*//' | tr '[:upper:]' '[:lower:]')
J="$OUT/slice-sweep-$NAME-${DEVICE_TAG:-gpu}-$CAGRA_COMMIT.jsonl"
L="$OUT/slice-sweep.log"
say() { echo "[$(printf '%4d' $SECONDS)s] $*" | tee -a "$L"; }
C="$BUILD_DIR/cagra"
[[ -x $C ]] || { say "no CLI at $C (scripts/dev/device-background.sh builds it)"; exit 1; }
pick() { for f in "$DATA/$1".u8bin "$DATA/$1".fbin; do [ -s "$f" ] && { echo "$f"; return; }; done; }
base=$(pick base) queries=$(pick query) gt="$DATA/gt.ibin"
[[ -n $base && -s $gt ]] || { say "no staged data in $DATA"; exit 1; }
idx="$W/$NAME.cagra"
[[ -s $idx ]] || "$C" build "$base" -o "$idx" --metric "${METRIC:-l2}" --graph-degree 32 \
  --intermediate-degree 64 --backend cuda --force 2>&1 | tail -1 | tee -a "$L"
bench() {
  "$C" bench "$idx" "$@" --backend cuda --dataset "$NAME" --json "$J" 2>&1 | tee -a "$L" |
    grep -v '^plan'
}
for b in $BATCHES; do
  say "batch $b: defaults"
  bench "$queries" "$gt" --batch "$b" --itopk "$ITOPK" --repeat 3 --explain
  say "batch $b: single-CTA, width 1,2,4 x team $TEAMS, one random sampling"
  bench "$queries" "$gt" --batch "$b" --itopk "$ITOPK" --repeat 3 --algo single \
    --search-width 1,2,4 --team-size "$TEAMS" --random-samplings 1
  say "batch $b: multi-CTA, 2,4,8 CTAs a query"
  bench "$queries" "$gt" --batch "$b" --itopk "$ITOPK" --repeat 3 --algo multi \
    --search-width 2,4,8
done
if [[ ${LATENCY:-0} == 1 ]]; then
  python3 scripts/dev/first_rows.py "$queries" "$gt" "$W"
  q1k=$(ls "$W"/q1k.*)
  for iters in 0 3 2; do
    for mode in off on; do
      say "batch 1: 32,64 CTAs, max iterations $iters, persistent kernel $mode"
      bench "$q1k" "$W/gt1k.ibin" --batch 1 --itopk 16,32 --search-width 32,64 \
        --max-iterations "$iters" --persistent "$mode"
    done
  done
fi
say "done: $J"
