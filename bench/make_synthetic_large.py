#!/usr/bin/env python3
"""SYNTHETIC clustered vectors at 10M-1B rows, in parallel: labeled synthetic wherever used.

The mixture of bench/make_synthetic.py (C clusters, each an r-dimensional Gaussian patch around a
random center with a log-normal scale, isotropic noise, Dirichlet(1) weights; the same cluster
parameters for the same seed), drawn in chunks of --chunk rows by --workers processes and written
straight into one memory-mapped .fbin (int32 rows, int32 cols, then row-major float32). Chunk i
draws from numpy's PCG64 seeded with (seed, i), the queries from (seed, 2**31 - 1): the bytes
depend on the seed and the chunk size, not on the number of workers. Rows are independent draws,
so they come in no cluster order. Not the same rows as make_synthetic.py for the same seed (that
script draws all rows from one stream).

  make_synthetic_large.py OUT_DIR [--n 100000000] [--queries 10000] [--dim 96] [--clusters 1000]
                          [--rank 8] [--seed 1] [--workers N] [--chunk 1000000]

writes OUT_DIR/base.fbin and OUT_DIR/query.fbin and prints what it made.
"""

import argparse
import multiprocessing as mp
import os
import sys
import time

import numpy as np

QUERY_STREAM = 2**31 - 1


def cluster_parameters(seed, clusters, dim, rank, spread):
    """Centers, shapes, scales and weights exactly as make_synthetic.py draws them."""
    rng = np.random.default_rng(seed)
    centers = (rng.standard_normal((clusters, dim)) * spread).astype(np.float32)
    shapes = (rng.standard_normal((clusters, rank, dim)) / np.sqrt(rank)).astype(np.float32)
    scales = np.exp(rng.normal(np.log(0.5), 0.35, clusters)).astype(np.float32)
    weights = rng.dirichlet(np.ones(clusters))
    return centers, shapes, scales, weights


def draw(rng, count, params, noise):
    centers, shapes, scales, weights = params
    clusters, dim = centers.shape
    rank = shapes.shape[1]
    out = np.empty((count, dim), dtype=np.float32)
    labels = rng.choice(clusters, size=count, p=weights)
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(clusters + 1))
    for c in range(clusters):
        lo, hi = bounds[c], bounds[c + 1]
        if hi == lo:
            continue
        z = rng.standard_normal((hi - lo, rank), dtype=np.float32)
        pts = centers[c] + (z @ shapes[c]) * scales[c]
        pts += rng.standard_normal((hi - lo, dim), dtype=np.float32) * noise
        out[order[lo:hi]] = pts
    return out


def create_fbin(path, rows, dim):
    with open(path, "wb") as f:
        np.array([rows, dim], dtype=np.int32).tofile(f)
        f.truncate(8 + rows * dim * 4)


def fill_chunk(job):
    path, rows, dim, first, count, stream, a = job
    params = cluster_parameters(a["seed"], a["clusters"], dim, a["rank"], a["spread"])
    rng = np.random.default_rng([a["seed"], stream])
    m = np.memmap(path, dtype=np.float32, mode="r+", offset=8, shape=(rows, dim))
    m[first : first + count] = draw(rng, count, params, a["noise"])
    m.flush()
    del m
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--n", type=int, default=100_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--dim", type=int, default=96)
    ap.add_argument("--clusters", type=int, default=1000)
    ap.add_argument("--rank", type=int, default=8, help="intrinsic dimension of each cluster")
    ap.add_argument("--spread", type=float, default=0.15, help="scale of the cluster centers")
    ap.add_argument("--noise", type=float, default=0.05, help="isotropic noise per coordinate")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    a = ap.parse_args()
    if a.n < 1 or a.queries < 1 or a.dim < 1 or a.chunk < 1 or a.n >= 2**31:
        ap.error("--n, --queries, --dim and --chunk must be >= 1, and --n < 2^31")
    t0 = time.time()
    os.makedirs(a.out_dir, exist_ok=True)
    opts = {k: getattr(a, k) for k in ("seed", "clusters", "rank", "spread", "noise")}
    base = os.path.join(a.out_dir, "base.fbin")
    query = os.path.join(a.out_dir, "query.fbin")
    create_fbin(base, a.n, a.dim)
    create_fbin(query, a.queries, a.dim)
    jobs = [
        (base, a.n, a.dim, first, min(a.chunk, a.n - first), i, opts)
        for i, first in enumerate(range(0, a.n, a.chunk))
    ]
    jobs.append((query, a.queries, a.dim, 0, a.queries, QUERY_STREAM, opts))
    with mp.get_context("fork").Pool(max(1, min(a.workers, len(jobs)))) as pool:
        done = sum(pool.imap_unordered(fill_chunk, jobs))
    assert done == a.n + a.queries
    print(
        f"SYNTHETIC clustered data (not a real dataset): base {a.n} x {a.dim} f32, queries "
        f"{a.queries}, {a.clusters} clusters of rank {a.rank}, cluster scale lognormal(ln 0.5, "
        f"0.35), noise {a.noise}, seed {a.seed}, chunks of {a.chunk}, numpy {np.__version__}, "
        f"{a.workers} workers, {time.time() - t0:.1f} s -> {a.out_dir}"
    )


if __name__ == "__main__":
    sys.exit(main())
