#!/usr/bin/env bash
# The SASS of a kernel from an object this machine compiled, without a GPU or a CUDA toolkit that
# ships cuobjdump: NVIDIA's cuobjdump and nvdisasm come from PyPI (the nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm wheels, no dependencies, ~5 MB) into a cache folder the first time. Prints the instructions of every function
# whose mangled name matches REGEX, without the encodings; with COUNT=1 only how many of each
# opcode (e.g. LDS.128, IDP.4A.U8.U8, SHFL.BFLY) they hold.
#
#   scripts/dev/sass.sh OBJECT REGEX
#   e.g. scripts/dev/sass.sh build-cuda/CMakeFiles/cagra_objects.dir/src/cuda/search/inst_mcta_u8.cu.o \
#          'multi_cta_persistentIhLj4E'
#
# Environment: SASS_TOOLS (cache folder, default ~/.cache/cagra-sass-tools), COUNT=1.
set -euo pipefail
obj=${1:?usage: sass.sh OBJECT REGEX}
regex=${2:?usage: sass.sh OBJECT REGEX}
tools=${SASS_TOOLS:-$HOME/.cache/cagra-sass-tools}
[ -f "$obj" ] || { echo "sass.sh: no object $obj" >&2; exit 1; }
bin=$(find "$tools" -name cuobjdump -type f 2>/dev/null | head -1 || true)
if [ -z "$bin" ] || [ ! -x "$(dirname "$bin")/nvdisasm" ]; then
  mkdir -p "$tools"
  python3 -m pip download --quiet --no-deps nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm -d "$tools" >&2
  for w in "$tools"/nvidia_cuda_*.whl; do python3 -m zipfile -e "$w" "$tools"; done
  bin=$(find "$tools" -name cuobjdump -type f | head -1)
  chmod +x "$bin" "$(dirname "$bin")/nvdisasm"
fi
export PATH="$(dirname "$bin"):$PATH"
names=$("$bin" -elf "$obj" | grep -oE '\.text\.[^[:space:]]+' | sed 's/^\.text\.//' | sort -u | grep -E "$regex" || true)
[ -n "$names" ] || { echo "sass.sh: no function of $obj matches $regex" >&2; exit 1; }
for f in $names; do
  echo "== $f"
  "$bin" -sass -fun "$f" "$obj" >/dev/null  # its error, if any, before the filters below
  if [[ ${COUNT:-0} == 1 ]]; then
    "$bin" -sass -fun "$f" "$obj" | grep -oE '^\s+/\*[0-9a-f]+\*/\s+(@!?U?P[0-9T] )?[A-Z0-9_.]+' |
      awk '{print $NF}' | sort | uniq -c | sort -rn
  else
    "$bin" -sass -fun "$f" "$obj" | grep -E '^\s+/\*[0-9a-f]+\*/' | sed -E 's@ */\* 0x[0-9a-f]+ \*/@@'
  fi
done
