#!/usr/bin/env bash
# Checks the C/C++/CUDA format (.clang-format at the root) of every tracked .c/.cpp/.hpp/.cu/.cuh/.h
# file under include/ src/ tools/ tests/ bench/ python/src: lists the files that clang-format
# would change and exits 1 when there is one. `--fix` rewrites them instead (exit 0).
#
# The format is clang-format 14's (Debian 12's `clang-format` package; other versions format some
# constructs differently): installed with apt-get when missing, as scripts/setup.sh does for its
# packages (CAGRA_SETUP_NO_APT=1: report it missing instead). CLANG_FORMAT picks another binary.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

fix=0
case "${1:-}" in
  --fix) fix=1 ;;
  "") ;;
  *) echo "usage: $0 [--fix]" >&2; exit 2 ;;
esac

if [[ -z ${CLANG_FORMAT:-} ]]; then
  status=$(dpkg -s clang-format 2>/dev/null || true)
  if [[ $status != *"Status: install ok installed"* ]] && ! command -v clang-format >/dev/null; then
    if [[ -n ${CAGRA_SETUP_NO_APT:-} ]]; then
      echo "check-format: clang-format is missing; CAGRA_SETUP_NO_APT is set, not installing" >&2
      exit 1
    fi
    echo "check-format: installing clang-format"
    sudo=()
    if [[ $(id -u) -ne 0 ]]; then sudo=(sudo); fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update
    "${sudo[@]}" apt-get install -y --no-install-recommends clang-format
  fi
  if command -v clang-format-14 >/dev/null; then CLANG_FORMAT=clang-format-14; else CLANG_FORMAT=clang-format; fi
fi
version=$("$CLANG_FORMAT" --version)
if [[ $version != *" version 14."* ]]; then
  echo "check-format: warning: $version; the project's format is clang-format 14's" >&2
fi

dirs=(include src tools tests bench python/src)
patterns=()
for d in "${dirs[@]}"; do
  for e in c cpp hpp cu cuh h; do patterns+=("$d/*.$e"); done
done
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- "${patterns[@]}")
else  # an unpacked archive: every such file
  mapfile -t files < <(find "${dirs[@]}" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' \
                         -o -name '*.cuh' -o -name '*.h' -o -name '*.c' \) | sort)
fi

changed=()
for f in "${files[@]}"; do
  if ! "$CLANG_FORMAT" --style=file "$f" | cmp -s - "$f"; then changed+=("$f"); fi
done

if ((${#changed[@]} == 0)); then
  echo "check-format: ${#files[@]} files formatted ($version)"
  exit 0
fi
if ((fix)); then
  "$CLANG_FORMAT" --style=file -i "${changed[@]}"
  printf 'check-format: reformatted %s\n' "${changed[@]}"
  exit 0
fi
printf 'check-format: not formatted: %s\n' "${changed[@]}" >&2
echo "check-format: ${#changed[@]} of ${#files[@]} files would change; run scripts/check-format.sh --fix" >&2
exit 1
