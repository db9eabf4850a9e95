"""Files from Python: save/load round trips, the vector and neighbor readers, and equality with
the `cagra` command-line tool on the same index (search is deterministic, so ids and distances
must be identical, not merely close)."""

from __future__ import annotations

import subprocess

import cagra
import numpy as np
import pytest
from conftest import clustered


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float16, np.uint8, np.int8], ids=lambda t: np.dtype(t).name
)
def test_save_load_round_trip(tmp_path, dtype):
    data = clustered(1500, 24, dtype, seed=20)
    queries = clustered(50, 24, dtype, seed=21)
    index = cagra.build(data, metric="ip", graph_degree=16, intermediate_graph_degree=32)
    path = tmp_path / "index.cagra"
    index.save(path)  # os.PathLike accepted
    loaded = cagra.load(str(path))
    assert (
        loaded.size,
        loaded.dim,
        loaded.graph_degree,
        loaded.metric,
        loaded.dtype,
    ) == (index.size, index.dim, index.graph_degree, index.metric, index.dtype)
    np.testing.assert_array_equal(loaded.graph, index.graph)
    np.testing.assert_array_equal(loaded.vectors, index.vectors)
    # The CPU search: deterministic (the GPU's multi-CTA kernel, which small batches take, is
    # not bit-deterministic: which CTA claims a node first depends on timing).
    a = index.search(queries, 10, backend="cpu")
    b = loaded.search(queries, 10, backend="cpu")
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_read_matrix_and_neighbors(tmp_path, bigann10k):
    d, base, queries, truth = bigann10k
    assert base.shape == (9900, 128) and base.dtype == np.uint8
    assert queries.shape == (100, 128)
    raw = np.fromfile(d / "base.u8bin", dtype=np.uint8, offset=8).reshape(9900, 128)
    np.testing.assert_array_equal(base, raw)
    assert truth.shape == (100, 100) and truth.dtype == np.uint32
    _ids, dist = cagra.read_neighbors(d / "groundtruth.ibin")
    assert dist is not None and dist.dtype == np.float32 and dist.shape == (100, 100)
    # .npy written by numpy reads back as the same array.
    x = clustered(10, 6, np.float16)
    np.save(tmp_path / "x.npy", x)
    np.testing.assert_array_equal(cagra.read_matrix(tmp_path / "x.npy"), x)


def read_ibin(path):
    """The `cagra search` output, parsed with numpy alone: uint32 rows, k, ids, distances."""
    raw = np.fromfile(path, dtype=np.uint8)
    rows, k = np.frombuffer(raw[:8].tobytes(), dtype=np.uint32)
    n = int(rows) * int(k)
    ids = np.frombuffer(raw[8 : 8 + 4 * n].tobytes(), dtype=np.int32).reshape(rows, k)
    dist = np.frombuffer(raw[8 + 4 * n : 8 + 8 * n].tobytes(), dtype=np.float32)
    return ids.astype(np.uint32), dist.reshape(rows, k)


def run(*args):
    return subprocess.run([str(a) for a in args], check=True, capture_output=True, text=True)


def test_results_equal_the_cli(tmp_path, cli, bigann10k):
    d, base, queries, _ = bigann10k
    cli_index = tmp_path / "cli.cagra"
    run(
        cli,
        "build",
        d / "base.u8bin",
        "-o",
        cli_index,
        "--graph-degree",
        "32",
        "--intermediate-degree",
        "64",
        "--threads",
        "2",
    )
    out = tmp_path / "cli.ibin"
    run(
        cli,
        "search",
        cli_index,
        d / "query.u8bin",
        "-k",
        "10",
        "--itopk",
        "96",
        "--search-width",
        "2",
        "-o",
        out,
    )
    cli_ids, cli_dist = read_ibin(out)

    # The CLI's index, searched from Python with the same parameters.
    index = cagra.load(cli_index)
    ids, dist = index.search(queries, 10, itopk_size=96, search_width=2)
    np.testing.assert_array_equal(ids, cli_ids)
    np.testing.assert_array_equal(dist, cli_dist)

    # The same build from Python gives the same graph, and its saved file the same search.
    py_index = cagra.build(base, graph_degree=32, intermediate_graph_degree=64)
    np.testing.assert_array_equal(py_index.graph, index.graph)
    py_path = tmp_path / "py.cagra"
    py_index.save(py_path)
    out2 = tmp_path / "py.ibin"
    run(
        cli,
        "search",
        py_path,
        d / "query.u8bin",
        "-k",
        "10",
        "--itopk",
        "96",
        "--search-width",
        "2",
        "-o",
        out2,
    )
    np.testing.assert_array_equal(read_ibin(out2)[0], ids)
    info = run(cli, "info", py_path).stdout
    assert "9900" in info
