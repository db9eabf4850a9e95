#!/usr/bin/env bash
# Batch 1 at the defaults on the GPU machine, this tree (B) against another (A), with hnswlib's
# single thread in the same run: the commands behind bench/results/batch1-scan-*,
# batch1-defaults-* and batch1-scan-sums-* (2ba6fac). In order: B's CUDA multi-CTA tests and
# memcheck of the persistent and pool cases; A's CLI from its tarball; one index (built by B);
# ROUNDS interleaved rounds of `cagra bench --batch 1 --persistent on --itopk 32,64` (A then B);
# the traced persistent call of B (CudaLatency.TracedMultiCta, a -DCAGRA_TRACE_KERNELS=ON build)
# and the host merge's CPU work there (CudaLatencyHost.HostMerge);
# hnswlib (M=16, efC=200) at batch 1 on one thread, best of 3 passes (carry third_party/include).
#
#   OUT=$OUT bash scripts/dev/device-batch1-ab.sh A_TARBALL NAME
#
# A_TARBALL: `git archive COMMIT | gzip` (carried, e.g. stage/before-COMMIT.tar.gz), or several
# separated by commas (sides a1, a2, ...; A_COMMIT then a comma list of labels); NAME: a set
# staged in $DATA_ROOT/NAME (base.u8bin, query.u8bin, gt.ibin; scripts/dev/stage.sh). Carry
# data/shared/bigann10k for the tests. Environment: ROUNDS (3), A_COMMIT / B_COMMIT (labels of the
# JSON lines), SKIP_TESTS=1, SKIP_HNSW=1, SKIP_TRACE=1, ITOPK (32,64: every side's itopk list),
# BATCHES (default 1: a comma list of `cagra bench --batch` values; the persistent kernel at 1,
# the plan's own choice at the others), B_ENV (VAR=VALUE ... set for B's runs only), B_ENVS
# (several such settings separated by `;`: B runs once a round under each, as sides b1, b2, ...,
# and its tests, memcheck and trace run under each too). Writes $OUT/batch1.jsonl (every side's
# rows; the device tool returns at most 8 files, too few for a file a side), $OUT/hnswlib.jsonl,
# $OUT/ab.txt (the result rows, and the CLI's own `cagra: ` messages, such as an experiment's
# verbose prints), $OUT/sides.txt, $OUT/trace.txt, and prints a summary last
# (tests, rounds, each side's QPS range and its ratio to the first side by round, traced calls,
# hnswlib): read the output's tail; each JSON line names its side and environment ("variant");
# the build logs go into $OUT/build-logs.tar.gz with the tests' logs, so that the device tool
# returns the other files.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
A_TAR=${1:?usage: device-batch1-ab.sh A_TARBALL NAME}
NAME=${2:?usage: device-batch1-ab.sh A_TARBALL NAME}
O=${OUT:-/tmp/out}
BATCHES=${BATCHES:-1}
D=${DATA_ROOT:-/tmp/cagra-data}/$NAME
mkdir -p "$O"
# Its outputs are appended to below: a rerun into the same folder starts them afresh.
rm -f "$O/tests-summary.txt" "$O/ab.txt" "$O/trace.txt" "$O"/batch1-*.jsonl "$O/batch1.jsonl" \
  "$O/hnswlib.jsonl"
CM=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90)
cmake -S . -B build-device "${CM[@]}" >"$O/bd.log" 2>&1 &&
  cmake --build build-device -j "$(nproc)" --target cagra_cuda_tests cagra_cli >>"$O/bd.log" 2>&1 ||
  { tail -20 "$O/bd.log"; exit 1; }
# A's CLI and the traced bench build while B's tests run.
# A's sides: one tarball is side a; several (A_TARBALL a comma list) are a1, a2, ...
IFS=',' read -r -a a_tars <<<"$A_TAR"
IFS=',' read -r -a a_commits <<<"${A_COMMIT:-}"
a_sides=(a)
((${#a_tars[@]} > 1)) && { a_sides=(); for i in "${!a_tars[@]}"; do a_sides+=("a$((i + 1))"); done; }
for i in "${!a_tars[@]}"; do
  (t=/tmp/batch1-${a_sides[$i]} && mkdir -p $t && tar -xzf "${a_tars[$i]}" -C $t &&
    cmake -S $t -B $t/build "${CM[@]}" >"$O/ba$i.log" 2>&1 &&
    cmake --build $t/build -j 8 --target cagra_cli >>"$O/ba$i.log" 2>&1) &
done
[[ ${SKIP_TRACE:-0} == 1 ]] ||
  (cmake -S . -B build-trace "${CM[@]}" -DCAGRA_TRACE_KERNELS=ON >"$O/bt.log" 2>&1 &&
    cmake --build build-trace -j 8 --target cagra_cuda_bench >>"$O/bt.log" 2>&1) &
# B's sides: (side, environment) pairs; one side `b` under B_ENV without B_ENVS.
sides=() envs=()
if [[ -n ${B_ENVS:-} ]]; then
  IFS=';' read -r -a envs <<<"$B_ENVS"
  for i in "${!envs[@]}"; do sides+=("b$((i + 1))"); done
else
  sides=(b) envs=("${B_ENV:-}")
fi
if [[ ${SKIP_TESTS:-0} != 1 ]]; then
  for i in "${!sides[@]}"; do
    read -r -a benv <<<"${envs[$i]}"
    env "${benv[@]}" build-device/tests/cagra_cuda_tests --gtest_filter='CudaMultiCta.*:CudaHostLists.*:CudaWarpList.*' \
      >"$O/multi-cta-${sides[$i]}.log" 2>&1
    echo "${sides[$i]} (${envs[$i]:-no env}) CudaMultiCta rc=$?" | tee -a "$O/tests-summary.txt"
    env "${benv[@]}" compute-sanitizer --tool memcheck --error-exitcode 1 build-device/tests/cagra_cuda_tests \
      --gtest_filter='CudaMultiCta.PersistentKernel*:CudaMultiCta.InitialPool*' \
      >"$O/memcheck-${sides[$i]}.log" 2>&1
    echo "${sides[$i]} memcheck rc=$?" | tee -a "$O/tests-summary.txt"
  done
fi
wait
# Every side of a round: its name, CLI, label and environment.
run_sides=() run_bins=() run_labels=() run_envs=()
for i in "${!a_sides[@]}"; do
  run_sides+=("${a_sides[$i]}") run_bins+=("/tmp/batch1-${a_sides[$i]}/build/cagra")
  run_labels+=("${a_commits[$i]:-${a_sides[$i]}}") run_envs+=("")
  [ -x "${run_bins[$i]}" ] || { echo "${a_sides[$i]} did not build: $O/ba$i.log"; exit 1; }
done
for i in "${!sides[@]}"; do
  run_sides+=("${sides[$i]}") run_bins+=(build-device/cagra) run_labels+=("${B_COMMIT:-b}")
  run_envs+=("${envs[$i]}")
done
build-device/cagra build "$D/base.u8bin" -o /tmp/batch1.cagra --graph-degree 32 --intermediate-degree 64 \
  --backend cuda --force >"$O/index.txt" 2>&1
for r in $(seq "${ROUNDS:-3}"); do
  for j in "${!run_sides[@]}"; do
    side=${run_sides[$j]}
    read -r -a benv <<<"${run_envs[$j]}"
    for batch in ${BATCHES//,/ }; do
      persist=(--persistent on)
      [[ $batch == 1 ]] || persist=()
      echo "== round $r $side batch $batch" >>"$O/ab.txt"
      env CAGRA_COMMIT="${run_labels[$j]}" "${benv[@]}" "${run_bins[$j]}" bench /tmp/batch1.cagra "$D/query.u8bin" "$D/gt.ibin" --backend cuda \
        --batch "$batch" -k 10 "${persist[@]}" --dataset "$NAME" --itopk "${ITOPK:-32,64}" \
        --json "$O/batch1-$side.jsonl" 2>&1 | grep -E "^ +[0-9]+ +[0-9]+ +[a-z0-9]+ +[0-9.]+ |^cagra: " >>"$O/ab.txt"
    done
  done
done
# Each row names its side and environment ("variant"), and the summary's per-side table takes
# each side's rounds against the first side's (the same round, the same itopk and batch).
sides_env=()
for j in "${!run_sides[@]}"; do sides_env+=("${run_sides[$j]}=${run_envs[$j]}"); done
python3 - "$O" "${sides_env[@]}" >"$O/sides.txt" <<'PY'
import json, statistics, sys
out, pairs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
rows = {}
for side, env in pairs:
    path = f"{out}/batch1-{side}.jsonl"
    try:
        rs = [json.loads(l) for l in open(path)]
    except FileNotFoundError:
        continue
    for r in rs:
        r["variant"] = f"side {side}: {env or 'no env'}"
    with open(path, "w") as f:
        f.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in rs)
    rows[side] = rs
first = pairs[0][0]
def points(rs):  # (batch, itopk) -> QPS in round order
    p = {}
    for r in rs:
        p.setdefault((r["batch"], r["params"]["itopk"]), []).append(r["qps"])
    return p
base = points(rows.get(first, []))
for side, env in pairs:
    for key, q in sorted(points(rows.get(side, [])).items()):
        ratio = [a / b for a, b in zip(q, base.get(key, []))]
        line = (f"{side:3} batch {key[0]} itopk {key[1]}: {min(q) / 1e3:.1f}-{max(q) / 1e3:.1f}K QPS, "
                f"median {statistics.median(q) / 1e3:.1f}K")
        if side != first and ratio:
            line += (f"; against {first} by round {min(ratio):.2f}-{max(ratio):.2f}x "
                     f"(median {statistics.median(ratio):.2f}x)")
        print(line + f"  [{env or 'no env'}]")
PY
# One file of every side's rows, in the sides' order (each row's "variant" names its side).
for side in "${run_sides[@]}"; do
  [ -f "$O/batch1-$side.jsonl" ] && cat "$O/batch1-$side.jsonl" >>"$O/batch1.jsonl"
  rm -f "$O/batch1-$side.jsonl"
done
if [[ ${SKIP_TRACE:-0} != 1 ]] && [ -x build-trace/cagra_cuda_bench ]; then
  for i in "${!sides[@]}"; do
    read -r -a benv <<<"${envs[$i]}"
    echo "== trace ${sides[$i]} (${envs[$i]:-no env})" | tee -a "$O/trace.txt"
    env "${benv[@]}" CAGRA_LATENCY_INDEX=/tmp/batch1.cagra CAGRA_LATENCY_QUERIES="$D/query.u8bin" \
      build-trace/cagra_cuda_bench --gtest_filter=CudaLatency.TracedMultiCta:CudaLatencyHost.HostMerge 2>&1 |
      grep -E "auto itopk.*(persistent|SMs)|host merge of|FAIL" | tee -a "$O/trace.txt"
  done
fi
if [[ ${SKIP_HNSW:-0} != 1 ]]; then
  cmake -S . -B build-ab-hnsw -G Ninja -DCMAKE_BUILD_TYPE=Release -DCAGRA_CUDA=OFF \
    -DCAGRA_BUILD_TESTS=OFF -DCAGRA_BUILD_BENCH=ON -DHNSWLIB_INCLUDE_DIR="$PWD/third_party/include" \
    >"$O/bh.log" 2>&1 && cmake --build build-ab-hnsw --target hnswlib_peer -j "$(nproc)" >>"$O/bh.log" 2>&1 &&
    build-ab-hnsw/hnswlib_peer "$D/base.u8bin" "$D/query.u8bin" "$D/gt.ibin" --metric l2 \
      --threads "$(nproc)" --batch 1 --ef 24,32,40,48,64 --reps 3 --dataset "$NAME" \
      --json "$O/hnswlib.jsonl" 2>&1 | tail -8
fi
# The build logs and the index's output in one archive: the device tool returns at most a few
# files of $OUT (the JSON lines, ab.txt, trace.txt and the tests' logs are the ones to read).
(cd "$O" && logs=$(ls bd.log ba*.log bt.log bh.log index.txt multi-cta-*.log memcheck-*.log 2>/dev/null)
  [ -n "$logs" ] && tar -czf build-logs.tar.gz $logs && rm -f $logs)
# Last, what to read (the device tool returns only the output's tail, and only some of $OUT's
# files): the tests, the rounds, the traced calls' main figures, hnswlib's points.
echo "== summary"
cat "$O/tests-summary.txt" 2>/dev/null
cat "$O/ab.txt"
cat "$O/sides.txt"
grep -h "host merge of 64" "$O/trace.txt" 2>/dev/null | head -1
grep -h "persistent CTAs on" "$O/trace.txt" 2>/dev/null | sed -E 's/.*\) the persistent/the persistent/'
grep -h "persistent traced" "$O/trace.txt" 2>/dev/null |
  sed -E 's/.*\) persistent traced call/traced call/' | cut -c1-800
[ -f "$O/hnswlib.jsonl" ] && python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print("hnswlib ef %4d recall %.4f QPS %9.1f" % (r["params"]["ef"], r["recall"], r["qps"]))' "$O/hnswlib.jsonl"
