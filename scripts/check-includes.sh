#!/usr/bin/env bash
# The include graph's rules (README "Source layout"), checked: the two backends never include
# each other, backend-neutral core includes no backend, and the tools, the C API (src/c_api) and
# the Python extension use the public headers only (the bench tools may add
# src/core/bench_hooks.hpp; bench/cuda holds the GPU backend's own measurements and includes it
# like the CUDA tests do). The library, the C API and the Python extension include no formatted
# streams (<sstream>, <iostream>, <istream>, <ostream>, <iomanip>; src/core/text_words.hpp says
# why). Prints each violation and exits non-zero when there is one.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bad=0
rule() {  # rule WHAT PATTERN PATHS...: no tracked file under PATHS includes a header matching PATTERN
  local what=$1 pattern=$2
  shift 2
  local hits
  hits=$(git grep -n -E "^#include ${open:-\"}($pattern)" -- "$@" 2>/dev/null)
  if [ -n "$hits" ]; then
    echo "include rule broken: $what"
    echo "$hits" | sed 's/^/  /'
    bad=1
  fi
}
rule "src/cpu includes src/cuda" "cuda/" 'src/cpu/*'
rule "src/cuda includes src/cpu" "cpu/" 'src/cuda/*'
rule "src/core includes a backend" "cpu/|cuda/" 'src/core/*'
rule "the CLI includes internal headers (other than core/bench_hooks.hpp)" "(cpu|cuda)/|core/[^b]" 'tools/*'
rule "bench tools include internal headers (other than core/bench_hooks.hpp)" "(cpu|cuda)/|core/[^b]" \
  ':(glob)bench/*.cpp' ':(glob)bench/*.hpp'
rule "the Python extension includes internal headers" "(core|cpu|cuda)/" 'python/*'
rule "the C API includes internal headers" "(core|cpu|cuda)/" 'src/c_api/*'
rule "public headers include internal ones" "(core|cpu|cuda)/" 'include/*'
open="<" rule "the library, the C API or the Python extension uses formatted streams" \
  "sstream|iostream|istream|ostream|iomanip" 'src/*' 'python/src/*' 'include/*'
if [ $bad -eq 0 ]; then echo "include rules: ok"; fi
exit $bad
