"""Time of turning a search filter into the library's bitset in Python (docs/python.md,
"Filtered search"): a boolean mask of ROWS rows and the list of its allowed ids, packed on every
call as ``filter=`` does, against a ``cagra.Filter`` made once. A developer's measurement:

    python3 bench/filter_packing.py [ROWS (1000000)] [CALLS (500)]
"""

from __future__ import annotations

import sys
import timeit

import cagra
import numpy as np


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    mask = np.random.default_rng(0).random(rows) < 0.5
    ids = np.flatnonzero(mask)
    prepared = cagra.Filter(mask, rows)
    print(f"numpy {np.__version__}, {rows} rows, {ids.size} allowed, best of 3 x {calls} calls")
    for name, value in (("bool mask", mask), ("allowed ids", ids), ("cagra.Filter", prepared)):
        best = min(timeit.repeat(lambda v=value: cagra._filter_words(v, rows, None), number=calls,
                                 repeat=3))
        print(f"  {name:>13}: {best / calls * 1e6:9.1f} us a call")


if __name__ == "__main__":
    main()
