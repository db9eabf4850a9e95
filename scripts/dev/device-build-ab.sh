#!/usr/bin/env bash
# A/B of the GPU build on the GPU machine: `cagra build` of two source trees, interleaved
# (A B A B ...), on one staged set, so that a change's effect on build time is measured in one
# run on one device; then the kNN graph's recall (graph_metrics --knn-recall, B only) and the
# search recall of each side's last index (batch 10K, itopk 32/64/128, B's CLI searching both,
# so that only the graphs differ).
#
#   OUT=$OUT bash scripts/dev/device-build-ab.sh A_TARBALL NAME
#
# A_TARBALL: the other tree as `git archive COMMIT | gzip` (carried, e.g. stage/before-COMMIT.tar.gz);
# NAME: a staged dataset in $DATA_ROOT/NAME (base.u8bin or base.fbin, query.*; gt.ibin is
# computed on the GPU when missing). Writes $OUT/build-ab-NAME-DEVICE-COMMIT.jsonl (system
# cagra-cuda-build, one line per build, params.tree a or b, host_peak_gib the build's max RSS)
# and prints a table: each side's median total, kNN and optimize seconds per degree, and B/A.
#
# Environment: OUT (/tmp/out), DATA_ROOT (/tmp/cagra-data), ROUNDS (3), DEGREES (32 64),
# A_COMMIT / B_COMMIT (labels; B_COMMIT defaults to this tree's HEAD), METRIC (l2), SKIP_RECALL=1
# (timings only: no kNN or search recall).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

A_TAR=${1:?usage: device-build-ab.sh A_TARBALL NAME}
NAME=${2:?usage: device-build-ab.sh A_TARBALL NAME}
OUT=${OUT:-/tmp/out}
DATA=${DATA_ROOT:-/tmp/cagra-data}/$NAME
ROUNDS=${ROUNDS:-3}
DEGREES=${DEGREES:-32 64}
METRIC=${METRIC:-l2}
A_COMMIT=${A_COMMIT:-$(basename "$A_TAR" .tar.gz | sed 's/^before-//')}
B_COMMIT=${B_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
W=/tmp/cagra-build-ab
mkdir -p "$OUT" "$W/a"
DEVICE=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
TAG=$(sed 's/^NVIDIA //; s/ .*//' <<<"$DEVICE" | tr '[:upper:]' '[:lower:]')
J="$OUT/build-ab-$NAME-${TAG:-gpu}-$B_COMMIT.jsonl"
L="$OUT/build-ab-$NAME.log"
say() { echo "== $* ($(date -u +%H:%M:%S))" | tee -a "$L"; }

say "unpack A ($A_TAR) and build both CLIs"
tar -xzf "$A_TAR" -C "$W/a"
build() {  # build SRC_DIR TARGETS...: configure and build
  local src=$1
  shift
  cmake -S "$src" -B "$src/build-ab" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DCAGRA_BUILD_TESTS=OFF -DCAGRA_BUILD_BENCH=ON >/dev/null &&
    cmake --build "$src/build-ab" --target "$@" -j 8
}
build "$W/a" cagra_cli >"$OUT/build-ab-a.log" 2>&1 &
build "$PWD" cagra_cli graph_metrics >"$OUT/build-ab-b.log" 2>&1 ||
  { say "B build failed"; tail -20 "$OUT/build-ab-b.log"; exit 1; }
wait $! || { say "A build failed"; tail -20 "$OUT/build-ab-a.log"; exit 1; }
CLI_A=$W/a/build-ab/cagra
CLI_B=$PWD/build-ab/cagra

base="" queries=""
for e in u8bin fbin; do
  [[ -z $base && -s $DATA/base.$e ]] && base=$DATA/base.$e
  [[ -z $queries && -s $DATA/query.$e ]] && queries=$DATA/query.$e
done
[[ -n $base && -n $queries ]] || { say "no staged data in $DATA"; exit 1; }
gt=$DATA/gt.ibin
if [[ ! -s $gt ]]; then
  gt=$W/gt.ibin
  [[ -s $gt ]] || "$CLI_B" gt "$base" "$queries" -k 100 -o "$gt" --backend cuda --metric "$METRIC" \
    >>"$L" 2>&1 || { say "ground truth failed"; exit 1; }
fi
read -r n dim < <(python3 -c "import numpy as np,sys; h=np.fromfile(sys.argv[1],dtype=np.uint32,count=2); print(h[0],h[1])" "$base")
run_id="$(date -u +%Y%m%dT%H%M%SZ)-$$"

say "interleaved builds: $ROUNDS rounds, degrees $DEGREES"
for r in $(seq "$ROUNDS"); do
  for d in $DEGREES; do
    for side in a b; do
      cli=$CLI_A commit=$A_COMMIT
      [ "$side" = b ] && cli=$CLI_B commit=$B_COMMIT
      # The build as a child of python, for its peak host memory (max RSS, KiB).
      python3 -c 'import resource, subprocess, sys
rc = subprocess.run(sys.argv[2:]).returncode
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(rc)' "$W/rss" "$cli" build "$base" -o "$W/$side-d$d.cagra" --backend cuda --graph-degree "$d" \
        --metric "$METRIC" --force >"$W/build.log" 2>&1 ||
        { say "$side build failed: $(tail -1 "$W/build.log")"; continue; }
      rss=$(awk '{printf "%.2f", $1 / 1048576}' "$W/rss")
      line=$(grep -E '^time' "$W/build.log")
      knn=$(sed -n 's/.*knn \([0-9.]*\) s.*/\1/p' <<<"$line")
      opt=$(sed -n 's/.*optimize \([0-9.]*\) s.*/\1/p' <<<"$line")
      tot=$(sed -n 's/.*total \([0-9.]*\) s.*/\1/p' <<<"$line")
      it=$(sed -n 's/.*(\([0-9]*\) iterations).*/\1/p' "$W/build.log" | head -1)
      echo "round $r degree $d $side: knn $knn s, optimize $opt s, total $tot s, ${it:-?} iterations, host peak $rss GiB" | tee -a "$L"
      printf '{"run_id":"%s","system":"cagra-cuda-build","device":"%s","commit":"%s","dataset":"%s","metric":"%s","n":%s,"dim":%s,"nq":0,"batch":0,"k":0,"params":{"graph_degree":%s,"intermediate_graph_degree":%s,"knn_iterations":%s,"tree":"%s","round":%s},"recall":null,"qps":null,"build_s":%s,"knn_s":%s,"optimize_s":%s,"host_peak_gib":%s}\n' \
        "$run_id" "$DEVICE" "$commit" "$NAME" "$METRIC" "$n" "$dim" "$d" "$((2 * d))" "${it:-null}" \
        "$side" "$r" "$tot" "$knn" "$opt" "$rss" >>"$J"
    done
  done
done

say "median seconds (total / kNN / optimize)"
python3 - "$J" <<'EOF' | tee -a "$L"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'degree':>6} {'A total':>8} {'B total':>8} {'B/A':>6} {'A knn':>7} {'B knn':>7} {'A opt':>7} {'B opt':>7} {'A RSS':>6} {'B RSS':>6}")
for d in sorted({r["params"]["graph_degree"] for r in rows}):
    m = {}
    for side in "ab":
        s = [r for r in rows if r["params"]["graph_degree"] == d and r["params"]["tree"] == side]
        m[side] = [statistics.median(r.get(f, float("nan")) for r in s) if s else float("nan")
                   for f in ("build_s", "knn_s", "optimize_s", "host_peak_gib")]
    a, b = m["a"], m["b"]
    print(f"{d:>6} {a[0]:8.3f} {b[0]:8.3f} {b[0] / a[0]:6.3f} {a[1]:7.3f} {b[1]:7.3f} {a[2]:7.3f} {b[2]:7.3f} {a[3]:6.2f} {b[3]:6.2f}")
EOF

for d in $DEGREES; do
  [ "${SKIP_RECALL:-0}" = 1 ] && break
  say "kNN graph recall (B), intermediate degree $((2 * d))"
  timeout 60 stdbuf -oL "$PWD/build-ab/graph_metrics" "$base" --graph-degree "$d" \
    --intermediate-degree "$((2 * d))" --metric "$METRIC" --backend cuda --knn-recall 1000 \
    >"$W/recall.log" 2>&1
  grep -E "recall" "$W/recall.log" | tee -a "$L"
  for side in a b; do
    say "search recall of $side's degree-$d index (B's CLI, batch 10K)"
    "$CLI_B" bench "$W/$side-d$d.cagra" "$queries" "$gt" --backend cuda --itopk 32,64,128 \
      --batch 10000 --repeat 3 >"$W/bench.log" 2>&1
    grep -E "^ *[0-9]+ " "$W/bench.log" | tee -a "$L"
  done
done
say "done: $(wc -l <"$J") JSON lines in $J"
