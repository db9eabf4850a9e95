"""The package's surface: keyword defaults equal the C++ defaults (include/cagra/params.hpp),
the type stub of the extension matches the built module, and the documented names exist."""

from __future__ import annotations

import importlib.util
import inspect
import re
import shutil
import subprocess
import sys
from pathlib import Path

import cagra
import pytest

# include/cagra/params.hpp, written out: a wiring mistake in the binding shows up here.
BUILD_DEFAULTS = {
    "metric": "l2",
    "graph_degree": 64,
    "intermediate_graph_degree": 0,  # automatic: 2 x graph_degree, at most rows - 1
    "knn_algo": "auto",
    "knn_max_iterations": 20,
    "reorder": "rank",
    "storage": "same",
    "seed": 0,
    "backend": "auto",
    "num_threads": 0,
}
SEARCH_DEFAULTS = {
    "itopk_size": 64,
    "search_width": 1,
    "max_iterations": 0,
    "min_iterations": 0,
    "team_size": 0,
    "algo": "auto",
    "hash_bits": 0,
    "hash_reset_interval": 0,
    "num_random_samplings": 0,
    "seed": 0,
    "persistent": True,
    "persistent_lifetime_us": 1000,
    "traversal": "exact",
    "rerank": 0,
    "stored_rows": "auto",
    "backend": "auto",
    "num_threads": 0,
    "filter": None,
    "filter_algo": "auto",
}


def defaults(fn):
    return {
        name: p.default
        for name, p in inspect.signature(fn).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def test_build_defaults():
    d = defaults(cagra.build)
    for name, value in BUILD_DEFAULTS.items():
        assert d[name] == value, name
    assert d["knn_termination_threshold"] == pytest.approx(0.001)
    assert d["knn_sample_rate"] == 0.5
    assert defaults(cagra.build_knn_graph)["k"] is None  # build's automatic degree
    assert defaults(cagra.optimize)["graph_degree"] == 64
    assert d["labels"] is None
    # explain_build takes build's keywords with build's defaults (labels and the checkpoint
    # folder do not change a plan), plus the data's dtype and dimension.
    assert d["checkpoint"] is None
    del d["labels"], d["checkpoint"]
    assert defaults(cagra.explain_build) == {**d, "dtype": None, "dim": None}


def test_search_defaults():
    d = defaults(cagra.Index.search)
    # devices (a replicated search; docs/multi_gpu.md) does not change a one-device plan, nor
    # does the CUDA stream a search of CUDA queries waits for, nor whether it waits for them,
    # nor where the results are written.
    assert d == {
        **SEARCH_DEFAULTS,
        "devices": None,
        "stream": None,
        "stream_ordered": False,
        "out": None,
    }
    assert defaults(cagra.Index.explain) == {**SEARCH_DEFAULTS, "batch": 1}


def test_public_names():
    for name in cagra.__all__:
        assert getattr(cagra, name).__doc__ or name == "built_with_cuda", name
    assert re.fullmatch(r"\d+\.\d+\.\d+", cagra.__version__)
    assert isinstance(cagra.built_with_cuda, bool)
    assert isinstance(cagra.cuda_available(), bool)
    assert cagra.cuda_available() <= cagra.built_with_cuda


def test_extension_stub_is_current(tmp_path):
    pytest.importorskip("nanobind")
    out = tmp_path / "_cagra.pyi"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nanobind.stubgen",
            "-q",
            "-m",
            "cagra._cagra",
            "-o",
            str(out),
        ],
        check=True,
    )

    def body(text):
        lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
        return [re.sub(r"^built_with_cuda: bool.*", "built_with_cuda: bool", ln) for ln in lines]

    committed = Path(cagra.__file__).with_name("_cagra.pyi").read_text()
    assert body(out.read_text()) == body(committed), (
        "python/cagra/_cagra.pyi is out of date: regenerate it (see its first lines)"
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ELF symbols")
def test_extension_exports_only_its_init():
    # python/src/_cagra.map: what the module links statically (libstdc++ on some toolchains)
    # must not export STB_GNU_UNIQUE symbols that bind process-wide.
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm")
    module = cagra._cagra.__file__
    out = subprocess.run(
        [nm, "-D", "--defined-only", module], check=True, capture_output=True, text=True
    ).stdout
    assert [line.split()[-1] for line in out.splitlines() if line.strip()] == ["PyInit__cagra"]


def test_torch_imports_after_cagra():
    # Crashed (segmentation fault inside torch's import) while the module exported its static
    # libstdc++'s unique symbols; a new process, so that cagra loads first.
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed")
    code = "import cagra, torch, torch.ao.quantization; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_package_is_typed():
    assert Path(cagra.__file__).with_name("py.typed").is_file()


def test_backend_queries():
    assert cagra.search_backend("cpu") == "cpu"
    assert cagra.search_backend() == ("cuda" if cagra.cuda_available() else "cpu")
    if not cagra.cuda_available():
        with pytest.raises(cagra.CagraError, match="CUDA"):
            cagra.search_backend("cuda")
        with pytest.raises(cagra.CagraError):
            cagra.cuda_device_name(0)
    else:
        assert "sm_" in cagra.cuda_device_name(0)
