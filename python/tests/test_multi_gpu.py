"""Several GPUs from Python (docs/multi_gpu.md): ShardedIndex built, searched, saved and loaded
on the CPU backend (which accepts a device list and ignores the devices), replicated searches
through Index.search(devices=...), and the errors. bigann10k is the real set; small clustered
sets cover the edges."""

from __future__ import annotations

import subprocess

import cagra
import numpy as np
import pytest
from conftest import data_and_queries


@pytest.fixture(scope="module")
def bigann_sharded(bigann10k):
    _, base, _, _ = bigann10k
    return cagra.build(base, graph_degree=32, shards=3, backend="cpu")


def test_build_shards_returns_a_sharded_index(bigann10k, bigann_sharded):
    _, base, _, _ = bigann10k
    sh = bigann_sharded
    assert isinstance(sh, cagra.ShardedIndex)
    assert sh.shard_count == 3
    assert sh.shard_offsets == [0, 3300, 6600, 9900]
    assert sh.size == len(sh) == base.shape[0]
    assert sh.dim == 128
    assert sh.graph_degree == 32
    assert sh.metric == "l2"
    assert sh.dtype == np.uint8
    assert "ShardedIndex(shard_count=3" in repr(sh)


def test_sharded_recall_matches_one_index(bigann10k, bigann_sharded):
    _, base, queries, truth = bigann10k
    single = cagra.build(base, graph_degree=32, backend="cpu")
    for itopk in (16, 64):
        one, _ = single.search(queries, 10, itopk_size=itopk, backend="cpu")
        ids, dist = bigann_sharded.search(queries, 10, itopk_size=itopk, backend="cpu")
        r_one = cagra.recall(one, truth, 10)
        r_sh = cagra.recall(ids, truth, 10)
        assert r_sh >= r_one - 0.01, (itopk, r_sh, r_one)
        if itopk == 64:
            assert r_sh >= 0.9
        assert ids.dtype == np.uint32 and dist.dtype == np.float32
        assert ids.shape == dist.shape == (queries.shape[0], 10)
        assert (ids < base.shape[0]).all()
        assert (np.diff(dist, axis=1) >= 0).all()
    # Rows of every shard come back: the ids are global.
    assert set(np.unique(ids // 3300)) == {0, 1, 2}
    # A device list changes nothing on the CPU.
    again, _ = bigann_sharded.search(queries, 10, itopk_size=64, backend="cpu", devices=[0, 1])
    np.testing.assert_array_equal(again, ids)


def test_devices_make_one_shard_per_device():
    x, q = data_and_queries(600, 200, 16)
    sh = cagra.build(x, graph_degree=8, devices=[0, 1], backend="cpu")
    assert isinstance(sh, cagra.ShardedIndex) and sh.shard_count == 2
    assert sh.shard_offsets == [0, 300, 600]
    sh4 = cagra.build(x, graph_degree=8, shards=4, devices=[1, 0], backend="cpu")
    assert sh4.shard_count == 4
    # devices=[d] alone: an ordinary Index.
    idx = cagra.build(x, graph_degree=8, devices=[0], backend="cpu")
    assert isinstance(idx, cagra.Index)
    plain = cagra.build(x, graph_degree=8, backend="cpu")
    assert isinstance(plain, cagra.Index)
    # Replicated search: the results of a one-device search.
    a, da = idx.search(q, 10, backend="cpu")
    b, db = idx.search(q, 10, backend="cpu", devices=[0, 1])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(da, db)


def test_explain_build_plans_the_largest_shard():
    assert cagra.explain_build(1000, shards=4) == cagra.explain_build(250)
    assert cagra.explain_build(1001, devices=[0, 1]) == cagra.explain_build(501)
    assert cagra.explain_build(1000, devices=[0]) == cagra.explain_build(1000)


def test_k_beyond_a_shard_and_filters():
    x, _ = data_and_queries(50, 1, 8)
    sh = cagra.build(x, graph_degree=4, shards=7, backend="cpu")
    assert sh.shard_offsets == [0, 7, 14, 21, 28, 35, 42, 50]
    ids, dist = sh.search(x, 20, itopk_size=64, backend="cpu")
    np.testing.assert_array_equal(ids[:, 0], np.arange(50))  # a row is its own nearest
    full, _ = sh.search(x[:3], 50, itopk_size=64, backend="cpu")
    for row in full:
        assert sorted(row.tolist()) == list(range(50))
    # A filter over the global rows: only even rows come back.
    even, _ = sh.search(x[:5], 5, backend="cpu", filter=np.arange(0, 50, 2))
    assert (even % 2 == 0).all()
    mask = np.zeros(50, dtype=bool)
    mask[[3, 40]] = True
    few, fd = sh.search(x[:2], 5, backend="cpu", filter=mask)
    assert set(few[:, :2].ravel().tolist()) == {3, 40}
    assert (few[:, 2:] == cagra.INVALID_ID).all() and np.isinf(fd[:, 2:]).all()


def test_save_load_roundtrip(tmp_path, bigann10k, bigann_sharded):
    _, _, queries, _ = bigann10k
    path = tmp_path / "sh.cagra"
    bigann_sharded.save(path)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["sh.cagra"] + [f"sh.cagra.shard-{s}-of-3" for s in range(3)]
    assert (tmp_path / "sh.cagra").read_text().startswith("CAGRASHD 1\nshards 3 rows 9900")
    for loaded in (cagra.load(path), cagra.load_sharded(str(path))):
        assert isinstance(loaded, cagra.ShardedIndex)
        assert loaded.shard_offsets == bigann_sharded.shard_offsets
        a, da = loaded.search(queries, 10, backend="cpu")
        b, db = bigann_sharded.search(queries, 10, backend="cpu")
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(da, db)
    # Each shard file is an ordinary index.
    shard = cagra.load(tmp_path / "sh.cagra.shard-1-of-3")
    assert isinstance(shard, cagra.Index) and shard.size == 3300
    # load_sharded refuses a single index; a changed shard file is refused by name.
    with pytest.raises(cagra.CagraError, match="not a sharded index manifest"):
        cagra.load_sharded(tmp_path / "sh.cagra.shard-1-of-3")
    (tmp_path / "sh.cagra.shard-2-of-3").write_bytes(
        (tmp_path / "sh.cagra.shard-0-of-3").read_bytes()
    )
    with pytest.raises(cagra.CagraError, match="not the one the manifest names"):
        cagra.load(path)
    with pytest.raises(FileNotFoundError):
        cagra.load_sharded(tmp_path / "missing.cagra")


def test_cli_reads_what_python_wrote(tmp_path, cli, bigann10k):
    d, base, _, _ = bigann10k
    sh = cagra.build(base[:2000], graph_degree=16, shards=2, backend="cpu")
    sh.save(tmp_path / "py.cagra")
    out = subprocess.run(
        [str(cli), "info", str(tmp_path / "py.cagra")], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "shards             2" in out.stdout
    nn = tmp_path / "nn.ibin"
    out = subprocess.run(
        [str(cli), "search", str(tmp_path / "py.cagra"), str(d / "query.u8bin"), "-k", "10"]
        + ["-o", str(nn), "--backend", "cpu"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    ids, _ = cagra.read_neighbors(nn)
    mine, _ = sh.search(cagra.read_matrix(d / "query.u8bin"), 10, backend="cpu")
    np.testing.assert_array_equal(ids, mine)


def test_errors():
    x, q = data_and_queries(100, 5, 8)
    with pytest.raises(ValueError, match="shards must be >= 1"):
        cagra.build(x, shards=0, backend="cpu")
    with pytest.raises(cagra.CagraError, match="101 shards for 100 rows"):
        cagra.build(x, graph_degree=4, shards=101, backend="cpu")
    with pytest.raises(TypeError, match="shards must be an integer"):
        cagra.build(x, shards=1.5, backend="cpu")
    with pytest.raises(ValueError, match="labels are not supported on a sharded index"):
        cagra.build(x, graph_degree=4, shards=2, labels=np.arange(100), backend="cpu")
    with pytest.raises(ValueError, match="lists a device twice"):
        cagra.build(x, graph_degree=4, devices=[0, 0], backend="cpu")
    with pytest.raises(ValueError, match="devices entry"):
        cagra.build(x, graph_degree=4, devices=[-1, 0], backend="cpu")
    with pytest.raises(TypeError, match="list of CUDA device ordinals"):
        cagra.build(x, graph_degree=4, devices=0, backend="cpu")
    with pytest.raises(TypeError, match="list of CUDA device ordinals"):
        cagra.build(x, graph_degree=4, devices="0,1", backend="cpu")
    sh = cagra.build(x, graph_degree=4, shards=2, backend="cpu")
    idx = cagra.build(x, graph_degree=4, backend="cpu")
    for index in (sh, idx):
        with pytest.raises(ValueError, match="lists a device twice"):
            index.search(q, 5, backend="cpu", devices=[1, 1])
        with pytest.raises(TypeError):
            index.search(q, 5, backend="cpu", devices=[0.5])
    with pytest.raises(cagra.CagraError, match="exceeds the index size"):
        sh.search(q, 101, backend="cpu")
    with pytest.raises(cagra.CagraError, match="dim"):
        sh.search(q[:, :4].copy(), 5, backend="cpu")
    with pytest.raises(cagra.CagraError):
        sh.search(q, 5, backend="cpu", filter=np.ones(99, dtype=bool))
    with pytest.raises(TypeError, match="create a ShardedIndex"):
        cagra.ShardedIndex(object())
    # A ShardedIndex has no living-index methods.
    assert not hasattr(sh, "extend") and not hasattr(sh, "labels")


def test_checkpoint_resumes_a_sharded_build(tmp_path):
    x, q = data_and_queries(3000, 20, 16)
    folder = tmp_path / "ckpt"
    first = cagra.build(x, graph_degree=8, shards=3, checkpoint=folder, backend="cpu")
    names = sorted(p.name for p in folder.iterdir())
    assert names == [f"shard-{s}-of-3.{ext}" for s in range(3) for ext in ("cagra", "fingerprint")]
    stamps = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    again = cagra.build(x, graph_degree=8, shards=3, checkpoint=str(folder), backend="cpu")
    # Resumed: the files are read, not written again, and the answers are the same.
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == stamps
    a, _ = first.search(q, 5, backend="cpu")
    b, _ = again.search(q, 5, backend="cpu")
    np.testing.assert_array_equal(a, b)
    # One index checkpoints its kNN stage (one partition here) into the folder.
    single = cagra.build(x, graph_degree=8, checkpoint=folder, backend="cpu")
    assert (folder / "knn-part-0-of-1.bin").is_file()
    again = cagra.build(x, graph_degree=8, checkpoint=folder, backend="cpu")
    np.testing.assert_array_equal(single.graph, again.graph)
