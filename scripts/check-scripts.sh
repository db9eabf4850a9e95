#!/usr/bin/env bash
# Parses every shell script of the repository (`bash -n`): the GPU-machine scripts in
# scripts/dev/ never run in CI, so a syntax error there would otherwise surface only on a
# device call.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
n=0
while IFS= read -r -d '' f; do
  bash -n "$f" || { echo "check-scripts: $f does not parse" >&2; exit 1; }
  n=$((n + 1))
done < <(git ls-files -z '*.sh' '.ci/run')
echo "check-scripts: $n scripts parse"
