#!/usr/bin/env python3
"""SYNTHETIC clustered vectors for scale benchmarks, labeled synthetic everywhere they are used.

Not a real dataset: N base vectors and Q held-out queries (float32, .fbin: int32 rows, int32
cols, then row-major float32) drawn from one mixture of C clusters. Cluster c has a random center
(N(0, 1) per coordinate, times --spread), a random low-rank shape (a dim x r Gaussian matrix,
r = --rank) with a per-cluster scale drawn log-normally, and isotropic noise (--noise): points lie
near r-dimensional patches, as real embeddings lie near low-dimensional manifolds, instead of the
full-dimensional Gaussian blobs that make every point nearly equidistant. Cluster weights are
Dirichlet(1), so cluster sizes vary. Rows are shuffled (ids carry no cluster order). The base
and the queries are independent draws of the same distribution. Deterministic for a seed (and a
numpy version): numpy's PCG64 generator.

  make_synthetic.py OUT_DIR [--n 1000000] [--queries 10000] [--dim 128] [--clusters 1000] [--seed 1]

writes OUT_DIR/base.fbin and OUT_DIR/query.fbin and prints what it made.
"""
import argparse
import os
import sys
import time

import numpy as np


def write_fbin(path, x):
    x = np.ascontiguousarray(x, dtype=np.float32)
    with open(path, "wb") as f:
        np.array(x.shape, dtype=np.int32).tofile(f)
        x.tofile(f)


def draw(rng, count, centers, shapes, scales, weights, noise, chunk=1 << 17):
    """`count` points of the mixture, in chunks (bounded temporary memory)."""
    clusters, dim = centers.shape
    out = np.empty((count, dim), dtype=np.float32)
    labels = rng.choice(clusters, size=count, p=weights)
    order = np.argsort(labels, kind="stable")  # generate cluster by cluster, then scatter back
    sorted_labels = labels[order]
    bounds = np.searchsorted(sorted_labels, np.arange(clusters + 1))
    rank = shapes.shape[1]
    for c in range(clusters):
        lo, hi = bounds[c], bounds[c + 1]
        if hi == lo:
            continue
        m = hi - lo
        z = rng.standard_normal((m, rank), dtype=np.float32)
        pts = centers[c] + (z @ shapes[c]) * scales[c]
        pts += rng.standard_normal((m, dim), dtype=np.float32) * noise
        out[order[lo:hi]] = pts
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--clusters", type=int, default=1000)
    ap.add_argument("--rank", type=int, default=8, help="intrinsic dimension of each cluster")
    ap.add_argument("--spread", type=float, default=0.15, help="scale of the cluster centers")
    ap.add_argument("--noise", type=float, default=0.05, help="isotropic noise per coordinate")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    t0 = time.time()
    rng = np.random.default_rng(a.seed)
    centers = (rng.standard_normal((a.clusters, a.dim)) * a.spread).astype(np.float32)
    # Each cluster: an r-dim patch; column scale 1/sqrt(r) keeps its radius near `scale`.
    shapes = (rng.standard_normal((a.clusters, a.rank, a.dim)) / np.sqrt(a.rank)).astype(np.float32)
    scales = np.exp(rng.normal(np.log(0.5), 0.35, a.clusters)).astype(np.float32)
    weights = rng.dirichlet(np.ones(a.clusters))
    os.makedirs(a.out_dir, exist_ok=True)
    base = draw(rng, a.n, centers, shapes, scales, weights, a.noise)
    write_fbin(os.path.join(a.out_dir, "base.fbin"), base)
    del base
    queries = draw(rng, a.queries, centers, shapes, scales, weights, a.noise)
    write_fbin(os.path.join(a.out_dir, "query.fbin"), queries)
    print(f"SYNTHETIC clustered data (not a real dataset): base {a.n} x {a.dim} f32, queries "
          f"{a.queries}, {a.clusters} clusters of rank {a.rank}, cluster scale lognormal(ln 0.5, "
          f"0.35), noise {a.noise}, seed {a.seed}, numpy {np.__version__}, "
          f"{time.time() - t0:.1f} s -> {a.out_dir}")


if __name__ == "__main__":
    sys.exit(main())
