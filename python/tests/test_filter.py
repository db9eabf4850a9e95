"""Filtered search from Python (Index.search / Index.explain with filter=, cagra/filter.hpp):
boolean masks and id lists give the same bitset, a disallowed row is never returned, the exact
path equals a numpy brute force over the allowed rows, empty slots are INVALID_ID and +inf,
per-query masks, and every malformed filter raises CagraError with a helpful message.

Data: synthetic clustered vectors (conftest.data_and_queries, fixed seeds); CPU backend."""

from __future__ import annotations

import threading

import cagra
import numpy as np
import pytest
from conftest import data_and_queries, exact_distances

N, NQ, DIM, K = 10_000, 40, 16, 10
ALGOS = ["auto", "graph", "exact"]
SELECTIVITIES = [0.5, 0.1, 0.01]


@pytest.fixture(scope="module")
def setup():
    # Synthetic: clustered Gaussian data, seed 41. 10 000 rows so that "auto" takes the graph
    # path at 50% selectivity and the exact path below (Index.explain shows which).
    data, queries = data_and_queries(N, NQ, DIM, seed=41)
    index = cagra.build(data, graph_degree=16, intermediate_graph_degree=32, backend="cpu")
    return index, data, queries


def search(index, queries, **kw):
    return index.search(queries, K, backend="cpu", **kw)


def random_mask(selectivity, seed=0, n=N):
    return np.random.default_rng(seed).random(n) < selectivity


def filtered_truth(data, queries, allowed, k):
    """numpy brute force over the allowed rows only: [nq, N] distances with the disallowed
    ones at +inf, and the exact k-th distance of each query (inf where fewer are allowed)."""
    d = exact_distances(data, queries, "l2")
    d[:, ~allowed] = np.inf
    return d, np.sort(d, axis=1)[:, :k]


def test_invalid_id_constant():
    assert cagra.INVALID_ID == 0xFFFFFFFF
    assert "INVALID_ID" in cagra.__all__


@pytest.mark.parametrize("filter_algo", ALGOS)
def test_mask_and_ids_give_the_same_results(setup, filter_algo):
    index, _, queries = setup
    mask = random_mask(0.3, seed=1)
    ids = np.flatnonzero(mask)
    expected = search(index, queries, filter=mask, filter_algo=filter_algo)
    rng = np.random.default_rng(2)
    shuffled_with_duplicates = rng.permutation(np.concatenate([ids, ids[::7]]))
    for f in (
        ids,
        ids.astype(np.int32),
        ids.astype(np.uint32),
        ids.astype(np.uint64),
        ids.astype(">i8"),  # big-endian ids are read by value
        ids.tolist(),  # a list of ints is ids
        mask.tolist(),  # a list of bools is a mask
        shuffled_with_duplicates,
        np.asfortranarray(mask[None, :])[0],  # any bool layout
    ):
        got = search(index, queries, filter=f, filter_algo=filter_algo)
        np.testing.assert_array_equal(got[0], expected[0])
        np.testing.assert_array_equal(got[1], expected[1])


def test_all_allowed_equals_no_filter_on_graph_path(setup):
    index, _, queries = setup
    plain = search(index, queries)
    every = search(index, queries, filter=np.ones(N, bool), filter_algo="graph")
    np.testing.assert_array_equal(every[0], plain[0])


@pytest.mark.parametrize("filter_algo", ALGOS)
@pytest.mark.parametrize("selectivity", SELECTIVITIES)
def test_no_disallowed_id_is_ever_returned(setup, selectivity, filter_algo):
    index, data, queries = setup
    mask = random_mask(selectivity, seed=int(selectivity * 1000))
    assert mask.sum() >= K
    ids, dist = search(index, queries, filter=mask, filter_algo=filter_algo)
    assert ids.shape == dist.shape == (NQ, K)
    valid = ids != cagra.INVALID_ID
    assert mask[ids[valid]].all()
    assert np.isfinite(dist[valid]).all() and np.isinf(dist[~valid]).all()
    # Nearest first; padding (the graph path may find fewer than k allowed rows) only at the end.
    assert (np.diff(np.where(valid, dist, np.finfo(np.float32).max), axis=1) >= 0).all()
    assert (np.diff(valid.astype(np.int8), axis=1) <= 0).all()
    # Quality: the share of found ids within the exact filtered k-th distance (ties count).
    d, kth = filtered_truth(data, queries, mask, K)
    found = np.where(valid, np.take_along_axis(d, np.where(valid, ids, 0).astype(np.int64), 1), 0)
    within = valid & (found <= kth[:, -1:] * (1 + 1e-5) + 1e-5)
    assert within.mean() >= (0.999 if filter_algo == "exact" else 0.9), within.mean()


@pytest.mark.parametrize("selectivity", SELECTIVITIES)
def test_exact_path_equals_numpy_brute_force(setup, selectivity):
    index, data, queries = setup
    mask = random_mask(selectivity, seed=7)
    ids, dist = search(index, queries, filter=np.flatnonzero(mask), filter_algo="exact")
    d, kth = filtered_truth(data, queries, mask, K)
    assert mask[ids.astype(np.int64)].all()
    # Returned distances are the exact ones of the returned ids, and the k smallest allowed
    # ones (float ties may swap ids of equal distance, so distances are compared, not ids).
    exact = np.take_along_axis(d, ids.astype(np.int64), axis=1)
    scale = np.abs(kth).max()
    np.testing.assert_allclose(dist, exact, rtol=1e-4, atol=1e-5 * scale)
    np.testing.assert_allclose(dist, kth, rtol=1e-4, atol=1e-5 * scale)
    for q in range(NQ):  # the id sets agree where the distances are not tied
        untied = np.abs(exact[q] - kth[q, -1]) > 1e-4 * scale
        truth_ids = set(np.flatnonzero(d[q] < kth[q, -1] - 1e-4 * scale).tolist())
        assert set(ids[q][untied].tolist()) == truth_ids


@pytest.mark.parametrize("filter_algo", ALGOS)
@pytest.mark.parametrize(
    "nothing", [np.zeros(N, bool), [], np.array([], np.int64)], ids=["mask", "list", "ids"]
)
def test_nothing_allowed_gives_invalid_ids_and_inf(setup, nothing, filter_algo):
    index, _, queries = setup
    ids, dist = search(index, queries, filter=nothing, filter_algo=filter_algo)
    assert (ids == cagra.INVALID_ID).all()
    assert np.isposinf(dist).all()


@pytest.mark.parametrize("filter_algo", ALGOS)
def test_fewer_than_k_allowed_pads_the_rest(setup, filter_algo):
    index, data, queries = setup
    allowed = np.array([17, 4242, 9999])
    plan = index.explain(K, filter=allowed, filter_algo=filter_algo, backend="cpu")
    assert "allowed_rows=3" in plan
    assert f"filter_path={'graph' if filter_algo == 'graph' else 'exact'}" in plan
    ids, dist = search(index, queries, filter=allowed, filter_algo=filter_algo)
    assert (ids[:, 3:] == cagra.INVALID_ID).all()
    assert np.isposinf(dist[:, 3:]).all()
    d = exact_distances(data, queries, "l2")[:, allowed]
    order = np.argsort(d, axis=1, kind="stable")
    if filter_algo == "graph":
        # Forced graph path: the allowed rows its walk met, nearest first, then padding (a
        # walk may miss some of 3 rows out of 10 000: "auto" takes the exact path here).
        valid = ids != cagra.INVALID_ID
        assert (valid[:, :-1] >= valid[:, 1:]).all()  # the found ones come first
        assert np.isin(ids[valid], allowed).all()
        assert np.isposinf(dist[~valid]).all() and np.isfinite(dist[valid]).all()
        return
    np.testing.assert_array_equal(ids[:, :3], allowed[order])
    np.testing.assert_allclose(dist[:, :3], np.take_along_axis(d, order, 1), rtol=1e-4)


@pytest.mark.parametrize("filter_algo", ALGOS)
def test_per_query_masks(setup, filter_algo):
    index, _, queries = setup
    # Query q may return only the rows r with r % NQ == q: disjoint sets, 250 rows each.
    rows = np.arange(N)
    masks = rows[None, :] % NQ == np.arange(NQ)[:, None]
    ids, dist = search(index, queries, filter=masks, filter_algo=filter_algo)
    valid = ids != cagra.INVALID_ID
    # The graph path returns the allowed rows its list holds (here 2.5% of the rows: it may
    # hold fewer than k); automatic takes the exact path at this selectivity.
    assert valid.all() if filter_algo != "graph" else valid[:, 0].all()
    assert (ids.astype(np.int64) % NQ == np.arange(NQ)[:, None])[valid].all()
    # Each query's answer is the one a shared filter of its own rows gives (same plan: every
    # set has the same size).
    for q in (0, 13, NQ - 1):
        one = search(index, queries[q : q + 1], filter=masks[q], filter_algo=filter_algo)
        np.testing.assert_array_equal(ids[q], one[0][0])
        np.testing.assert_array_equal(dist[q], one[1][0])
    plan = index.explain(K, batch=NQ, filter=masks, filter_algo=filter_algo, backend="cpu")
    assert " filter=per_query " in plan and "allowed_rows=250" in plan
    # A list of lists of bools is a per-query mask too.
    assert (search(index, queries[:2], filter=masks[:2].tolist())[0] % NQ < 2).all()


def test_per_query_mask_with_one_empty_row(setup):
    index, _, queries = setup
    masks = np.ones((NQ, N), bool)
    masks[5] = False
    masks[6] = False
    masks[6, [3, 8]] = True
    ids, dist = search(index, queries, filter=masks)
    assert (ids[5] == cagra.INVALID_ID).all() and np.isposinf(dist[5]).all()
    assert sorted(ids[6, :2].tolist()) == [3, 8] and (ids[6, 2:] == cagra.INVALID_ID).all()
    others = np.delete(np.arange(NQ), [5, 6])
    assert (ids[others] != cagra.INVALID_ID).all()


def test_rows_not_a_multiple_of_32():
    # Synthetic: 37 rows (one full word and 5 bits of the next), seed 43.
    data, queries = data_and_queries(37, 4, 8, seed=43)
    index = cagra.build(data, graph_degree=8, intermediate_graph_degree=16, backend="cpu")
    for allowed in ([36], [0, 31, 32, 36], list(range(32, 37))):
        for algo in ALGOS:
            ids, _ = index.search(queries, 5, filter=allowed, filter_algo=algo, backend="cpu")
            valid = ids[ids != cagra.INVALID_ID]
            assert set(valid.tolist()) <= set(allowed)
            assert (ids != cagra.INVALID_ID).sum(1).tolist() == [min(5, len(allowed))] * 4


def test_explain_shows_the_filter_path(setup):
    index, _, _ = setup
    assert "filter" not in index.explain(K, backend="cpu")
    half = index.explain(K, filter=random_mask(0.5), backend="cpu")
    assert " filter=shared filter_path=graph allowed_rows=" in half
    few = index.explain(K, filter=random_mask(0.01), backend="cpu")
    assert "filter_path=exact" in few  # automatic crossover: few rows are searched exactly
    forced = index.explain(K, filter=random_mask(0.01), filter_algo="graph", backend="cpu")
    assert "filter_path=graph" in forced
    # The graph path grows its list as selectivity falls (k / selectivity, oversampled).
    itopk = int(forced.split(" itopk=")[1].split()[0])
    assert itopk > int(half.split(" itopk=")[1].split()[0])
    assert "filter_path=exact" in index.explain(K, filter=[1, 2, 3], filter_algo="exact")
    # filter_algo without a filter changes nothing.
    assert index.explain(K, filter_algo="exact") == index.explain(K)


def test_filter_algo_is_checked(setup):
    index, _, queries = setup
    for bad in ("brute", "Exact", "", None, 2):
        with pytest.raises(cagra.CagraError, match="filter_algo must be one of 'auto', 'graph'"):
            search(index, queries, filter=[1, 2], filter_algo=bad)
        with pytest.raises(cagra.CagraError, match="filter_algo"):
            index.explain(K, filter_algo=bad)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.ones(N - 1, bool), rf"mask has {N - 1} entries .* the index has {N} rows"),
        (np.ones(N + 32, bool), rf"mask has {N + 32} entries .* the index has {N} rows"),
        (np.ones((NQ + 1, N), bool), rf"has {NQ + 1} rows .* the batch has {NQ} queries"),
        (np.ones((1, N), bool), rf"has 1 rows .* the batch has {NQ} queries"),
        (np.ones((NQ, N - 5), bool), r"mask has 9995 entries per bitset"),
        (np.ones((2, NQ, N), bool), r"1-D .* or 2-D .* got shape \(2, 40, 10000\)"),
        (np.array(True), r"got shape \(\)"),
        (np.ones(N, np.float32), r"dtype float32: pass a boolean mask .* or integer row ids"),
        (np.array([1.0, 2.0]), "dtype float64"),
        ([0.5, 1.5], "dtype float64"),
        (np.array(["a"]), "dtype <U1"),
        ([[1, 2], [3]], "could not be read as an array"),
        (np.ones((NQ, 3), np.int64), r"1-D list of allowed row ids .* got shape \(40, 3\)"),
        (np.int64(5), r"1-D list of allowed row ids .* got shape \(\)"),
        (np.array([3, -1, 5]), r"filter id -1 at position 1 is outside the index's rows \[0, "),
        ([0, 1, N], rf"filter id {N} at position 2 is outside .* \(1 id out of range\)"),
        (np.array([N + 7, -2], np.int32), rf"id {N + 7} at position 0 .* \(2 ids out of range\)"),
        (np.array([2**40], np.uint64), r"filter id 1099511627776 at position 0"),
    ],
)
def test_bad_filters_raise_cagra_error(setup, bad, message):
    index, _, queries = setup
    with pytest.raises(cagra.CagraError, match=message):
        search(index, queries, filter=bad)
    with pytest.raises(cagra.CagraError, match=message):
        index.explain(K, batch=NQ, filter=bad)


def test_explain_per_query_mask_needs_the_batch(setup):
    index, _, _ = setup
    masks = np.ones((NQ, N), bool)
    with pytest.raises(cagra.CagraError, match=rf"has {NQ} rows .* the batch has 1 queries"):
        index.explain(K, filter=masks)
    assert "filter=per_query" in index.explain(K, batch=NQ, filter=masks)


def test_concurrent_filtered_searches_match_serial(setup):
    # The filter's words are held by the call while the GIL is released (as for any search).
    index, _, queries = setup
    filters = [random_mask(0.5, seed=8), np.flatnonzero(random_mask(0.05, seed=9))]
    expected = [search(index, queries, filter=f, num_threads=1) for f in filters]
    results = [None, None]

    def run(i):
        for _ in range(5):
            results[i] = search(index, queries, filter=filters[i], num_threads=1)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got, want in zip(results, expected):
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_filter_words_layout():
    # The words handed to the library: LSB first, row i = bit i % 32 of word i // 32.
    from cagra import _filter_words

    words, per_query = _filter_words([0, 33, 69], 70, None)
    assert not per_query and words.dtype == np.uint32 and words.flags.c_contiguous
    np.testing.assert_array_equal(words, [1, 2, 32])
    mask = np.zeros((2, 70), bool)
    mask[0, 31] = mask[1, 64] = True
    words, per_query = _filter_words(mask, 70, 2)
    assert per_query and words.shape == (2, 3) and words.flags.c_contiguous
    np.testing.assert_array_equal(words, [[1 << 31, 0, 0], [0, 0, 1]])
    assert _filter_words(None, 70, 2) == (None, False)


def test_prepared_filter_gives_the_same_results(setup):
    # cagra.Filter packs once; a search given it answers as with the mask, ids or 2-D mask.
    index, _, queries = setup
    mask = random_mask(0.3, seed=7)
    prepared = cagra.Filter(mask, index.size)
    assert not prepared.per_query and prepared.queries is None and prepared.rows == N
    assert prepared.count() == int(mask.sum())
    assert repr(prepared) == f"cagra.Filter(rows={N}, shared)"
    for algo in ALGOS:
        want = search(index, queries, filter=mask, filter_algo=algo)
        got = search(index, queries, filter=prepared, filter_algo=algo)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    assert index.explain(K, filter=prepared, backend="cpu") == index.explain(
        K, filter=mask, backend="cpu"
    )
    # Ids, and a per-query mask.
    ids = np.flatnonzero(mask)
    np.testing.assert_array_equal(
        search(index, queries, filter=cagra.Filter(ids, N))[0],
        search(index, queries, filter=mask)[0],
    )
    masks = np.arange(N)[None, :] % NQ == np.arange(NQ)[:, None]
    per_query = cagra.Filter(masks, N)
    assert per_query.per_query and per_query.queries == NQ and per_query.count() == N
    np.testing.assert_array_equal(
        search(index, queries, filter=per_query)[0], search(index, queries, filter=masks)[0]
    )
    # It keeps its own copy: changing the mask afterwards changes nothing.
    before = search(index, queries, filter=prepared)[0]
    mask[:] = False
    np.testing.assert_array_equal(search(index, queries, filter=prepared)[0], before)


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_prepared_filters_one_query_at_a_time(setup, backend):
    # A shared Filter hands the search its count and a stamp naming its bits (two Filters never
    # share one), so a GPU search keeping the last bitset on the device skips counting and
    # comparing it. One query at a time under two Filters in turn: every answer allowed, and
    # the mask's answers (the CPU exactly; the GPU's CTAs race for rows, so nearly).
    if backend == "cuda" and not cagra.cuda_available():
        pytest.skip("needs the CUDA backend and a GPU")
    index, _, queries = setup
    mask = random_mask(0.5, seed=11)
    a, b = cagra.Filter(mask, N), cagra.Filter(~mask, N)
    assert a._count == int(mask.sum()) and b._count == N - a._count
    assert a._stamp and b._stamp and a._stamp != b._stamp
    assert cagra.Filter(mask, N)._stamp not in (a._stamp, b._stamp)
    per_query = cagra.Filter(mask[None, :].repeat(2, axis=0), N)
    assert (per_query._count, per_query._stamp) == (-1, 0)
    same = 0
    for i in range(8):
        f, m = (a, mask) if i % 3 else (b, ~mask)
        got = index.search(queries[i : i + 1], K, backend=backend, filter=f)[0]
        want = index.search(queries[i : i + 1], K, backend=backend, filter=m)[0]
        assert m[got[got != cagra.INVALID_ID]].all()
        same += len(np.intersect1d(got, want))
        if backend == "cpu":
            np.testing.assert_array_equal(got, want)
    assert same >= 0.9 * 8 * K


def test_prepared_filter_errors(setup):
    index, _, queries = setup
    with pytest.raises(cagra.CagraError, match="made for 9999 rows but the index has 10000"):
        search(index, queries, filter=cagra.Filter(np.ones(9999, bool), 9999))
    masks = np.ones((NQ + 1, N), bool)
    with pytest.raises(cagra.CagraError, match=f"holds {NQ + 1} bitsets but the batch has {NQ}"):
        search(index, queries, filter=cagra.Filter(masks, N))
    with pytest.raises(cagra.CagraError, match="one entry per index row"):
        cagra.Filter(np.ones(5, bool), N)
    with pytest.raises(cagra.CagraError, match="already a cagra.Filter"):
        cagra.Filter(cagra.Filter([1], N), N)
    with pytest.raises(cagra.CagraError, match="needs a boolean mask"):
        cagra.Filter(None, N)
    with pytest.raises(cagra.CagraError, match="rows must be >= 1"):
        cagra.Filter([0], 0)
