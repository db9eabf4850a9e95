"""Build and search from Python: recall against a numpy brute force for every dtype and metric,
the returned distances, the index's properties, the separate build stages, and the real
bigann10k set against its ground truth."""

from __future__ import annotations

import cagra
import numpy as np
import pytest
from conftest import (
    clustered,
    data_and_queries,
    exact_distances,
    numpy_knn,
    tie_aware_recall,
)

DTYPES = [np.float32, np.float16, np.uint8, np.int8]
METRICS = ["l2", "ip", "cosine"]


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
def test_recall_against_numpy(dtype, metric):
    data, queries = data_and_queries(3000, 200, 32, dtype, seed=1)
    index = cagra.build(data, metric=metric, graph_degree=32, intermediate_graph_degree=64)
    assert (index.size, index.dim, index.graph_degree) == (3000, 32, 32)
    assert index.metric == metric
    expected_dtype = np.float32 if metric == "cosine" else dtype
    assert index.dtype == np.dtype(expected_dtype)

    ids, dist = index.search(queries, 10, itopk_size=64)
    assert ids.shape == dist.shape == (200, 10)
    assert ids.dtype == np.uint32 and dist.dtype == np.float32
    assert tie_aware_recall(ids, data, queries, 10, metric) >= 0.95

    # The distances are those of the returned ids, nearest first.
    exact = np.take_along_axis(exact_distances(data, queries, metric), ids.astype(np.int64), axis=1)
    scale = np.abs(exact).max()
    np.testing.assert_allclose(dist, exact, rtol=1e-3, atol=1e-4 * scale)
    assert (np.diff(dist, axis=1) >= 0).all()


def test_float16_storage_and_f32_queries():
    data, queries = data_and_queries(2000, 100, 48, seed=3)
    index = cagra.build(data, storage="f16", graph_degree=32, intermediate_graph_degree=64)
    assert index.dtype == np.float16
    assert index.vectors.dtype == np.float16
    ids, _ = index.search(queries, 10)
    assert tie_aware_recall(ids, data, queries, 10) >= 0.95
    # float16 queries give the same answer as their float32 values.
    q16 = queries.astype(np.float16)
    a, _ = index.search(q16, 10)
    b, _ = index.search(q16.astype(np.float32), 10)
    np.testing.assert_array_equal(a, b)


def test_partitioned_knn_graph():
    # The kNN graph over overlapping partitions (docs/large_builds.md): same recall bar, the
    # plan names the partition size, and a partition too small for the degree is an error.
    data, queries = data_and_queries(4000, 100, 32, seed=4)
    args = {"graph_degree": 16, "intermediate_graph_degree": 32, "backend": "cpu"}
    plan = cagra.explain_build(data, knn_partition_rows=1500, **args)
    assert "partition_rows=1500" in plan
    index = cagra.build(data, knn_partition_rows=1500, **args)
    ids, _ = index.search(queries, 10, itopk_size=64)
    assert tie_aware_recall(ids, data, queries, 10) >= 0.95
    with pytest.raises(cagra.CagraError, match="partition"):
        cagra.build(data, knn_partition_rows=100, **args)
    with pytest.raises(ValueError):
        cagra.build(data, knn_partition_rows=-1, **args)


def test_index_properties_are_read_only_views():
    data = clustered(1000, 16, seed=5)
    index = cagra.build(data, graph_degree=16, intermediate_graph_degree=32)
    g = index.graph
    assert g.shape == (1000, 16) and g.dtype == np.uint32
    assert not g.flags.writeable
    assert g.max() < 1000
    assert (g != np.arange(1000)[:, None]).all()  # no self loops
    np.testing.assert_array_equal(index.vectors, data)
    assert not index.vectors.flags.writeable
    assert len(index) == 1000
    del index  # the views keep the index alive
    assert int(g.sum()) >= 0
    assert "size=1000" in repr(cagra.build(data, graph_degree=8, intermediate_graph_degree=16))


def test_search_is_deterministic_and_batch_independent():
    data, queries = data_and_queries(2000, 64, 24, seed=6)
    index = cagra.build(data, graph_degree=16, intermediate_graph_degree=32)
    a = index.search(queries, 5, itopk_size=32, seed=3)
    b = index.search(queries, 5, itopk_size=32, seed=3, num_threads=1)
    c = index.search(queries[10:11], 5, itopk_size=32, seed=3)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[0][10:11], c[0])
    # persistent only concerns the GPU's batch-1 kernel: the CPU's answer is the same.
    d = index.search(queries[10:11], 5, itopk_size=32, seed=3, backend="cpu", persistent=True)
    e = index.search(queries[10:11], 5, itopk_size=32, seed=3, backend="cpu")
    np.testing.assert_array_equal(d[0], e[0])


def test_search_options_are_passed_through():
    data, queries = data_and_queries(3000, 100, 32, seed=8)
    index = cagra.build(data, graph_degree=16, intermediate_graph_degree=32)
    narrow, _ = index.search(queries, 10, itopk_size=16, max_iterations=1)
    wide, _ = index.search(queries, 10, itopk_size=128, search_width=4)
    assert tie_aware_recall(wide, data, queries, 10) > tie_aware_recall(narrow, data, queries, 10)
    for kw in (
        {"hash_bits": 12, "hash_reset_interval": 4},
        {"num_random_samplings": 2, "min_iterations": 3},
        {
            "team_size": 8,
            "algo": "single_cta",
        },  # GPU knobs: accepted; on the CPU single_cta is its one walk, team_size is ignored
    ):
        ids, _ = index.search(queries, 10, itopk_size=64, **kw)
        assert tie_aware_recall(ids, data, queries, 10) >= 0.9
    # k > itopk_size: the library raises the list length to k.
    ids, _ = index.search(queries, 80, itopk_size=16)
    assert ids.shape == (100, 80)


def test_cpu_latency_path():
    """algo="multi_cta" on the CPU walks each query with several walkers (docs/params.md)."""
    data, queries = data_and_queries(3000, 100, 32, seed=9)
    index = cagra.build(data, graph_degree=16, intermediate_graph_degree=32, backend="cpu")
    one = index.search(queries, 10, itopk_size=64, backend="cpu")[0]
    floor = tie_aware_recall(one, data, queries, 10) - 0.02
    for threads in (1, 4):
        ids, dist = index.search(
            queries, 10, itopk_size=64, backend="cpu", algo="multi_cta", num_threads=threads
        )
        assert tie_aware_recall(ids, data, queries, 10) >= floor
        assert (np.diff(dist, axis=1) >= 0).all()
    # One thread: the walkers take turns, and the answer is the same in any batch.
    a = index.search(queries, 10, backend="cpu", algo="multi_cta", num_threads=1)
    b = index.search(queries[7:8], 10, backend="cpu", algo="multi_cta", num_threads=1)
    np.testing.assert_array_equal(a[0][7:8], b[0])
    np.testing.assert_array_equal(a[1][7:8], b[1])


@pytest.mark.parametrize("dtype", [np.float32, np.float16], ids=lambda t: np.dtype(t).name)
def test_int8_traversal(dtype):
    # The walk on an int8 copy of the rows, its best candidates re-ranked exactly: recall within
    # 0.02 of the exact walk at itopk 64, and the distances those of the returned ids.
    data, queries = data_and_queries(3000, 200, 32, dtype, seed=11)
    index = cagra.build(data, graph_degree=32, intermediate_graph_degree=64, backend="cpu")
    exact_ids, _ = index.search(queries, 10, itopk_size=64, backend="cpu")
    ids, dist = index.search(queries, 10, itopk_size=64, traversal="int8", backend="cpu")
    assert ids.shape == dist.shape == (200, 10)
    recall = tie_aware_recall(ids, data, queries, 10)
    assert recall >= tie_aware_recall(exact_ids, data, queries, 10) - 0.02
    assert recall >= 0.9
    exact = np.take_along_axis(exact_distances(data, queries, "l2"), ids.astype(np.int64), axis=1)
    np.testing.assert_allclose(dist, exact, rtol=1e-3, atol=1e-4 * np.abs(exact).max())
    assert (np.diff(dist, axis=1) >= 0).all()

    # The plan names the traversal and the candidates re-ranked (auto: min(itopk, max(32, 4k))).
    plan = index.explain(10, 200, itopk_size=64, traversal="int8", backend="cpu")
    assert plan.endswith(" traversal=int8 rerank=40"), plan
    plan = index.explain(10, 200, itopk_size=64, traversal="int8", rerank=10, backend="cpu")
    assert plan.endswith(" traversal=int8 rerank=10"), plan
    assert "traversal" not in index.explain(10, 200, itopk_size=64, backend="cpu")
    ids, _ = index.search(queries, 10, itopk_size=64, traversal="int8", rerank=64, backend="cpu")
    assert tie_aware_recall(ids, data, queries, 10) >= recall - 0.02


def test_int8_traversal_sharded():
    # Each shard walks its own int8 copy; the merged distances are still exact.
    data, queries = data_and_queries(2000, 20, 16, seed=14)
    index = cagra.build(data, shards=2, graph_degree=16, backend="cpu")
    ids, dist = index.search(queries, 5, traversal="int8", backend="cpu")
    assert tie_aware_recall(ids, data, queries, 5) >= 0.9
    exact = np.take_along_axis(exact_distances(data, queries, "l2"), ids.astype(np.int64), axis=1)
    np.testing.assert_allclose(dist, exact, rtol=1e-3, atol=1e-4 * np.abs(exact).max())
    with pytest.raises(ValueError, match="traversal must be one of"):
        index.search(queries, 5, traversal="fast")
    host = index.search(queries, 5, traversal="int8", stored_rows="host", backend="cpu")
    np.testing.assert_array_equal(host[0], ids)


def test_int8_traversal_errors():
    data, queries = data_and_queries(500, 10, 16, seed=12)
    index = cagra.build(data, graph_degree=16, intermediate_graph_degree=32, backend="cpu")
    with pytest.raises(ValueError, match="traversal must be one of 'exact', 'int8'; got 'int4'"):
        index.search(queries, 5, traversal="int4")
    with pytest.raises(cagra.CagraError, match=r"rerank \(4\) must be 0 \(auto\) or at least k"):
        index.search(queries, 5, traversal="int8", rerank=4, backend="cpu")
    with pytest.raises(cagra.CagraError, match="rerank"):
        index.explain(5, traversal="int8", rerank=4, backend="cpu")
    with pytest.raises(ValueError, match="rerank must be in"):
        index.search(queries, 5, traversal="int8", rerank=-1)
    u8 = cagra.build(
        clustered(500, 16, np.uint8, seed=12), graph_degree=16, intermediate_graph_degree=32
    )
    with pytest.raises(cagra.CagraError, match="int8 traversal"):
        u8.search(clustered(10, 16, np.uint8, seed=13), 5, traversal="int8", backend="cpu")


def test_stored_rows():
    # Where a GPU int8 search reads the re-ranked rows; the CPU reads host rows anyway (the same
    # answers), and "host" needs the int8 traversal.
    data, queries = data_and_queries(500, 10, 16, seed=15)
    index = cagra.build(data, graph_degree=16, intermediate_graph_degree=32, backend="cpu")
    plan = index.explain(10, 10, traversal="int8", stored_rows="host", backend="cpu")
    assert plan.endswith(" stored_rows=host"), plan
    assert "stored_rows" not in index.explain(10, 10, traversal="int8", backend="cpu")
    a = index.search(queries, 5, traversal="int8", stored_rows="host", backend="cpu")
    b = index.search(queries, 5, traversal="int8", backend="cpu")
    np.testing.assert_array_equal(a[0], b[0])
    with pytest.raises(ValueError, match="stored_rows must be one of 'auto', 'device', 'host'"):
        index.search(queries, 5, traversal="int8", stored_rows="disk")
    with pytest.raises(cagra.CagraError, match="stored_rows = host needs traversal = int8"):
        index.search(queries, 5, stored_rows="host", backend="cpu")


def test_build_options_and_seed():
    data = clustered(12000, 8, seed=10)
    # backend="cpu": the CPU build is deterministic (same seed, same graph, any thread count);
    # the GPU NN-descent is not bit-deterministic.
    kw = {
        "graph_degree": 8,
        "intermediate_graph_degree": 16,
        "knn_algo": "nn_descent",
        "backend": "cpu",
    }
    a = cagra.build(data, seed=1, **kw)
    b = cagra.build(data, seed=1, num_threads=1, **kw)
    np.testing.assert_array_equal(a.graph, b.graph)  # same seed, same graph, any thread count
    c = cagra.build(data, seed=2, knn_max_iterations=2, knn_sample_rate=0.3, **kw)
    assert not np.array_equal(a.graph, c.graph)
    d = cagra.build(
        data,
        reorder="distance",
        knn_algo="brute_force",
        graph_degree=8,
        intermediate_graph_degree=16,
    )
    q = data[:50]
    ids, _ = d.search(q, 5)
    assert tie_aware_recall(ids, data, q, 5) >= 0.95


def test_stages_compose_to_build():
    data = clustered(2500, 16, seed=11)
    knn_ids, knn_dist = cagra.build_knn_graph(data, k=48)
    assert knn_ids.shape == knn_dist.shape == (2500, 48)
    exact_ids, _exact_dist = cagra.brute_force(data, data, 48, exclude_self=True)
    np.testing.assert_array_equal(knn_ids, exact_ids)  # 2500 rows: auto = brute force
    graph = cagra.optimize(knn_ids, knn_dist, graph_degree=24)
    index = cagra.build(data, graph_degree=24, intermediate_graph_degree=48)
    np.testing.assert_array_equal(graph, index.graph)
    # Rank-based reordering needs no distances; int64 ids are converted.
    np.testing.assert_array_equal(cagra.optimize(knn_ids.astype(np.int64), graph_degree=24), graph)
    # Distance reordering computes the distances from the dataset when none are given.
    a = cagra.optimize(knn_ids, knn_dist, graph_degree=24, reorder="distance")
    b = cagra.optimize(knn_ids, graph_degree=24, reorder="distance", dataset=data)
    np.testing.assert_array_equal(a, b)

    stats = cagra.analyze(graph)
    assert stats == cagra.analyze(index)
    assert stats["nodes"] == 2500 and stats["degree"] == 24
    assert stats["weak_components"] == 1
    for key in ("invalid_edges", "self_loops", "duplicate_edges"):
        assert stats[key] == 0
    assert 24 < stats["avg_two_hop"] <= 24 * 25
    bad = graph.copy()
    bad[0, 0] = 0
    assert cagra.analyze(bad)["self_loops"] == 1


def test_brute_force_matches_numpy():
    data, queries = data_and_queries(1500, 40, 20, seed=12)
    for metric in METRICS:
        ids, dist = cagra.brute_force(data, queries, 7, metric=metric)
        exp_ids, exp_dist = numpy_knn(data, queries, 7, metric)
        np.testing.assert_array_equal(ids, exp_ids)
        np.testing.assert_allclose(dist, exp_dist, rtol=1e-4, atol=1e-3)


def test_bigann10k_recall(bigann10k):
    _, base, queries, truth = bigann10k
    assert base.dtype == np.uint8 and base.shape == (9900, 128)
    index = cagra.build(base, graph_degree=32, intermediate_graph_degree=64)
    ids, _dist = index.search(queries, 10, itopk_size=64)
    assert cagra.recall(ids, truth, 10) >= 0.98
    exp_ids, exp_dist = numpy_knn(base, queries, 10)
    assert tie_aware_recall(ids, base, queries, 10) >= 0.98
    bf_ids, bf_dist = cagra.brute_force(base, queries, 10)
    np.testing.assert_array_equal(np.sort(bf_ids, axis=1), np.sort(exp_ids, axis=1))
    np.testing.assert_array_equal(bf_dist, exp_dist)  # integer data: exact in float32
    # A wider search finds (nearly) everything.
    ids, _ = index.search(queries, 10, itopk_size=256, search_width=4)
    assert cagra.recall(ids, exp_ids) >= 0.995
    assert index.search(queries.astype(np.float32), 10)[0].shape == (100, 10)


def test_results_into_callers_arrays():
    data, queries = data_and_queries(2000, 30, 16, seed=5)
    index = cagra.build(data, graph_degree=16, intermediate_graph_degree=32)
    ids, dist = index.search(queries, 5)
    out = (np.full((30, 5), 7, np.uint32), np.full((30, 5), -1, np.float32))
    got = index.search(queries, 5, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    np.testing.assert_array_equal(out[0], ids)
    np.testing.assert_array_equal(out[1], dist)
    got = index.search(queries, 5, out=list(out))  # a list pair works too
    assert got[0] is out[0]

    # Labels: int64 neighbors.
    labelled = cagra.build(data, graph_degree=16, labels=np.arange(2000, dtype=np.int64) * 3)
    out = (np.empty((30, 5), np.int64), np.empty((30, 5), np.float32))
    labelled.search(queries, 5, out=out)
    np.testing.assert_array_equal(out[0], labelled.search(queries, 5)[0])


def test_sharded_results_into_callers_arrays():
    data, queries = data_and_queries(2000, 20, 16, seed=7)
    sharded = cagra.build(data, graph_degree=16, intermediate_graph_degree=32, shards=3)
    ids, dist = sharded.search(queries, 6)
    out = (np.empty((20, 6), np.uint32), np.empty((20, 6), np.float32))
    got = sharded.search(queries, 6, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    np.testing.assert_array_equal(out[0], ids)
    np.testing.assert_array_equal(out[1], dist)
    with pytest.raises(cagra.CagraError, match="shape"):
        sharded.search(queries, 5, out=out)


def test_results_into_callers_arrays_refused():
    data, queries = data_and_queries(1000, 10, 16, seed=6)
    index = cagra.build(data, graph_degree=16, intermediate_graph_degree=32)
    ids = np.zeros((10, 4), np.uint32)
    dist = np.zeros((10, 4), np.float32)
    bad = {
        "shape": (np.zeros((10, 3), np.uint32), dist),
        "dtype": (ids.astype(np.int64), dist),
        "C-contiguous": (ids, np.zeros((10, 8), np.float32)[:, ::2]),
        "read-only": (ids, np.frombuffer(bytes(160), np.float32).reshape(10, 4)),
        "overlap": (ids, ids.view(np.float32)),
        "overlap ": (ids, queries.reshape(-1)[:40].reshape(10, 4)),
    }
    for what, out in bad.items():
        before = [a.copy() for a in out]
        with pytest.raises(cagra.CagraError, match=what.strip()):
            index.search(queries, 4, out=out)
        for a, b in zip(out, before):
            np.testing.assert_array_equal(a, b)  # nothing written
    with pytest.raises(TypeError, match="pair"):
        index.search(queries, 4, out=ids)
    with pytest.raises(TypeError, match="numpy"):
        index.search(queries, 4, out=(ids.tolist(), dist))
