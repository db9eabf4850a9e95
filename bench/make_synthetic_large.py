#!/usr/bin/env python3
"""SYNTHETIC clustered vectors at 10M-1B rows, in parallel: labeled synthetic wherever used.

Two models (--model):
- manifold (default): a curved r-dimensional manifold in dim dimensions with clustered density.
  A latent z in R^r is drawn from a mixture of C overlapping Gaussian components (centers
  N(0, I) per coordinate, component scales log-normal around --latent-scale, Dirichlet(1)
  weights), then mapped by a fixed random two-layer network, x = W2 tanh(W1 z + b1), plus
  isotropic noise. Neighbourhoods are r-dimensional (r = --rank, default 20) and the clusters
  touch, as in real embeddings (a continuous manifold, denser in places), so the kNN graph stays
  connected at any n.
- patches: the mixture of bench/make_synthetic.py (C separate clusters, each an r-dimensional
  Gaussian patch around a random center with a log-normal scale, isotropic noise, Dirichlet(1)
  weights). Its clusters are islands: as n grows each row's nearest neighbours all lie in its own
  cluster, the graph keeps few edges between clusters, and a search that starts in the wrong
  cluster rarely leaves it (recall falls with n: docs/benchmarks.md "Scale"). Kept to reproduce
  the results made with it.

Rows are drawn in chunks of --chunk rows by --workers processes and written straight into one
memory-mapped .fbin (int32 rows, int32 cols, then row-major float32). Chunk i draws from numpy's
PCG64 seeded with (seed, i), the queries from (seed, 2**31 - 1): the bytes depend on the seed and
the chunk size, not on the number of workers. Rows are independent draws, so they come in no
cluster order. Not the same rows as make_synthetic.py for the same seed (that script draws all
rows from one stream).

  make_synthetic_large.py OUT_DIR [--model manifold|patches] [--n 100000000] [--queries 10000]
                          [--dim 96] [--clusters 1000] [--rank R] [--seed 1] [--workers N]
                          [--chunk 1000000]

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
    """patches: centers, shapes, scales and weights exactly as make_synthetic.py draws them."""
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


def manifold_parameters(seed, clusters, dim, rank, latent_scale):
    """manifold: latent component centers, scales and weights, and the network's weights."""
    rng = np.random.default_rng([seed, 7])
    centers = rng.standard_normal((clusters, rank)).astype(np.float32)
    scales = np.exp(rng.normal(np.log(latent_scale), 0.25, clusters)).astype(np.float32)
    weights = rng.dirichlet(np.ones(clusters))
    hidden = 2 * dim
    w1 = (rng.standard_normal((rank, hidden)) * (1.5 / np.sqrt(rank))).astype(np.float32)
    b1 = (rng.standard_normal(hidden) * 0.5).astype(np.float32)
    w2 = (rng.standard_normal((hidden, dim)) / np.sqrt(hidden)).astype(np.float32)
    return centers, scales, weights, w1, b1, w2


def draw_manifold(rng, count, params, noise):
    centers, scales, weights, w1, b1, w2 = params
    clusters, rank = centers.shape
    labels = rng.choice(clusters, size=count, p=weights)
    z = rng.standard_normal((count, rank), dtype=np.float32) * scales[labels, None]
    z += centers[labels]
    out = np.tanh(z @ w1 + b1) @ w2
    out += rng.standard_normal(out.shape, dtype=np.float32) * noise
    return out.astype(np.float32, copy=False)


def create_fbin(path, rows, dim):
    with open(path, "wb") as f:
        np.array([rows, dim], dtype=np.int32).tofile(f)
        f.truncate(8 + rows * dim * 4)


def fill_chunk(job):
    path, rows, dim, first, count, stream, a = job
    rng = np.random.default_rng([a["seed"], stream])
    m = np.memmap(path, dtype=np.float32, mode="r+", offset=8, shape=(rows, dim))
    if a["model"] == "patches":
        params = cluster_parameters(a["seed"], a["clusters"], dim, a["rank"], a["spread"])
        m[first : first + count] = draw(rng, count, params, a["noise"])
    else:
        params = manifold_parameters(a["seed"], a["clusters"], dim, a["rank"], a["latent_scale"])
        for lo in range(0, count, 1 << 18):  # bounded temporary memory
            hi = min(count, lo + (1 << 18))
            m[first + lo : first + hi] = draw_manifold(rng, hi - lo, params, a["noise"])
    m.flush()
    del m
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--n", type=int, default=100_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--dim", type=int, default=96)
    ap.add_argument("--model", choices=("manifold", "patches"), default="manifold")
    ap.add_argument("--clusters", type=int, default=1000)
    ap.add_argument(
        "--rank", type=int, default=None, help="intrinsic dimension (manifold 20, patches 8)"
    )
    ap.add_argument("--spread", type=float, default=0.15, help="patches: scale of the centers")
    ap.add_argument(
        "--latent-scale", type=float, default=0.5, help="manifold: median component scale"
    )
    ap.add_argument(
        "--noise", type=float, default=None, help="isotropic noise (manifold 0.01, patches 0.05)"
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    a = ap.parse_args()
    manifold = a.model == "manifold"
    if a.rank is None:
        a.rank = 20 if manifold else 8
    if a.noise is None:
        a.noise = 0.01 if manifold else 0.05
    if a.n < 1 or a.queries < 1 or a.dim < 1 or a.chunk < 1 or a.n >= 2**31:
        ap.error("--n, --queries, --dim and --chunk must be >= 1, and --n < 2^31")
    t0 = time.time()
    os.makedirs(a.out_dir, exist_ok=True)
    keys = ("model", "seed", "clusters", "rank", "spread", "latent_scale", "noise")
    opts = {k: getattr(a, k) for k in keys}
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
    if manifold:
        shape = (
            f"a {a.rank}-dimensional manifold (tanh network) over a latent mixture of "
            f"{a.clusters} overlapping components (scale lognormal(ln {a.latent_scale}, 0.25))"
        )
    else:
        shape = f"{a.clusters} clusters of rank {a.rank}, cluster scale lognormal(ln 0.5, 0.35)"
    print(
        f"SYNTHETIC clustered data (not a real dataset), model {a.model}: base {a.n} x {a.dim} "
        f"f32, queries {a.queries}, {shape}, noise {a.noise}, seed {a.seed}, chunks of {a.chunk}, "
        f"numpy {np.__version__}, {a.workers} workers, {time.time() - t0:.1f} s -> {a.out_dir}"
    )


if __name__ == "__main__":
    sys.exit(main())
