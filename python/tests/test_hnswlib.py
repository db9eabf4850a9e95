"""Index.to_hnswlib against the `hnswlib` Python module (docs/hnswlib.md): the file it writes
loads with hnswlib.Index.load_index and finds bigann10k's true neighbours; labels, deleted rows
and the cosine space come through. Skipped when hnswlib is not importable (pip install hnswlib,
or Debian's python3-hnswlib); the C++ side is tested against hnswlib's headers in
tests/cpu/test_hnswlib_export.cpp."""

from __future__ import annotations

import cagra
import numpy as np
import pytest
from conftest import numpy_knn


def recall_at(found, truth, k=10):
    return float(np.mean([len(set(f[:k]) & set(t[:k])) / k for f, t in zip(found, truth)]))


def test_from_hnswlib_reads_back_an_export(bigann10k, tmp_path):
    # Needs no hnswlib module: our own writer, our own reader.
    _, base, queries, truth = bigann10k
    index = cagra.build(base, graph_degree=32, labels=np.arange(base.shape[0]) + 7)
    index.remove(np.array([7, 8]))
    path = tmp_path / "round.hnsw"
    index.to_hnswlib(path)
    back = cagra.from_hnswlib(path, metric="l2", dim=base.shape[1], graph_degree=32)
    assert back.size == base.shape[0] and back.graph_degree == 32
    assert back.deleted_count == 2
    assert np.array_equal(back.labels, np.arange(base.shape[0]) + 7)
    labels, _ = back.search(queries, k=10, itopk_size=64)  # labels: rows + 7
    live_truth = [[t + 7 for t in row if t not in (0, 1)][:10] for row in truth]
    assert recall_at(labels, live_truth) >= 0.95
    with pytest.raises(cagra.CagraError):
        cagra.from_hnswlib(path, dim=base.shape[1] + 1)
    with pytest.raises(FileNotFoundError):
        cagra.from_hnswlib(tmp_path / "missing.hnsw")
    with pytest.raises(ValueError):
        cagra.from_hnswlib(path, metric="hamming")


@pytest.fixture(scope="module")
def hnswlib():
    return pytest.importorskip("hnswlib")


@pytest.fixture(scope="module")
def built(bigann10k):
    _, base, queries, truth = bigann10k
    return base, queries, truth, cagra.build(base, graph_degree=32)


def test_hnswlib_loads_the_export_and_finds_the_true_neighbours(built, tmp_path, hnswlib):
    base, queries, truth, index = built
    path = tmp_path / "bigann.hnsw"
    report = index.to_hnswlib(path)
    assert report["rows"] == base.shape[0] and report["M"] == 16
    assert report["level_rows"][0] == base.shape[0] and len(report["level_rows"]) > 1
    assert report["file_bytes"] == path.stat().st_size

    p = hnswlib.Index(space="l2", dim=base.shape[1])
    p.load_index(str(path))
    assert p.get_current_count() == base.shape[0]
    assert np.array_equal(np.asarray(p.get_items([0, 17])), base[[0, 17]].astype(np.float32))
    p.set_ef(64)
    labels, distances = p.knn_query(queries.astype(np.float32), k=10)
    assert recall_at(labels, truth) >= 0.95
    # hnswlib's L2Space distance is the squared L2 distance, as ours.
    d0 = ((base[labels[0, 0]].astype(np.float64) - queries[0]) ** 2).sum()
    assert distances[0, 0] == pytest.approx(d0, rel=1e-5)


def test_labels_and_deleted_rows(built, tmp_path, hnswlib):
    base, queries, truth, _ = built
    index = cagra.build(base, graph_degree=32, labels=np.arange(base.shape[0]) * 3 + 1_000_000)
    gone = np.unique(truth[:, 0])  # every query's true nearest row
    index.remove(gone * 3 + 1_000_000)
    path = tmp_path / "labelled.hnsw"
    assert index.to_hnswlib(path, num_threads=2)["deleted"] == len(gone)

    p = hnswlib.Index(space="l2", dim=base.shape[1])
    p.load_index(str(path))
    p.set_ef(64)
    labels, _ = p.knn_query(queries.astype(np.float32), k=10)
    rows = (labels.astype(np.int64) - 1_000_000) // 3
    assert not np.isin(rows, gone).any()
    live_truth = [[t for t in row if t not in set(gone)][:10] for row in truth]
    assert recall_at(rows, live_truth) >= 0.95


def test_cosine_loads_in_the_cosine_space(bigann10k, tmp_path, hnswlib):
    _, base, queries, _ = bigann10k
    x = base[:3000].astype(np.float32)
    q = queries.astype(np.float32)
    index = cagra.build(x, graph_degree=24, metric="cosine")
    path = tmp_path / "cosine.hnsw"
    index.to_hnswlib(path)
    p = hnswlib.Index(space="cosine", dim=x.shape[1])
    p.load_index(str(path))
    p.set_ef(64)
    labels, distances = p.knn_query(q, k=10)  # hnswlib normalizes the queries itself
    ids, exact = numpy_knn(x, q, 10, "cosine")
    assert recall_at(labels, ids) >= 0.95
    assert distances[:, 0] == pytest.approx(exact[:, 0], abs=1e-5)


def test_what_hnswlib_cannot_hold_is_refused(built, tmp_path):
    *_, index = built
    with pytest.raises(cagra.CagraError, match="choose M >= 16"):
        index.to_hnswlib(tmp_path / "x.hnsw", M=8)
    with pytest.raises(ValueError):
        index.to_hnswlib(tmp_path / "x.hnsw", M=-1)
    with pytest.raises(cagra.CagraError):
        index.to_hnswlib(tmp_path)  # a folder
