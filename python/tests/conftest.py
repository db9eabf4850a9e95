"""Shared fixtures of the Python tests: synthetic clustered data, the real bigann10k set, the
`cagra` command-line tool, and a numpy brute-force oracle that shares no code with the library.

Run from the repository root after `pip install .`: `python -m pytest python/tests`.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


def clustered(n, dim, dtype=np.float32, seed=0, clusters=20, latent=8):
    """Gaussian clusters in a `latent`-dimensional subspace plus a little noise (a low intrinsic
    dimension, like real data), scaled to the dtype's range so integer data is not all ties."""
    rng = np.random.default_rng(seed)
    latent = min(latent, dim)
    centers = rng.standard_normal((clusters, latent)) * 1.5
    z = centers[rng.integers(0, clusters, n)] + rng.standard_normal((n, latent))
    x = z @ rng.standard_normal((latent, dim)) + 0.1 * rng.standard_normal((n, dim))
    if dtype == np.uint8:
        return np.clip(x * 5 + 128, 0, 255).astype(np.uint8)
    if dtype == np.int8:
        return np.clip(x * 5, -128, 127).astype(np.int8)
    return x.astype(dtype)


def data_and_queries(n, nq, dim, dtype=np.float32, seed=0):
    """A dataset and queries drawn from the same clusters: [n, dim] and [nq, dim]."""
    x = clustered(n + nq, dim, dtype, seed)
    return np.ascontiguousarray(x[:n]), np.ascontiguousarray(x[n:])


def exact_distances(data, queries, metric):
    """[nq, n] exact distances in float64, with the library's conventions (smaller = nearer):
    squared L2, -<q, x> for ip, 1 - cos for cosine."""
    x = np.asarray(data, dtype=np.float64)
    q = np.asarray(queries, dtype=np.float64)
    if metric == "cosine":
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        q = q / np.linalg.norm(q, axis=1, keepdims=True)
        return 1.0 - q @ x.T
    if metric == "ip":
        return -(q @ x.T)
    return (q * q).sum(1)[:, None] + (x * x).sum(1)[None, :] - 2.0 * (q @ x.T)


def numpy_knn(data, queries, k, metric="l2"):
    """Exact (ids, distances) [nq, k] by numpy."""
    d = exact_distances(data, queries, metric)
    ids = np.argsort(d, axis=1, kind="stable")[:, :k]
    return ids, np.take_along_axis(d, ids, axis=1)


def tie_aware_recall(found_ids, data, queries, k, metric="l2"):
    """Share of found ids whose exact distance is within the exact k-th distance (ties count)."""
    d = exact_distances(data, queries, metric)
    kth = np.sort(d, axis=1)[:, k - 1 : k]
    found = np.take_along_axis(d, found_ids[:, :k].astype(np.int64), axis=1)
    return float((found <= kth + 1e-6 * np.maximum(1.0, np.abs(kth))).mean())


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The folder holding bigann10k/: $CAGRA_DATA_DIR, <repo>/data/shared, <repo>/../shared/data.
    Missing data is a failure, not a skip."""
    candidates = []
    if os.environ.get("CAGRA_DATA_DIR"):
        candidates.append(Path(os.environ["CAGRA_DATA_DIR"]))
    candidates += [REPO / "data" / "shared", REPO.parent / "shared" / "data"]
    for c in candidates:
        if (c / "bigann10k" / "base.u8bin").is_file():
            return c
    pytest.fail(
        "test data not found: set CAGRA_DATA_DIR to the folder holding bigann10k/ "
        f"(looked in {', '.join(map(str, candidates))})"
    )


@pytest.fixture(scope="session")
def bigann10k(data_dir):
    import cagra

    d = data_dir / "bigann10k"
    base = cagra.read_matrix(d / "base.u8bin")
    queries = cagra.read_matrix(d / "query.u8bin")
    truth, _ = cagra.read_neighbors(d / "groundtruth.ibin")
    return d, base, queries, truth


@pytest.fixture(scope="session")
def cli() -> Path:
    """The `cagra` tool: $CAGRA_CLI (must exist; scripts/test.sh sets it), else <repo>/build/cagra
    when it was built, else the test is skipped."""
    env = os.environ.get("CAGRA_CLI")
    if env:
        if not Path(env).is_file():
            pytest.fail(f"CAGRA_CLI={env} does not exist")
        return Path(env)
    default = REPO / "build" / "cagra"
    if not default.is_file():
        pytest.skip("the cagra CLI is not built (build/cagra); set CAGRA_CLI to run this test")
    return default
