#!/usr/bin/env python3
"""The first N queries of a .u8bin / .i8bin / .fbin file and their ground-truth rows, for the
batch-1 runs of the device scripts (a batch-1 sweep over all 10,000 queries takes too long):

    python3 scripts/dev/first_rows.py QUERIES GT OUT_DIR [N]

writes OUT_DIR/q1k.EXT (EXT: the queries' own) and OUT_DIR/gt1k.ibin (N = 1000 by default; the
names keep "1k" whatever N is)."""

import sys

import numpy as np


def first_rows(path, dtype, n_rows, out):
    n, d = np.fromfile(path, dtype=np.uint32, count=2)
    rows = np.fromfile(path, dtype=dtype, offset=8)[: n * d].reshape(n, d)[:n_rows]
    with open(out, "wb") as f:
        np.array(rows.shape, dtype=np.uint32).tofile(f)
        rows.tofile(f)


def main():
    queries, gt, out_dir = sys.argv[1:4]
    n_rows = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    ext = queries.rsplit(".", 1)[1]
    dtype = {"u8bin": np.uint8, "i8bin": np.int8}.get(ext, np.float32)
    first_rows(queries, dtype, n_rows, f"{out_dir}/q1k.{ext}")
    first_rows(gt, np.int32, n_rows, f"{out_dir}/gt1k.ibin")


if __name__ == "__main__":
    main()
