#!/usr/bin/env bash
# Warp-stall profile of the batch-1 multi-CTA kernel on the GPU machine: Nsight Compute's
# WarpStateStats, SchedulerStats and SourceCounters over 30 launches of `cagra bench --batch 1`
# (a launch per query, so each query is one kernel), then the per-instruction stall samples
# summed over the launches (the source page's CSV is ~15K lines a launch: too large to bring
# back) into the totals per stall reason and the 45 instructions with the most samples.
#
#   OUT=$OUT bash scripts/dev/device-ncu-batch1.sh [NAME]
#
# NAME: a staged data set in $DATA_ROOT/NAME (default sift-wall-1m; scripts/dev/stage.sh).
# Environment: BUILD_DIR (build-device), DEGREE (32), ITOPK (32), SKIP (300: launches before the
# profiled ones), COUNT (30). Writes $OUT/ncu-batch1.txt (the summary) and $OUT/ncu-batch1-top.txt.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
NAME=${1:-sift-wall-1m}
D=${DATA_ROOT:-/tmp/cagra-data}/$NAME
BUILD_DIR=${BUILD_DIR:-build-device}
DEGREE=${DEGREE:-32}
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p "$OUT"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  >"$OUT/ncu-build.log" 2>&1 && cmake --build "$BUILD_DIR" -j "$(nproc)" --target cagra_cli >>"$OUT/ncu-build.log" 2>&1 ||
  { echo "build failed: $OUT/ncu-build.log"; exit 1; }
C="$BUILD_DIR/cagra"
idx=/tmp/$NAME-d$DEGREE.cagra
[ -s "$idx" ] || "$C" build "$D/base.u8bin" -o "$idx" --graph-degree "$DEGREE" \
  --intermediate-degree $((2 * DEGREE)) --force >"$OUT/ncu-index.log" 2>&1
"$NCU" --clock-control none --launch-skip "${SKIP:-300}" --launch-count "${COUNT:-30}" \
  -k regex:multi_cta_search_inline --section WarpStateStats --section SchedulerStats \
  --section SourceCounters --import-source no -f -o /tmp/ncu-batch1 \
  "$C" bench "$idx" "$D/query.u8bin" "$D/gt.ibin" --backend cuda --batch 1 -k 10 \
  --itopk "${ITOPK:-32}" --persistent off >"$OUT/ncu-run.log" 2>&1 || { tail -5 "$OUT/ncu-run.log"; exit 1; }
"$NCU" --import /tmp/ncu-batch1.ncu-rep --page details --print-summary per-kernel >"$OUT/ncu-batch1.txt" 2>&1
"$NCU" --import /tmp/ncu-batch1.ncu-rep --page source --csv --print-source sass >/tmp/ncu-batch1-source.csv 2>/dev/null
python3 - /tmp/ncu-batch1-source.csv >"$OUT/ncu-batch1-top.txt" <<'PY'
import collections, csv, sys
S = "Warp Stall Sampling (All Samples)"
hdr, agg, tot = None, {}, collections.Counter()
for r in csv.reader(open(sys.argv[1])):
    if len(r) > 3 and r[0] == "Address":
        hdr = r
        continue
    if hdr is None or len(r) != len(hdr):
        continue
    d = dict(zip(hdr, r))
    a = agg.setdefault((d["Address"], d["Source"]), collections.Counter())
    for h in hdr:
        if h == S or (h.startswith("stall_") and "Not Issued" not in h):
            v = float(d[h] or 0)
            a[h] += v
            tot[h] += v
print("totals:", ", ".join(f"{k} {int(v)}" for k, v in tot.most_common()))
for (addr, src), c in sorted(agg.items(), key=lambda kv: -kv[1][S])[:45]:
    top = [(k[6:], int(v)) for k, v in c.most_common() if k != S and v > 0][:3]
    print(f"{addr} {int(c[S]):7d} {src[:60]:60s} " + " ".join(f"{k}={v}" for k, v in top))
PY
cat "$OUT/ncu-batch1.txt" | grep -vE "^\s*$" | tail -30
head -1 "$OUT/ncu-batch1-top.txt"
