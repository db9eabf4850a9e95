#!/usr/bin/env bash
# The Python package on the GPU machine: build it with the CUDA backend, check that the
# extension exports its init function only and that torch imports after it, run the whole pytest
# suite (torch and cupy are in the device image), then bench/torch_calls.py on bigann10k.
# Logs and the JSON lines go to $OUT.
#
#   carry data/shared (data/shared/bigann10k: see device-check.sh), then
#   OUT=$OUT LABEL=<commit> bash scripts/dev/device-python.sh
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
python3 -c "
import cagra
x = cagra.read_matrix('$D/base.u8bin')
cagra.build(x, graph_degree=32).save('/tmp/bigann10k.cagra')"
python3 bench/torch_calls.py /tmp/bigann10k.cagra "$D/query.u8bin" "$D/groundtruth.ibin" \
  --batches 1,10,100 --ext-alloc --dataset bigann10k --label "$LABEL" \
  --json "$OUT/torch-calls-bigann10k-h200-$LABEL.jsonl" 2>&1 | tee "$OUT/torch-calls.txt"
