"""One rule set on every surface: the C++ library, the `cagra` CLI and Python resolve the same
defaults and automatic values. Each surface prints the library's plan line
(cagra::to_string(cagra::plan_build / plan_search)): the CLI with --explain, Python with
cagra.explain_build and Index.explain; for the same inputs and default parameters the lines
must be equal. tests/cpu/test_params.cpp and test_plan_gpu.cpp (Plan.*) check the C++ side of
the same values."""

from __future__ import annotations

import json
import subprocess

import cagra
import numpy as np
import pytest

ROWS, DIM, NQ = 300, 8, 7


def run(*args):
    r = subprocess.run([str(a) for a in args], check=False, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(map(str, args))}\n{r.stderr}"
    return r.stdout


def plan_lines(stdout):
    return [ln[len("plan: ") :] for ln in stdout.splitlines() if ln.startswith("plan: ")]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("surfaces")
    rng = np.random.default_rng(7)
    x = rng.random((ROWS, DIM), dtype=np.float32)
    q = rng.random((NQ, DIM), dtype=np.float32)
    np.save(d / "base.npy", x)
    np.save(d / "queries.npy", q)
    return d, x, q


def test_library_defaults_are_automatic():
    # The structs the Python keywords are read from: 0 = automatic, resolved by the library.
    assert cagra._ext.IndexParams().intermediate_graph_degree == 0
    assert cagra._ext.SearchParams().itopk_size == 64
    line = cagra.explain_build(1000)
    assert "graph_degree=64 intermediate_graph_degree=128" in line
    assert "intermediate_graph_degree=32" in cagra.explain_build(1000, graph_degree=16)
    assert "intermediate_graph_degree=99" in cagra.explain_build(100)  # rows - 1
    assert "intermediate_graph_degree=24" in cagra.explain_build(
        1000, graph_degree=16, intermediate_graph_degree=24
    )
    assert "storage=u8" in cagra.explain_build(500, "uint8").split()

    # An array names its dimension, a row count does not: on a GPU only the former plans the
    # device memory (optimize=, device_bytes=, ...). The fields before those are the same.
    def head(plan):
        return plan.split(" optimize=")[0]

    assert head(cagra.explain_build(np.zeros((500, 4), np.float16))) == head(
        cagra.explain_build(500, np.float16)
    )


@pytest.mark.parametrize(
    "cli_args, kwargs",
    [([], {}), (["--graph-degree", "16"], {"graph_degree": 16})],
    ids=["defaults", "graph_degree=16"],
)
def test_build_plan_cli_equals_python(cli, files, tmp_path, cli_args, kwargs):
    d, x, _ = files
    idx = tmp_path / "x.cagra"
    out = run(cli, "build", d / "base.npy", "-o", idx, "--explain", *cli_args)
    [cli_plan] = plan_lines(out)
    py_plan = cagra.explain_build(x, **kwargs)

    # On a GPU the plan names the device memory free when it was made: another process, another
    # value. Every other field must match.
    def fields(plan):
        return [f for f in plan.split() if not f.startswith("device_budget=")]

    assert fields(cli_plan) == fields(py_plan)
    degree = kwargs.get("graph_degree", 64)
    assert f"graph_degree={degree} intermediate_graph_degree={2 * degree} " in py_plan
    assert f"degree {degree} (intermediate {2 * degree})" in out  # the summary line

    # Both surfaces build the same graph from it (the CPU build is deterministic).
    if cagra.search_backend() == "cpu":
        index = cagra.load(idx)
        np.testing.assert_array_equal(index.graph, cagra.build(x, **kwargs).graph)


@pytest.mark.parametrize(
    "k, cli_args, kwargs",
    [
        (10, [], {}),  # the default itopk (64)
        (100, [], {}),  # k above the default itopk: raised to k
        (10, ["--itopk", "5"], {"itopk_size": 5}),  # itopk < k: raised, not refused
        (
            10,
            ["--itopk", "96", "--search-width", "2"],
            {"itopk_size": 96, "search_width": 2},
        ),
        (
            10,
            ["--traversal", "int8", "--rerank", "20"],
            {"traversal": "int8", "rerank": 20},
        ),
    ],
    ids=["defaults", "k100", "itopk5", "itopk96-width2", "int8-rerank20"],
)
def test_search_plan_cli_equals_python(cli, files, tmp_path, k, cli_args, kwargs):
    d, _, q = files
    idx = tmp_path / "x.cagra"
    run(cli, "build", d / "base.npy", "-o", idx, "--graph-degree", "16")
    out = run(
        cli,
        "search",
        idx,
        d / "queries.npy",
        "-k",
        k,
        "-o",
        tmp_path / "nn.ibin",
        "--explain",
        *cli_args,
    )
    [cli_plan] = plan_lines(out)
    index = cagra.load(idx)
    py_plan = index.explain(k, batch=NQ, **kwargs)  # the CLI searches all queries in one call
    assert cli_plan == py_plan
    itopk = max(kwargs.get("itopk_size", 64), k)
    assert f" k={k} itopk={itopk} " in py_plan
    assert f"search    k {k}, itopk {itopk}," in out
    ids, _ = index.search(q, k, **kwargs)  # and the search runs with it
    assert ids.shape == (NQ, k)


def test_bench_json_plan_equals_python(cli, files, tmp_path):
    d = files[0]
    idx, gt, js = tmp_path / "x.cagra", tmp_path / "gt.ibin", tmp_path / "bench.jsonl"
    run(cli, "build", d / "base.npy", "-o", idx, "--graph-degree", "16")
    run(cli, "gt", d / "base.npy", d / "queries.npy", "-k", "10", "-o", gt)
    out = run(
        cli,
        "bench",
        idx,
        d / "queries.npy",
        gt,
        "-k",
        "10",
        "--itopk",
        "8,32,64",
        "--json",
        js,
        "--explain",
    )
    out1 = run(
        cli,
        "bench",
        idx,
        d / "queries.npy",
        gt,
        "-k",
        "10",
        "--itopk",
        "32",
        "--batch",
        "1",
        "--json",
        js,
    )
    records = [json.loads(line) for line in js.read_text().splitlines()]
    assert [r["params"]["itopk"] for r in records] == [
        32,
        64,
        32,
    ]  # itopk 8 < k skipped
    index = cagra.load(idx)
    assert plan_lines(out) == [records[0]["plan"], records[1]["plan"]]
    assert not plan_lines(out1)  # only with --explain
    assert records[0]["plan"] == index.explain(10, batch=NQ, itopk_size=32)
    assert records[1]["plan"] == index.explain(10, batch=NQ, itopk_size=64)
    assert records[2]["plan"] == index.explain(10, itopk_size=32)  # --batch 1


def test_large_degree_with_automatic_intermediate():
    # Failed while Python's default intermediate degree was a fixed 128 (< 256).
    x = np.random.default_rng(3).random((600, 8), dtype=np.float32)
    assert "intermediate_graph_degree=512" in cagra.explain_build(x, graph_degree=256)
    index = cagra.build(x, graph_degree=256)
    assert index.graph_degree == 256
    ids, _ = index.search(x[:5], 10)
    assert (ids[:, 0] == np.arange(5)).all()


def test_explain_errors(files):
    _, x, _ = files
    index = cagra.build(x, graph_degree=16)
    with pytest.raises(cagra.CagraError, match="k = 301 exceeds the index size"):
        index.explain(301)
    with pytest.raises(cagra.CagraError, match="search_width"):
        index.explain(10, search_width=0)
    with pytest.raises(ValueError, match="batch must be >= 1"):
        index.explain(10, batch=0)
    # float64 is planned as the float32 copy build makes (test_conversion.py); int64 is refused.
    with pytest.raises(TypeError, match="float32, float16, uint8 or int8"):
        cagra.explain_build(100, np.int64)
    with pytest.raises(TypeError, match="float32, float16, uint8 or int8"):
        cagra.explain_build(np.zeros((100, 4), np.int64))
    with pytest.raises(TypeError, match="row count only"):
        cagra.explain_build(x, np.float32)
    with pytest.raises(cagra.CagraError, match="graph_degree 64 needs at least 65 rows"):
        cagra.explain_build(50)
    with pytest.raises(ValueError, match="2-D"):
        cagra.explain_build(x[0])
