"""The GIL is released during build and search: searches in two Python threads run at the same
time and give the serial results, and Python code keeps running while the library works."""

from __future__ import annotations

import threading
import time

import cagra
import numpy as np
import pytest
from conftest import clustered


@pytest.fixture(scope="module")
def setup():
    data = clustered(6000, 48, seed=40)
    queries = clustered(4000, 48, seed=41)
    index = cagra.build(data, graph_degree=32, intermediate_graph_degree=64)
    return data, queries, index


def runs_without_gil(call):
    """Runs `call` in a thread and records when the main thread's Python loop ran meanwhile.
    Returns (loop iterations strictly inside the call, seconds the call took). Holding the GIL
    for the whole call would leave no iteration inside it (margins absorb the switch interval)."""
    span = {}

    def worker():
        span["start"] = time.perf_counter()
        call()
        span["end"] = time.perf_counter()

    t = threading.Thread(target=worker)
    stamps = []
    t.start()
    while t.is_alive():
        stamps.append(time.perf_counter())
    t.join()
    margin = 0.05
    inside = [s for s in stamps if span["start"] + margin < s < span["end"] - margin]
    return len(inside), span["end"] - span["start"]


def test_concurrent_searches_match_serial(setup):
    _, queries, index = setup
    halves = (queries[:2000], queries[2000:])
    # The default backend: the CPU, or the GPU where there is one (both take concurrent calls).
    expected = [index.search(q, 10, num_threads=1) for q in halves]
    results = [None, None]

    def search(i):
        results[i] = index.search(halves[i], 10, num_threads=1)

    t0 = time.perf_counter()
    for i in range(2):
        search(i)
    serial = time.perf_counter() - t0
    threads = [threading.Thread(target=search, args=(i,)) for i in range(2)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    parallel = time.perf_counter() - t0
    for (ids, dist), (eids, edist) in zip(results, expected):
        np.testing.assert_array_equal(ids, eids)
        np.testing.assert_array_equal(dist, edist)
    # Informational only (a shared 2-core machine gives no reliable timing).
    print(f"two searches: serial {serial:.3f} s, in two threads {parallel:.3f} s")


def test_search_releases_the_gil(setup):
    _, queries, index = setup
    big = np.ascontiguousarray(np.concatenate([queries] * 3))
    inside, seconds = runs_without_gil(
        lambda: index.search(big, 10, itopk_size=128, backend="cpu", num_threads=1)
    )
    if seconds < 0.2:
        pytest.skip(f"the search took only {seconds:.2f} s: too short to observe")
    assert inside > 100, f"the main thread ran {inside} times during a {seconds:.2f} s search"


def test_build_releases_the_gil(setup):
    data, _, _ = setup
    inside, seconds = runs_without_gil(
        lambda: cagra.build(data, graph_degree=32, intermediate_graph_degree=64, num_threads=1)
    )
    if seconds < 0.2:
        pytest.skip(f"the build took only {seconds:.2f} s: too short to observe")
    assert inside > 100, f"the main thread ran {inside} times during a {seconds:.2f} s build"
