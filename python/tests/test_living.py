"""The living index from Python (python/cagra/_living.py): extend keeps a full build's recall,
labels survive save/load and compaction, removed labels are never returned, every bad input
raises CagraError and leaves the index exactly as it was, arrays that view the index block the
changes that would move its memory, and searches in other threads run safely next to a change."""

from __future__ import annotations

import subprocess
import threading

import cagra
import numpy as np
import pytest
from conftest import clustered, numpy_knn, tie_aware_recall

K = 10
DEGREE = 16


def recall_at(found, data, queries, k=K):
    return tie_aware_recall(np.asarray(found), data, queries, k)


@pytest.fixture(scope="module")
def sets():
    """4,000 vectors and 100 queries, 64-d with an intrinsic dimension of 32: hard enough that a
    degree-16 graph misses some neighbours at small itopk (recall@10 0.93 at itopk 16)."""
    x = clustered(4100, 64, seed=50, latent=32)
    return x[:4000], x[4000:]


def build(data, **kw):
    return cagra.build(data, graph_degree=DEGREE, backend="cpu", **kw)


def snapshot(index):
    """Everything an error must leave as it was (copies, no views)."""
    return (
        index.size,
        index.deleted_count,
        None if index.labels is None else index.labels.copy(),
        np.array(index.graph),
        np.array(index.vectors),
    )


def assert_same(index, snap):
    size, deleted, labels, graph, vectors = snap
    assert index.size == size
    assert index.deleted_count == deleted
    if labels is None:
        assert index.labels is None
    else:
        np.testing.assert_array_equal(index.labels, labels)
    np.testing.assert_array_equal(index.graph, graph)
    np.testing.assert_array_equal(index.vectors, vectors)


# ---- extend ----------------------------------------------------------------------------------


def test_extend_recall_within_a_point_of_a_full_build(sets):
    data, queries = sets
    full = build(data)
    grown = build(data[:2000])
    grown.extend(data[2000:], chunk_size=500)
    assert grown.size == full.size == 4000
    assert grown.live_size == 4000 and grown.deleted_count == 0
    np.testing.assert_array_equal(grown.vectors, data)
    for itopk in (16, 32):
        rf = recall_at(full.search(queries, K, itopk_size=itopk)[0], data, queries)
        rg = recall_at(grown.search(queries, K, itopk_size=itopk)[0], data, queries)
        assert rg >= rf - 0.01, (itopk, rg, rf)
    stats = cagra.analyze(grown)
    assert stats["invalid_edges"] == stats["self_loops"] == stats["duplicate_edges"] == 0


def test_extend_takes_the_array_rules_of_build(sets):
    data, _ = sets
    index = build(data[:500])
    ro = data[500:600].copy()
    ro.setflags(write=False)
    index.extend(ro)  # read-only arrays are fine
    assert index.size == 600
    with pytest.raises(ValueError, match="ascontiguousarray"):
        index.extend(np.asfortranarray(data[600:700]))
    with pytest.raises(TypeError, match="float32, float16, uint8 or int8"):
        index.extend(data[600:700].astype(np.int64))  # float64 is converted: test_conversion.py
    with pytest.raises(ValueError, match="2-D"):
        index.extend(data[600])
    assert index.size == 600


def test_extend_with_labels_labels_the_existing_rows(sets):
    data, queries = sets
    index = build(data[:1000])
    assert index.labels is None
    index.extend(data[1000:1200], labels=np.arange(5000, 5200))
    assert index.labels.dtype == np.int64
    np.testing.assert_array_equal(index.labels[:1000], np.arange(1000))
    np.testing.assert_array_equal(index.labels[1000:], np.arange(5000, 5200))
    ids, _ = index.search(queries, K)
    assert ids.dtype == np.int64
    rows = np.where(ids >= 5000, ids - 4000, ids)  # labels back to rows
    assert recall_at(rows, data[:1200], queries) >= 0.9
    # An index with labels needs them for new rows.
    with pytest.raises(cagra.CagraError, match="labels"):
        index.extend(data[1200:1210])


# ---- labels ----------------------------------------------------------------------------------


def test_build_labels_and_search_returns_them(sets):
    data, queries = sets
    plain = build(data)
    labels = 10**12 + 7 * np.arange(len(data))  # beyond uint32, int64 on the way
    labelled = build(data, labels=labels)
    np.testing.assert_array_equal(labelled.labels, labels)
    ids, dist = plain.search(queries, K)
    got, got_dist = labelled.search(queries, K)
    assert ids.dtype == np.uint32 and got.dtype == np.int64
    np.testing.assert_array_equal(got, labels[ids])  # the same graph, labels for rows
    np.testing.assert_array_equal(got_dist, dist)
    # Filters stay over row numbers.
    allowed = np.arange(0, len(data), 3)
    got, _ = labelled.search(queries, K, filter=allowed)
    assert np.isin(got[got >= 0], labels[allowed]).all()  # -1: the graph path may pad
    assert (got >= 0).mean() > 0.9
    # Any integer dtype; a list.
    small = build(data[:100], labels=list(range(100, 200)))
    np.testing.assert_array_equal(small.labels, np.arange(100, 200))
    small = build(data[:100], labels=np.arange(100, dtype=np.uint16))
    assert small.labels.dtype == np.int64


def test_labels_and_deletions_round_trip_through_files(sets, tmp_path):
    data, queries = sets
    labels = np.arange(len(data))[::-1] * 3 + 11
    index = build(data, labels=labels)
    assert index.remove(labels[::10]) == 400
    path = tmp_path / "living.cagra"
    index.save(path)
    back = cagra.load(path)
    np.testing.assert_array_equal(back.labels, labels)
    assert back.deleted_count == 400 and back.live_size == 3600
    for a, b in zip(index.search(queries, K), back.search(queries, K)):
        np.testing.assert_array_equal(a, b)
    # An index without labels or deletions has neither after a round trip.
    plain = build(data[:200])
    plain.save(tmp_path / "plain.cagra")
    back = cagra.load(tmp_path / "plain.cagra")
    assert back.labels is None and back.deleted_count == 0


def test_cli_search_returns_the_same_labels(sets, tmp_path, cli):
    data, queries = sets
    index = build(data, labels=np.arange(len(data)) + 1_000_000)
    index.remove(np.arange(1_000_000, 1_004_000, 5))
    index.save(tmp_path / "l.cagra")
    np.save(tmp_path / "q.npy", queries)
    out = tmp_path / "nn.npy"
    # The CPU search on both sides: it is deterministic (the GPU's multi-CTA search of a small
    # batch shares a visited hash between CTAs, so two runs may differ at near-ties).
    subprocess.run(
        [cli, "search", tmp_path / "l.cagra", tmp_path / "q.npy", "-k", str(K), "-o", out]
        + ["--backend", "cpu"],
        check=True,
        capture_output=True,
    )
    np.testing.assert_array_equal(np.load(out), index.search(queries, K, backend="cpu")[0])


# ---- remove and compact ----------------------------------------------------------------------


def test_removed_labels_are_never_returned(sets):
    data, queries = sets
    labels = np.arange(len(data)) * 2 + 1
    index = build(data, labels=labels)
    rng = np.random.default_rng(51)
    gone = rng.choice(labels, 1200, replace=False)
    assert index.remove(gone) == 1200
    assert index.remove([]) == 0
    assert index.deleted_count == 1200 and index.live_size == 2800 and index.size == 4000
    kept = ~np.isin(labels, gone)
    for itopk in (16, 64):
        got, dist = index.search(queries, K, itopk_size=itopk)
        assert not np.isin(got, gone).any()
        truth, _ = numpy_knn(data[kept], queries, K)
        hits = np.mean([len(set(g) & set(t)) / K for g, t in zip(got, labels[kept][truth])])
        # Tombstoned rows stay in the walk; the bound that matters is issue 14's (within 3 points
        # of a fresh build of the kept rows; docs/benchmarks.md measures it at 1M rows). On this
        # small set 100 queries reach 0.98-0.99 at itopk 64, depending on the random initial nodes.
        assert hits >= (0.95 if itopk == 16 else 0.97), (itopk, hits)
    # One label at a time (an int), and a removal that compacts.
    assert index.remove(int(labels[kept][0])) == 1
    assert index.remove(labels[kept][1:400], compact_above=0.3) == 399
    assert index.deleted_count == 0 and index.size == 2400


def test_fewer_live_rows_than_k_pads_with_minus_one():
    data = clustered(64, 8, seed=52)
    index = cagra.build(data, graph_degree=8, backend="cpu", labels=np.arange(64) + 100)
    index.remove(np.arange(104, 164))
    got, dist = index.search(data[:3], 10, itopk_size=64)
    assert set(got[got >= 0].ravel()) <= {100, 101, 102, 103}
    assert (got[:, 4:] == -1).all() and np.isinf(dist[:, 4:]).all()


def test_compact_keeps_labels(sets):
    data, queries = sets
    labels = np.arange(len(data)) + 500
    index = build(data, labels=labels)
    kept = (np.arange(len(data)) % 4) != 1
    index.remove(labels[~kept])
    index.compact()
    assert index.size == index.live_size == kept.sum() and index.deleted_count == 0
    np.testing.assert_array_equal(index.labels, labels[kept])
    np.testing.assert_array_equal(index.vectors, data[kept])
    # Recall within a point of a fresh build of the kept rows (at a small itopk, where it shows).
    truth = labels[kept][numpy_knn(data[kept], queries, K)[0]]
    fresh = labels[kept][build(data[kept]).search(queries, K, itopk_size=16)[0]]
    after, _ = index.search(queries, K, itopk_size=16)
    assert not np.isin(after, labels[~kept]).any()

    def hits(found):
        return np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth)])

    assert hits(after) >= hits(fresh) - 0.01, (hits(after), hits(fresh))
    stats = cagra.analyze(index)
    assert stats["invalid_edges"] == stats["self_loops"] == stats["duplicate_edges"] == 0
    index.compact()  # nothing deleted: nothing to do
    np.testing.assert_array_equal(index.labels, labels[kept])


def test_compact_without_labels_keeps_the_old_row_numbers(sets):
    data, queries = sets
    index = build(data[:1000])
    index.remove(np.arange(0, 1000, 2))  # row numbers
    index.compact()
    np.testing.assert_array_equal(index.labels, np.arange(1, 1000, 2))
    got, _ = index.search(queries, K)
    assert got.dtype == np.int64 and (got % 2 == 1).all()


# ---- errors: CagraError, and the index as it was ---------------------------------------------


@pytest.fixture()
def living(sets):
    data, _ = sets
    index = build(data[:600], labels=np.arange(600) + 1000)
    index.remove([1000, 1001])
    return index


@pytest.mark.parametrize(
    "case, call, match",
    [
        (
            "wrong dim",
            lambda ix, x: ix.extend(np.ascontiguousarray(x[:, :16]), np.arange(5)),
            "dimension 16",
        ),
        ("NaN", lambda ix, x: ix.extend(np.where(x > 0, np.nan, x), np.arange(5)), "NaN"),
        ("empty batch", lambda ix, x: ix.extend(x[:0], np.arange(0)), "empty"),
        ("no labels", lambda ix, x: ix.extend(x), "labels"),
        ("label count", lambda ix, x: ix.extend(x, np.arange(4)), "one label per row"),
        ("duplicate labels", lambda ix, x: ix.extend(x, [1, 2, 3, 2, 5]), "unique"),
        ("label in the index", lambda ix, x: ix.extend(x, [1, 2, 1003, 4, 5]), "already"),
        ("removed label reused", lambda ix, x: ix.extend(x, [1, 2, 1000, 4, 5]), "compact"),
        ("float labels", lambda ix, x: ix.extend(x, np.arange(5.0)), "integers"),
        ("2-D labels", lambda ix, x: ix.extend(x, np.arange(5)[None]), "1-D"),
        ("unknown label", lambda ix, x: ix.remove([1002, 7]), "label 7 "),
        ("removing twice", lambda ix, x: ix.remove([1000]), "removed before"),
        ("listed twice", lambda ix, x: ix.remove([1005, 1006, 1005]), "listed twice"),
        ("compact_above", lambda ix, x: ix.remove([1005], compact_above=1.5), r"\[0, 1\]"),
        ("huge uint64", lambda ix, x: ix.remove(np.array([2**63], np.uint64)), "int64"),
    ],
)
def test_bad_input_raises_and_changes_nothing(living, sets, case, call, match):
    data, _ = sets
    snap = snapshot(living)
    with pytest.raises(cagra.CagraError, match=match):
        call(living, np.ascontiguousarray(data[2000:2005]))
    assert_same(living, snap)


def test_f32_into_a_uint8_index(sets):
    data, _ = sets
    u8 = cagra.build(
        np.clip(data[:300] * 10 + 128, 0, 255).astype(np.uint8), graph_degree=16, backend="cpu"
    )
    snap = snapshot(u8)
    with pytest.raises(cagra.CagraError, match="the index stores u8 vectors; f32 vectors"):
        u8.extend(data[300:310])
    assert_same(u8, snap)
    u8.extend(np.clip(data[300:310] * 10 + 128, 0, 255).astype(np.uint8))
    assert u8.size == 310


def test_build_label_errors(sets):
    data, _ = sets
    with pytest.raises(cagra.CagraError, match="one label per row"):
        build(data[:100], labels=np.arange(99))
    with pytest.raises(cagra.CagraError, match="label 3 is given to two rows"):
        build(data[:100], labels=np.r_[np.arange(99), 3])
    with pytest.raises(cagra.CagraError, match="integers"):
        build(data[:100], labels=np.ones(100, bool))


# ---- views and threads -----------------------------------------------------------------------


def test_views_block_the_changes_that_move_memory(sets):
    data, _ = sets
    index = build(data[:500], labels=np.arange(500))
    graph, vectors = index.graph, index.vectors[:10]  # a slice keeps the view alive too
    with pytest.raises(BufferError, match="Index.graph"):
        index.extend(data[500:510], np.arange(500, 510))
    assert index.remove([3]) == 1  # a tombstone moves nothing
    with pytest.raises(BufferError):
        index.compact()
    with pytest.raises(BufferError):
        index.remove(np.arange(4, 400), compact_above=0.5)
    assert index.deleted_count == 1  # refused before anything changed
    del graph
    with pytest.raises(BufferError):
        index.compact()
    del vectors
    index.extend(data[500:510], np.arange(500, 510))
    index.compact()
    assert index.size == 509 and index.deleted_count == 0
    copy = np.array(index.graph)  # a copy does not count
    index.remove([4, 5], compact_above=0.001)
    assert index.size == 507 and copy.shape == (509, DEGREE)


def test_searches_in_other_threads_while_the_index_changes(sets):
    data, queries = sets
    index = build(data[:1000], labels=np.arange(1000))
    errors, done = [], threading.Event()

    def searcher():
        try:
            while not done.is_set():
                got, _ = index.search(queries, K, num_threads=1)
                assert got.shape == (len(queries), K) and (got >= 0).all()
                assert index.size >= 1000
        except Exception as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for first in range(1000, 3000, 250):
            index.extend(data[first : first + 250], np.arange(first, first + 250))
        index.remove(np.arange(0, 3000, 3))
        index.compact()
    finally:
        done.set()
        for t in threads:
            t.join()
    assert not errors, errors
    assert index.size == 2000
    got, _ = index.search(queries, K)
    assert not (got % 3 == 0).any()


# ---- CUDA arrays (where the CUDA backend, a GPU and torch are present) -------------------------


def test_cuda_arrays_and_labels(sets):
    torch = pytest.importorskip("torch")
    if not cagra.cuda_available():
        pytest.skip("no GPU visible to cagra")
    data, queries = sets
    index = cagra.build(data[:2000], graph_degree=DEGREE, labels=np.arange(2000) * 5)
    copies = cagra._ext._host_copies()
    # CUDA vectors and labels are copied to the host; the candidates' search runs on the GPU.
    index.extend(torch.from_numpy(data[2000:]).cuda(), torch.arange(2000, 4000).cuda() * 5)
    assert cagra._ext._host_copies() == copies + 1
    assert index.size == 4000
    index.remove(np.arange(0, 20000, 15))
    expected = index.search(queries, K, backend="cuda", algo="single_cta")
    assert expected[0].dtype == np.int64 and not (expected[0] % 15 == 0).any()
    got = index.search(torch.from_numpy(queries).cuda(), K, algo="single_cta")
    for t, dtype in zip(got, (torch.int64, torch.float32)):
        assert isinstance(t, torch.Tensor) and t.is_cuda and t.dtype == dtype
    np.testing.assert_array_equal(got[0].cpu().numpy(), expected[0])
    np.testing.assert_array_equal(got[1].cpu().numpy(), expected[1])
    # Both find the rows a brute force over the kept rows finds (label 5 i is gone when 3 | i).
    kept = np.arange(4000) % 3 != 0
    truth = (np.arange(4000) * 5)[kept][numpy_knn(data[kept], queries, K)[0]]
    for found in (index.search(queries, K, backend="cpu")[0], expected[0]):
        assert np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth)]) > 0.9
