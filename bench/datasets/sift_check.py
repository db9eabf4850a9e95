#!/usr/bin/env python3
"""Sanity checks of a dataset made by sift_wallpapers.py, and a small subset for a recall check.

  sift_check.py [DIR] [--subset N --subset-queries Q --subset-dir OUT]

Prints: the shapes; the value histogram of the base (SIFT: many small values, 255 rare); the
all-zero and duplicate rows (there must be none); the rows per photo and per package, base and
query; that no photo gives both base and query rows; the ground truth's shape and that its
first neighbor distances rise along each row. With --subset, writes OUT/base.u8bin (the first N
base rows: the rows are shuffled, so a prefix samples every photo) and OUT/query.u8bin (the first
Q queries), for `cagra gt` + `cagra build` + `cagra search` + `cagra eval` on a small scale.
Uses numpy only (Debian's python3-numpy is enough).
"""
import argparse
import json
import os

import numpy as np


def read_bin(path, dtype):
    with open(path, "rb") as f:
        rows, cols = np.fromfile(f, dtype=np.uint32, count=2)
    return np.memmap(path, dtype=dtype, mode="r", offset=8, shape=(int(rows), int(cols)))


def write_u8bin(path, x):
    with open(path, "wb") as f:
        np.array(x.shape, dtype=np.uint32).tofile(f)
        np.ascontiguousarray(x, dtype=np.uint8).tofile(f)


def label(path):
    """A short name of a photo: Plasma's wallpaper folder (plus _dark), or the file name."""
    parts = path.split("/")
    if "contents" in parts:
        i = parts.index("contents")
        return parts[i - 1] + ("_dark" if parts[i + 1].endswith("_dark") else "")
    return parts[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?", default="data/sift-wall-1m")
    ap.add_argument("--subset", type=int, default=0)
    ap.add_argument("--subset-queries", type=int, default=1000)
    ap.add_argument("--subset-dir", default="")
    args = ap.parse_args()
    d = args.dir
    base = read_bin(os.path.join(d, "base.u8bin"), np.uint8)
    query = read_bin(os.path.join(d, "query.u8bin"), np.uint8)
    with open(os.path.join(d, "manifest.json")) as f:
        m = json.load(f)
    photos = m["photos"]
    print(f"base {base.shape}, query {query.shape}")

    hist = np.zeros(256, dtype=np.int64)
    zero_rows = 0
    for s in range(0, len(base), 1 << 17):
        block = np.asarray(base[s:s + (1 << 17)])
        hist += np.bincount(block.ravel(), minlength=256)
        zero_rows += int((~block.any(axis=1)).sum())
    total = hist.sum()
    cum = np.cumsum(hist) / total
    print(f"base values: mean {np.dot(np.arange(256), hist) / total:.2f}, "
          f"median {int(np.searchsorted(cum, 0.5))}, 99th percentile "
          f"{int(np.searchsorted(cum, 0.99))}, max {int(np.nonzero(hist)[0][-1])}")
    for lo, hi in ((0, 0), (1, 15), (16, 31), (32, 63), (64, 127), (128, 199), (200, 254),
                   (255, 255)):
        print(f"  {lo:3d}..{hi:3d}: {hist[lo:hi + 1].sum() / total:8.4%}")
    print(f"all-zero rows: base {zero_rows}, query {int((~np.asarray(query).any(axis=1)).sum())}")
    print(f"duplicate rows: base {len(base) - len(np.unique(np.asarray(base), axis=0))}, "
          f"query {len(query) - len(np.unique(np.asarray(query), axis=0))}")
    norms = np.sqrt((np.asarray(base[:100000], dtype=np.float32) ** 2).sum(axis=1))
    print(f"L2 norm of base rows (first 100K): min {norms.min():.0f}, mean {norms.mean():.0f}, "
          f"max {norms.max():.0f} (OpenCV normalizes to 512 before rounding and clipping)")

    bp = np.load(os.path.join(d, "base.photo.npy"))
    qp = np.load(os.path.join(d, "query.photo.npy"))
    bc = np.bincount(bp, minlength=len(photos))
    qc = np.bincount(qp, minlength=len(photos))
    both = int(((bc > 0) & (qc > 0)).sum())
    print(f"photos: {len(photos)}; giving base rows {int((bc > 0).sum())}, query rows "
          f"{int((qc > 0).sum())}, both {both} (must be 0)")
    fam_b = {photos[i]["family"] for i in np.nonzero(bc)[0]}
    fam_q = {photos[i]["family"] for i in np.nonzero(qc)[0]}
    print(f"families shared by base and queries: {len(fam_b & fam_q)} (must be 0)")
    order = np.argsort(-bc)
    print(f"base rows per photo: max {bc.max()} ({bc.max() / len(base):.2%}), "
          f"photos at the cap {int((bc == bc.max()).sum() + (bc == bc.max() - 1).sum())}, "
          f"median of contributing photos {int(np.median(bc[bc > 0]))}")
    print("  largest: " + ", ".join(f"{label(photos[i]['path'])} {bc[i]}" for i in order[:8]))
    top10 = np.sort(bc)[::-1][:10].sum() / len(base)
    print(f"  the 10 largest photos hold {top10:.1%} of the base")
    pk_b, pk_q = {}, {}
    for i, ph in enumerate(photos):
        pk_b[ph["package"]] = pk_b.get(ph["package"], 0) + int(bc[i])
        pk_q[ph["package"]] = pk_q.get(ph["package"], 0) + int(qc[i])
    print("rows per package (base / query):")
    for p in sorted(pk_b, key=lambda p: -pk_b[p]):
        n = sum(1 for ph in photos if ph["package"] == p)
        print(f"  {p:28s} {n:3d} photos {pk_b[p]:8d} / {pk_q[p]:5d}")

    gt_path = os.path.join(d, "gt.ibin")
    if os.path.exists(gt_path):
        rows, cols = np.fromfile(gt_path, dtype=np.uint32, count=2)
        size = os.path.getsize(gt_path)
        ids = np.memmap(gt_path, dtype=np.uint32, mode="r", offset=8, shape=(int(rows), int(cols)))
        print(f"gt {rows} x {cols}, {'with' if size == 8 + rows * cols * 8 else 'without'} "
              f"distances; max id {int(ids.max())} (< {len(base)})")
        if size == 8 + rows * cols * 8:
            dist = np.memmap(gt_path, dtype=np.float32, mode="r", offset=8 + rows * cols * 4,
                             shape=(int(rows), int(cols)))
            print(f"  distances ascending in every row: {bool((np.diff(dist, axis=1) >= 0).all())};"
                  f" nearest distance median {float(np.median(dist[:, 0])):.0f}, 100th "
                  f"{float(np.median(dist[:, -1])):.0f} (squared L2)")

    if args.subset:
        out = args.subset_dir or os.path.join(d, f"subset-{args.subset}")
        os.makedirs(out, exist_ok=True)
        write_u8bin(os.path.join(out, "base.u8bin"), base[:args.subset])
        write_u8bin(os.path.join(out, "query.u8bin"), query[:args.subset_queries])
        print(f"wrote {out}/base.u8bin ({args.subset} rows), query.u8bin "
              f"({args.subset_queries} rows)")


if __name__ == "__main__":
    main()
