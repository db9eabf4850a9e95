"""The one documented input conversion: float64 vectors (numpy arrays, lists of floats, objects
with __array__, CPU DLPack producers) become float32 with one copy, for data and queries alike,
with the same results as float32 input; wider integers stay refused (byte or float vectors is
not guessed), a float64 value beyond float32's range and NaN/inf are clear errors, and CUDA
float64 arrays are refused with a message that says how to convert them on the GPU."""

from __future__ import annotations

import cagra
import numpy as np
import pytest
from conftest import clustered

BUILD = dict(graph_degree=16, intermediate_graph_degree=32, backend="cpu", num_threads=2)


@pytest.fixture(scope="module")
def data():
    return clustered(600, 24, seed=70)


@pytest.fixture(scope="module")
def queries():
    return clustered(30, 24, seed=71)


@pytest.fixture(scope="module")
def index(data):
    return cagra.build(data, **BUILD)


class HasArray:
    """A minimal array-like: only __array__ (as pandas and xarray objects have)."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)


def float64_forms(x32):
    """The float64 inputs that must act as x32: numpy (C, Fortran, big-endian), lists, tuples,
    an __array__ object."""
    x64 = x32.astype(np.float64)
    return {
        "numpy": x64,
        "fortran": np.asfortranarray(x64),
        "big_endian": x64.astype(">f8"),
        "list": x64.tolist(),
        "tuple": tuple(map(tuple, x64.tolist())),
        "array_like": HasArray(x64),
    }


def test_float64_dataset_builds_the_float32_index(data):
    # The CPU build is deterministic: the same graph as from the float32 array.
    expected = cagra.build(data, **BUILD)
    for name, x in float64_forms(data).items():
        index = cagra.build(x, **BUILD)
        assert index.dtype == np.float32, name
        assert np.array_equal(index.vectors, data), name
        assert np.array_equal(index.graph, expected.graph), name


def test_float64_queries_search_as_float32(index, queries):
    ids, dist = index.search(queries, 10)
    for name, q in float64_forms(queries).items():
        got_ids, got_dist = index.search(q, 10)
        assert np.array_equal(got_ids, ids), name
        assert np.array_equal(got_dist, dist), name
    # With a per-query filter mask: the batch size is read from the converted queries.
    mask = np.ones((len(queries), index.size), bool)
    mask[:, ::2] = False
    ids_f, _ = index.search(queries.astype(np.float64).tolist(), 5, filter=mask)
    assert (ids_f % 2 == 1).all()


def test_every_vector_argument_converts(data, queries):
    d64, q64 = data.astype(np.float64), queries.astype(np.float64)
    for got, want in zip(cagra.brute_force(d64, q64, 5), cagra.brute_force(data, queries, 5)):
        assert np.array_equal(got, want)
    got = cagra.build_knn_graph(d64, 8, backend="cpu")
    want = cagra.build_knn_graph(data, 8, backend="cpu")
    assert np.array_equal(got[0], want[0])
    assert cagra.explain_build(d64, **BUILD) == cagra.explain_build(data, **BUILD)
    assert cagra.explain_build(d64.tolist(), **BUILD) == cagra.explain_build(data, **BUILD)
    assert cagra.explain_build(600, "float64", **BUILD) == cagra.explain_build(600, **BUILD)
    grown = cagra.build(data[:500], **BUILD)
    grown.extend(d64[500:].tolist(), backend="cpu")
    assert grown.size == 600 and np.array_equal(grown.vectors[500:], data[500:])


def test_conversion_leaves_the_input_alone(index, queries):
    q64 = queries.astype(np.float64)
    q64.flags.writeable = False  # read-only input is fine: the copy is ours
    before = q64.copy()
    index.search(q64, 5)
    assert np.array_equal(q64, before)


def test_value_beyond_float32_is_an_error(index, queries):
    q64 = queries.astype(np.float64)
    q64[3, 7] = 1e300
    with pytest.raises(cagra.CagraError, match=r"queries is float64.*1e\+300 at \[3, 7\]"):
        index.search(q64, 5)
    with pytest.raises(cagra.CagraError, match="does not fit in float32"):
        cagra.build(q64)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_stay_errors(index, queries, bad):
    q64 = queries.astype(np.float64)
    q64[2, 1] = bad
    with pytest.raises(cagra.CagraError, match="row 2 contains NaN or Inf"):
        index.search(q64, 5)
    data = clustered(200, 24, seed=72).astype(np.float64)
    data[9, 0] = bad
    with pytest.raises(cagra.CagraError, match="row 9 contains NaN or Inf"):
        cagra.build(data, **BUILD)


def test_integers_wider_than_8_bits_stay_refused(index, queries):
    # int64 could be byte vectors (a uint8 index) or float vectors: cagra does not guess.
    for bad in (queries.astype(np.int64), queries.astype(np.int64).tolist()):
        with pytest.raises(TypeError, match=r"dtype int64.*x.astype\(numpy.uint8\)"):
            index.search(bad, 5)
    # Lists of uint8 arrays keep their dtype: a uint8 index takes them.
    u8 = clustered(300, 16, np.uint8, seed=73)
    u8_index = cagra.build(u8, **BUILD)
    assert np.array_equal(u8_index.search(list(u8[:4]), 3)[0], u8_index.search(u8[:4], 3)[0])


def test_malformed_lists(index):
    with pytest.raises(ValueError, match="could not be read as a 2-D array"):
        index.search([[1.0, 2.0], [3.0]], 5)
    with pytest.raises(ValueError, match=r"2-D array \[rows, dim\], got shape \(24,\)"):
        index.search([0.5] * 24, 5)
    with pytest.raises(cagra.CagraError, match="empty"):
        index.search([[]], 5)


class DeviceFloat64:
    """A DLPack producer of float64 on a CUDA device (type 2), as torch/cupy present one: the
    package must refuse it before asking for its data."""

    dtype = "float64"
    shape = (4, 24)

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        raise AssertionError("the data of a CUDA float64 array must not be requested")


def test_cuda_float64_is_refused_with_a_hint(index):
    with pytest.raises(TypeError, match=r"float64 array on a device.*x.float\(\) for torch"):
        index.search(DeviceFloat64(), 5)
    with pytest.raises(TypeError, match="float64 array on a device"):
        cagra.build(DeviceFloat64())


def test_torch_cpu_float64(index, queries):
    torch = pytest.importorskip("torch")
    want = index.search(queries, 5)
    got = index.search(torch.from_numpy(queries.astype(np.float64)).requires_grad_(), 5)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
