"""Bad inputs give a clear Python exception (type and message), never a crash or a silent
conversion (float64, the one documented conversion, is tested in test_conversion.py): dtypes,
layouts, shapes, k, parameters, option strings, files."""

from __future__ import annotations

import cagra
import numpy as np
import pytest
from conftest import clustered


@pytest.fixture(scope="module")
def index():
    return cagra.build(clustered(500, 16, seed=30), graph_degree=8, intermediate_graph_degree=16)


@pytest.fixture(scope="module")
def queries():
    return clustered(20, 16, seed=31)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint16, np.bool_, np.complex64])
def test_wrong_dtype(index, queries, dtype):
    with pytest.raises(TypeError, match="float32, float16, uint8 or int8"):
        cagra.build(clustered(200, 16).astype(dtype))
    with pytest.raises(TypeError, match=f"queries has dtype {np.dtype(dtype).name}"):
        index.search(queries.astype(dtype), 5)


def test_not_an_array(index):
    with pytest.raises(TypeError, match="2-D array"):
        cagra.build({"rows": 2})
    with pytest.raises(TypeError, match="2-D array"):
        index.search("queries", 5)
    with pytest.raises(TypeError, match="2-D array"):
        index.search(b"queries", 5)


def test_non_contiguous(index, queries):
    wide = clustered(20, 32, seed=32)
    for bad in (np.asfortranarray(queries), wide[:, ::2], queries[::2]):
        with pytest.raises(ValueError, match="ascontiguousarray"):
            index.search(bad, 5)
    with pytest.raises(ValueError, match="not C-contiguous"):
        cagra.build(np.asfortranarray(clustered(200, 16)))
    # A strided view of one row is contiguous enough: accepted.
    assert index.search(queries[3:4], 5)[0].shape == (1, 5)


def test_wrong_number_of_dimensions(index, queries):
    with pytest.raises(ValueError, match=r"2-D array .* shape \(16,\)"):
        index.search(queries[0], 5)
    with pytest.raises(ValueError, match=r"shape \(1, 20, 16\)"):
        index.search(queries[None], 5)
    with pytest.raises(ValueError, match="2-D"):
        cagra.build(np.zeros((4, 4, 4), np.float32))


def test_wrong_dim(index, queries):
    with pytest.raises(cagra.CagraError, match="queries have dimension 8 but the index has 16"):
        index.search(np.ascontiguousarray(queries[:, :8]), 5)


def test_bad_k(index, queries):
    with pytest.raises(ValueError, match="k must be >= 1"):
        index.search(queries, 0)
    with pytest.raises(ValueError, match="k = 501 exceeds the index size 500"):
        index.search(queries, 501)
    with pytest.raises(ValueError, match="exceeds the index size"):
        index.search(queries, 2**32 - 1)  # refused before anything is allocated
    with pytest.raises(ValueError, match=r"k must be in \[0"):
        index.search(queries, -1)
    with pytest.raises(TypeError, match="k must be an integer"):
        index.search(queries, 2.5)


def test_bad_search_params(index, queries):
    with pytest.raises(cagra.CagraError, match=r"itopk_size must be in \[1, 65536\]"):
        index.search(queries, 5, itopk_size=0)
    # Every violated constraint is listed in one message.
    with pytest.raises(cagra.CagraError, match="search_width.*team_size"):
        index.search(queries, 5, search_width=0, team_size=3)
    with pytest.raises(ValueError, match="algo must be one of"):
        index.search(queries, 5, algo="fast")
    with pytest.raises(ValueError, match="backend must be one of 'auto', 'cpu'"):
        index.search(queries, 5, backend="tpu")
    with pytest.raises(TypeError, match="persistent must be a bool"):
        index.search(queries, 5, persistent=1)
    with pytest.raises(TypeError, match="stream_ordered must be a bool"):
        index.search(queries, 5, stream_ordered=1)
    # Host queries always wait for their results: the flag changes nothing for them.
    np.testing.assert_array_equal(
        index.search(queries, 5, stream_ordered=True)[0], index.search(queries, 5)[0]
    )
    with pytest.raises(
        cagra.CagraError, match=r"persistent_lifetime_us must be in \[200, 10000000\]"
    ):
        index.search(queries, 5, persistent_lifetime_us=100)


def test_bad_build_params():
    data = clustered(100, 8)
    with pytest.raises(ValueError, match="metric must be one of 'l2'"):
        cagra.build(data, metric="hamming")
    with pytest.raises(ValueError, match="storage must be one of"):
        cagra.build(data, storage="int4")
    with pytest.raises(
        cagra.CagraError, match="50 rows, but graph_degree 64 needs at least 65 rows"
    ):
        cagra.build(data[:50])  # fewer rows than the default degree
    with pytest.raises(cagra.CagraError, match="intermediate_graph_degree 128 needs at least 129"):
        cagra.build(data, intermediate_graph_degree=128)  # an explicit one is not capped
    with pytest.raises(
        cagra.CagraError,
        match=r"intermediate_graph_degree \(16\) must be >= graph_degree \(32\)",
    ):
        cagra.build(data, graph_degree=32, intermediate_graph_degree=16)
    with pytest.raises(cagra.CagraError, match="dataset is empty"):
        cagra.build(data[:0], graph_degree=4, intermediate_graph_degree=8)
    with pytest.raises(ValueError, match="graph_degree must be in"):
        cagra.build(data, graph_degree=-4)
    with pytest.raises(cagra.CagraError, match="NaN|finite"):
        bad = data.copy()
        bad[3, 3] = np.nan
        cagra.build(bad, graph_degree=4, intermediate_graph_degree=8)


def test_bad_query_values(index):
    u8 = cagra.build(clustered(300, 16, np.uint8), graph_degree=8, intermediate_graph_degree=16)
    with pytest.raises(cagra.CagraError):
        u8.search(np.full((2, 16), 0.5, np.float32), 5)  # not representable as uint8
    with pytest.raises(cagra.CagraError):
        index.search(np.full((2, 16), np.inf, np.float32), 5)


def test_cuda_backend_or_arrays_unavailable(index, queries):
    if cagra.cuda_available():
        pytest.skip("a GPU is visible")
    with pytest.raises(cagra.CagraError, match="CUDA"):
        index.search(queries, 5, backend="cuda")


def test_files(tmp_path, index):
    with pytest.raises(FileNotFoundError, match="no index file"):
        cagra.load(tmp_path / "missing.cagra")
    junk = tmp_path / "junk.cagra"
    junk.write_bytes(b"not an index at all" * 10)
    with pytest.raises(cagra.CagraError, match="not a CAGRA index file"):
        cagra.load(junk)
    index.save(tmp_path / "ok.cagra")
    truncated = tmp_path / "truncated.cagra"
    truncated.write_bytes((tmp_path / "ok.cagra").read_bytes()[:-100])
    with pytest.raises(cagra.CagraError):
        cagra.load(truncated)
    with pytest.raises(cagra.CagraError, match="cannot create"):
        index.save(tmp_path / "no" / "such" / "dir.cagra")
    with pytest.raises(cagra.CagraError):
        cagra.read_matrix(tmp_path / "missing.fbin")


def test_stage_and_helper_errors(index):
    g = np.ascontiguousarray(index.graph)
    with pytest.raises(TypeError, match="integer ids"):
        cagra.optimize(g.astype(np.float32))
    with pytest.raises(ValueError, match="outside"):
        cagra.analyze(-g.astype(np.int64))
    with pytest.raises(ValueError, match="2-D"):
        cagra.recall(g[0], g)
    with pytest.raises(ValueError, match="knn_distances must have the shape of knn_ids"):
        cagra.optimize(g, np.zeros((3, 3), np.float32), graph_degree=4)
    with pytest.raises(cagra.CagraError):
        cagra.optimize(g, graph_degree=64)  # more than the kNN degree
    with pytest.raises(TypeError):
        cagra.Index(None)


def test_errors_are_value_errors():
    assert issubclass(cagra.CagraError, ValueError)
