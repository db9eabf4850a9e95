"""Arrays in CUDA memory, handed in through DLPack. Without the CUDA backend they are refused
with a clear message; with it they are copied to the host (the backends take host data for
now) and give exactly the results of the same numpy arrays. The refusal and the failed copy are
tested everywhere with a fake producer (host memory labelled as CUDA memory); real torch and
cupy CUDA arrays only where those packages and a GPU are present (the lent GPU machine)."""

from __future__ import annotations

import ctypes

import cagra
import numpy as np
import pytest
from conftest import data_and_queries

KDL_CUDA = 2


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_uint8),
        ("bits", ctypes.c_uint8),
        ("lanes", ctypes.c_uint16),
    ]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", _DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class FakeCudaArray:
    """A float32 host matrix that DLPack describes as living on CUDA device 0."""

    def __init__(self, a):
        self.a = np.ascontiguousarray(a, dtype=np.float32)
        self.shape = (ctypes.c_int64 * 2)(*self.a.shape)
        self.mt = _DLManagedTensor()
        t = self.mt.dl_tensor
        t.data = self.a.ctypes.data
        t.device = _DLDevice(KDL_CUDA, 0)
        t.ndim = 2
        t.dtype = _DLDataType(2, 32, 1)  # float32
        t.shape = self.shape

    def __dlpack_device__(self):
        return (KDL_CUDA, 0)

    def __dlpack__(self, stream=None, max_version=None, **kwargs):
        return _capsule_new(ctypes.addressof(self.mt), b"dltensor", None)


@pytest.fixture(scope="module")
def setup():
    data, queries = data_and_queries(2000, 50, 16, seed=50)
    index = cagra.build(data, graph_degree=16, intermediate_graph_degree=32)
    return data, queries, index


def test_cuda_arrays_refused_without_cuda_backend(setup):
    if cagra.built_with_cuda:
        pytest.skip("this build has the CUDA backend")
    data, queries, index = setup
    with pytest.raises(
        ValueError, match="CUDA array, but this cagra build has no CUDA backend"
    ):
        index.search(FakeCudaArray(queries), 5)
    with pytest.raises(ValueError, match="cupy.asnumpy"):
        cagra.build(FakeCudaArray(data))


def test_cuda_array_copy_fails_cleanly_without_gpu(setup):
    if not cagra.built_with_cuda or cagra.cuda_available():
        pytest.skip("needs a CUDA build on a machine without GPU")
    _, queries, index = setup
    with pytest.raises(cagra.CagraError, match="copying queries from the GPU failed"):
        index.search(FakeCudaArray(queries), 5)


def _needs_gpu(module):
    mod = pytest.importorskip(module)
    if not cagra.cuda_available():
        pytest.skip("no GPU visible to cagra")
    return mod


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_torch_cuda_arrays(setup, backend):
    torch = _needs_gpu("torch")
    data, queries, index = setup
    expected = index.search(queries, 10, backend=backend)
    got = index.search(torch.from_numpy(queries).cuda(), 10, backend=backend)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    built = cagra.build(
        torch.from_numpy(data).cuda(), graph_degree=16, intermediate_graph_degree=32
    )
    np.testing.assert_array_equal(built.graph, index.graph)
    half = torch.from_numpy(queries).cuda().half()
    assert index.search(half, 10, backend=backend)[0].shape == (50, 10)
    with pytest.raises(ValueError, match="not C-contiguous"):
        index.search(torch.from_numpy(data).cuda()[:, ::2], 10)
    with pytest.raises(TypeError, match="float64"):
        index.search(torch.from_numpy(queries).cuda().double(), 10)


def test_cupy_cuda_arrays(setup):
    cupy = _needs_gpu("cupy")
    _, queries, index = setup
    expected = index.search(queries, 10)
    got = index.search(cupy.asarray(queries), 10)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])


def test_torch_host_tensors(setup):
    torch = pytest.importorskip("torch")
    _, queries, index = setup
    got = index.search(torch.from_numpy(queries), 10)
    np.testing.assert_array_equal(got[0], index.search(queries, 10)[0])
