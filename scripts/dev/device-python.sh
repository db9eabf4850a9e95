#!/usr/bin/env bash
# The Python package on the GPU machine: build it with the CUDA backend, check that the
# extension exports its init function only and that torch imports after it, run the whole pytest
# suite (torch and cupy are in the device image), then bench/torch_calls.py on bigann10k, without
# and with labels.
# Logs and the JSON lines go to $OUT.
#
#   carry data/shared (data/shared/bigann10k: see device-check.sh), then
#   OUT=$OUT LABEL=<commit> [BASELINE=<commit>] bash scripts/dev/device-python.sh
# BASELINE: also the package of that commit (a git worktree, built beside), timed on the
# labelled index in the same run.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
OUT=${OUT:-/tmp/out}
LABEL=${LABEL:-$(git rev-parse --short HEAD)}
SITE=${SITE:-/tmp/cagra-site}
mkdir -p "$OUT"
export CAGRA_DATA_DIR=${CAGRA_DATA_DIR:-$PWD/data/shared}
t0=$SECONDS
env CAGRA_CUDA=ON CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" python3 -m pip install -q \
  --no-build-isolation --no-deps --target "$SITE" --config-settings=build-dir=build-device-python \
  . >"$OUT/python-build.log" 2>&1 || { tail -30 "$OUT/python-build.log"; exit 1; }
echo "built in $((SECONDS - t0)) s"
export PYTHONPATH=$SITE
echo "exported: $(nm -D --defined-only "$SITE"/cagra/_cagra*.so | awk '{print $3}' | tr '\n' ' ')"
for i in 1 2 3; do
  python3 -c "import cagra; import torch, torch.ao.quantization; print('import cagra; import torch: ok')" 2>&1 | tail -1
done
python3 -m pytest python/tests -q -rs -p no:cacheprovider >"$OUT/pytest.log" 2>&1
echo "pytest rc=$?: $(tail -1 "$OUT/pytest.log")"
D=$CAGRA_DATA_DIR/bigann10k
# The same index twice: without labels, and with labels (row * 7 + 3: searches return labels).
python3 -c "
import cagra, numpy as np
x = cagra.read_matrix('$D/base.u8bin')
cagra.build(x, graph_degree=32).save('/tmp/bigann10k.cagra')
labels = np.arange(len(x), dtype=np.int64) * 7 + 3
cagra.build(x, graph_degree=32, labels=labels).save('/tmp/bigann10k-labels.cagra')"
for set in bigann10k bigann10k-labels; do
  # Recall is of row ids: the labelled rows' ground truth is mapped the same way.
  python3 bench/torch_calls.py "/tmp/$set.cagra" "$D/query.u8bin" "$D/groundtruth.ibin" \
    --batches 1,10,100 --ext-alloc --dataset "$set" --label "$LABEL" \
    --json "$OUT/torch-calls-$set-h200-$LABEL.jsonl" 2>&1 | tee -a "$OUT/torch-calls.txt"
done
if [ -n "${BASELINE:-}" ]; then
  rm -rf /tmp/baseline && git worktree add -f --detach /tmp/baseline "$BASELINE" >/dev/null 2>&1 &&
    (cd /tmp/baseline && env CAGRA_CUDA=ON CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" python3 -m pip \
      install -q --no-build-isolation --no-deps --target /tmp/cagra-site-baseline \
      --config-settings=build-dir=/tmp/baseline-build . >"$OUT/python-build-baseline.log" 2>&1) &&
    PYTHONPATH=/tmp/cagra-site-baseline python3 -c "import torch, runpy, sys  # torch first: see
sys.argv = sys.argv[1:]  # docs/python.md, 'Importing beside torch', for packages before e0f9e10
runpy.run_path(sys.argv[0], run_name='__main__')" bench/torch_calls.py /tmp/bigann10k-labels.cagra \
      "$D/query.u8bin" "$D/groundtruth.ibin" --batches 1,10,100 --ext-alloc \
      --dataset bigann10k-labels --label "$BASELINE" \
      --json "$OUT/torch-calls-bigann10k-labels-h200-$BASELINE.jsonl" 2>&1 |
    tee -a "$OUT/torch-calls.txt" || echo "baseline $BASELINE: failed (see python-build-baseline.log)"
fi
