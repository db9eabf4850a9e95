"""Arrays in CUDA memory, handed in through DLPack. Without the CUDA backend they are refused
with a clear message. With it, search reads CUDA queries in place on the GPU and returns CUDA
results (torch tensors for torch, cupy arrays for cupy) with exactly the ids and distances of
the same numpy queries, and no host copy (the extension counts the copies it makes); build
still copies a CUDA dataset to the host (it runs on the CPU). The refusals are tested everywhere
with a fake producer (host memory labelled as CUDA memory); real torch and cupy CUDA arrays only
where those packages and a GPU are present (scripts/dev/device-check.sh runs them). The
``stream`` argument: CUDA queries written on a side stream are read only after that stream's
work, whether the stream is torch's current one or passed explicitly."""

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
    with pytest.raises(ValueError, match="CUDA array, but this cagra build has no CUDA backend"):
        index.search(FakeCudaArray(queries), 5)
    with pytest.raises(ValueError, match="cupy.asnumpy"):
        cagra.build(FakeCudaArray(data))


def test_cuda_arrays_without_gpu(setup):
    if not cagra.built_with_cuda or cagra.cuda_available():
        pytest.skip("needs a CUDA build on a machine without GPU")
    data, queries, index = setup
    with pytest.raises(cagra.CagraError, match="no CUDA device is visible"):
        index.search(FakeCudaArray(queries), 5)
    with pytest.raises(cagra.CagraError, match="copying dataset from the GPU failed"):
        cagra.build(FakeCudaArray(data))


def test_sharded_cuda_arrays_without_gpu(setup):
    if not cagra.built_with_cuda or cagra.cuda_available():
        pytest.skip("needs a CUDA build on a machine without GPU")
    data, queries, _ = setup
    sharded = cagra.build(data, graph_degree=16, intermediate_graph_degree=32, shards=2)
    with pytest.raises(cagra.CagraError, match="no CUDA device is visible"):
        sharded.search(FakeCudaArray(queries), 5)
    with pytest.raises(cagra.CagraError, match="backend='cpu'"):
        sharded.search(FakeCudaArray(queries), 5, backend="cpu")


def _needs_gpu(module):
    mod = pytest.importorskip(module)
    if not cagra.cuda_available():
        pytest.skip("no GPU visible to cagra")
    return mod


def test_host_memory_labelled_cuda_is_refused(setup):
    if not cagra.built_with_cuda or not cagra.cuda_available():
        pytest.skip("needs the CUDA backend and a GPU")
    _, queries, index = setup
    with pytest.raises(cagra.CagraError, match="not CUDA device memory"):
        index.search(FakeCudaArray(queries), 5)


def _torch_to_numpy(t):
    t = t.cpu()
    try:
        return t.numpy()
    except Exception:  # a torch without numpy export of uint32
        return np.from_dlpack(t)


@pytest.mark.parametrize("algo", ["single_cta", "multi_cta", "auto"])
def test_torch_cuda_queries_stay_on_gpu(setup, algo):
    torch = _needs_gpu("torch")
    data, queries, index = setup
    expected = index.search(queries, 10, backend="cuda", algo=algo)
    q = torch.from_numpy(queries).cuda()
    copies = cagra._ext._host_copies()
    ids, dist = index.search(q, 10, algo=algo)
    assert cagra._ext._host_copies() == copies, "search copied CUDA queries to the host"
    for t, dtype in ((ids, torch.uint32), (dist, torch.float32)):
        assert isinstance(t, torch.Tensor)
        assert t.is_cuda and t.device == q.device
        assert t.dtype == dtype and tuple(t.shape) == (50, 10)
    got_ids, got_dist = _torch_to_numpy(ids), _torch_to_numpy(dist)
    if algo == "single_cta":
        np.testing.assert_array_equal(got_ids, expected[0])
        np.testing.assert_array_equal(got_dist, expected[1])
    else:  # the multi-CTA kernel's CTAs race for nodes: compare the answers' quality
        truth = cagra.brute_force(data, queries, 10)[0]
        assert cagra.recall(got_ids, truth) >= cagra.recall(expected[0], truth) - 0.02
    # float16 queries: converted on the GPU, the answers of the same numpy float16 queries.
    half = index.search(q.half(), 10, algo="single_cta")
    ref = index.search(queries.astype(np.float16), 10, backend="cuda", algo="single_cta")
    np.testing.assert_array_equal(_torch_to_numpy(half[0]), ref[0])
    np.testing.assert_array_equal(_torch_to_numpy(half[1]), ref[1])
    assert cagra._ext._host_copies() == copies


def test_sharded_torch_cuda_queries_stay_on_gpu(setup):
    torch = _needs_gpu("torch")
    data, queries, _ = setup
    sharded = cagra.build(data, graph_degree=16, intermediate_graph_degree=32, shards=3)
    expected = sharded.search(queries, 10, backend="cuda", algo="single_cta")
    q = torch.from_numpy(queries).cuda()
    copies = cagra._ext._host_copies()
    ids, dist = sharded.search(q, 10, algo="single_cta")
    assert cagra._ext._host_copies() == copies, "search copied CUDA queries to the host"
    assert isinstance(ids, torch.Tensor) and ids.is_cuda and ids.device == q.device
    np.testing.assert_array_equal(_torch_to_numpy(ids), expected[0])
    np.testing.assert_array_equal(_torch_to_numpy(dist), expected[1])


def test_torch_cuda_errors(setup):
    torch = _needs_gpu("torch")
    data, queries, index = setup
    q = torch.from_numpy(queries).cuda()
    with pytest.raises(cagra.CagraError, match="device memory needs the CUDA backend"):
        index.search(q, 10, backend="cpu")
    with pytest.raises(ValueError, match="not C-contiguous"):
        index.search(torch.from_numpy(data).cuda()[:, ::2], 10)
    with pytest.raises(TypeError, match="float64"):
        index.search(q.double(), 10)
    # A uint8 index takes uint8 CUDA queries; float ones would need the host's exactness check.
    u8 = cagra.build(
        (data * 10).clip(0, 255).astype(np.uint8), graph_degree=16, intermediate_graph_degree=32
    )
    with pytest.raises(cagra.CagraError, match="a u8 index takes u8 device queries"):
        u8.search(q, 10)
    q8 = (data[:50] * 10).clip(0, 255).astype(np.uint8)
    got = u8.search(torch.from_numpy(q8).cuda(), 10, algo="single_cta")
    expected = u8.search(q8, 10, backend="cuda", algo="single_cta")
    np.testing.assert_array_equal(_torch_to_numpy(got[0]), expected[0])


def test_build_from_torch_cuda_copies_to_host(setup):
    torch = _needs_gpu("torch")
    data, _, index = setup
    copies = cagra._ext._host_copies()
    built = cagra.build(
        torch.from_numpy(data).cuda(), graph_degree=16, intermediate_graph_degree=32
    )
    assert cagra._ext._host_copies() == copies + 1
    np.testing.assert_array_equal(built.graph, index.graph)


@pytest.mark.parametrize("metric", ["l2", "cosine"])
def test_cupy_cuda_queries_stay_on_gpu(setup, metric):
    cupy = _needs_gpu("cupy")
    data, queries, index = setup
    if metric != "l2":
        index = cagra.build(data, metric=metric, graph_degree=16, intermediate_graph_degree=32)
    expected = index.search(queries, 10, backend="cuda", algo="single_cta")
    q = cupy.asarray(queries)
    copies = cagra._ext._host_copies()
    ids, dist = index.search(q, 10, algo="single_cta")
    assert cagra._ext._host_copies() == copies, "search copied CUDA queries to the host"
    for a, dtype in ((ids, np.uint32), (dist, np.float32)):
        assert isinstance(a, cupy.ndarray)
        assert isinstance(a.data.ptr, int) and a.data.ptr != 0
        assert a.device.id == q.device.id
        assert a.dtype == dtype and a.shape == (50, 10)
    np.testing.assert_array_equal(cupy.asnumpy(ids), expected[0])
    np.testing.assert_array_equal(cupy.asnumpy(dist), expected[1])


def test_other_cuda_producers_get_dlpack_results(setup):
    # Neither torch nor cupy: the results are nanobind arrays that any DLPack consumer takes.
    cupy = _needs_gpu("cupy")
    _, queries, index = setup

    class Wrapped:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kwargs):
            return self.a.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    ids, dist = index.search(Wrapped(cupy.asarray(queries)), 10, algo="single_cta")
    assert ids.__dlpack_device__()[0] == KDL_CUDA
    expected = index.search(queries, 10, backend="cuda", algo="single_cta")
    np.testing.assert_array_equal(cupy.asnumpy(cupy.from_dlpack(ids)), expected[0])
    np.testing.assert_array_equal(cupy.asnumpy(cupy.from_dlpack(dist)), expected[1])


def test_torch_host_tensors(setup):
    torch = pytest.importorskip("torch")
    _, queries, index = setup
    got = index.search(torch.from_numpy(queries), 10)
    np.testing.assert_array_equal(got[0], index.search(queries, 10)[0])


def test_stream_argument_is_checked(setup):
    # Host queries do not use the stream, but a value that is no stream is an error everywhere.
    _, queries, index = setup
    expected = index.search(queries, 5)
    got = index.search(queries, 5, stream=0)
    np.testing.assert_array_equal(got[0], expected[0])
    with pytest.raises(TypeError, match="stream must be None, an int"):
        index.search(queries, 5, stream="default")
    with pytest.raises(ValueError, match=r"stream must be a cudaStream_t handle in \[0, 2\*\*64\)"):
        index.search(queries, 5, stream=-1)


def _queries_behind_a_busy_stream(torch, queries, side):
    """CUDA queries that `side` writes only after ~0.1 s of GPU sleep (zeros until then)."""
    if not hasattr(torch.cuda, "_sleep"):
        pytest.skip("this torch has no torch.cuda._sleep")
    pinned = torch.from_numpy(queries).pin_memory()
    with torch.cuda.stream(side):
        q = torch.zeros(queries.shape, dtype=torch.float32, device="cuda")
        torch.cuda._sleep(200_000_000)  # GPU cycles: ~0.1 s
        q.copy_(pinned, non_blocking=True)
    assert not side.query(), "the queries' copy should still be queued"
    return q


@pytest.mark.parametrize("algo", ["single_cta", "multi_cta"])
def test_torch_queries_written_on_a_side_stream(setup, algo):
    # Inside `with torch.cuda.stream(side)` the search waits for `side` (torch's current stream);
    # outside it, stream=side does the same. Reading the zeros instead would give other answers.
    torch = _needs_gpu("torch")
    data, queries, index = setup
    expected = index.search(queries, 10, backend="cuda", algo=algo)
    truth = cagra.brute_force(data, queries, 10)[0]
    side = torch.cuda.Stream()
    q = _queries_behind_a_busy_stream(torch, queries, side)
    with torch.cuda.stream(side):
        inside = index.search(q, 10, algo=algo)
    q = _queries_behind_a_busy_stream(torch, queries, side)
    outside = index.search(q, 10, algo=algo, stream=side)
    for ids, dist in (inside, outside):
        got_ids, got_dist = _torch_to_numpy(ids), _torch_to_numpy(dist)
        if algo == "single_cta":
            np.testing.assert_array_equal(got_ids, expected[0])
            np.testing.assert_array_equal(got_dist, expected[1])
        else:  # the multi-CTA kernel's CTAs race for nodes: compare the answers' quality
            assert cagra.recall(got_ids, truth) >= cagra.recall(expected[0], truth) - 0.02
    side.synchronize()


def test_stream_ordered_search_returns_before_its_stream_runs(setup):
    # stream_ordered=True: the call returns while the queries' copy is still queued on `side`;
    # the results, read on `side`, are those of a waiting search. A NaN row gets INVALID_ID and
    # NaN distances instead of an error.
    torch = _needs_gpu("torch")
    _, queries, index = setup
    expected = index.search(queries, 10, backend="cuda", algo="single_cta")
    side = torch.cuda.Stream()
    q = _queries_behind_a_busy_stream(torch, queries, side)
    ids, dist = index.search(q, 10, algo="single_cta", stream=side, stream_ordered=True)
    assert not side.query(), "a stream-ordered search waited for its stream"
    with torch.cuda.stream(side):  # read in stream order
        np.testing.assert_array_equal(_torch_to_numpy(ids), expected[0])
        np.testing.assert_array_equal(_torch_to_numpy(dist), expected[1])
    bad = queries.copy()
    bad[2, 3] = np.nan
    ids, dist = index.search(
        torch.from_numpy(bad).cuda(), 10, algo="single_cta", stream_ordered=True
    )
    ids, dist = _torch_to_numpy(ids), _torch_to_numpy(dist)
    assert (ids[2] == cagra.INVALID_ID).all() and np.isnan(dist[2]).all()
    np.testing.assert_array_equal(np.delete(ids, 2, axis=0), np.delete(expected[0], 2, axis=0))
    with pytest.raises(cagra.CagraError, match="row 2 contains NaN or Inf"):
        index.search(torch.from_numpy(bad).cuda(), 10)


def test_torch_results_come_from_torchs_allocator(setup):
    # Stream-ordered calls: no cudaMalloc / cudaFree a call (cudaFree would wait for the GPU):
    # the results are torch's own memory, on the queries' device.
    torch = _needs_gpu("torch")
    if not hasattr(torch, "uint32"):
        pytest.skip("this torch has no uint32 tensors (the extension allocates the results)")
    _, queries, index = setup
    q = torch.from_numpy(queries).cuda()
    before = torch.cuda.memory_allocated(q.device)
    ids, dist = index.search(q, 10, algo="single_cta", stream_ordered=True)
    assert ids.dtype == torch.uint32 and dist.dtype == torch.float32
    assert ids.device == q.device and tuple(ids.shape) == (len(queries), 10)
    assert torch.cuda.memory_allocated(q.device) - before >= ids.numel() * 8
    expected = index.search(queries, 10, backend="cuda", algo="single_cta")
    np.testing.assert_array_equal(_torch_to_numpy(ids), expected[0])
    np.testing.assert_array_equal(_torch_to_numpy(dist), expected[1])


def test_labels_of_torch_queries_are_mapped_on_the_gpu(setup):
    # An index with labels: int64 labels on the queries' device, also stream-ordered (the
    # library maps the rows on the GPU; the results from torch's allocator).
    torch = _needs_gpu("torch")
    data, queries, _ = setup
    labels = np.arange(len(data), dtype=np.int64) * 3 + 1
    index = cagra.build(data, graph_degree=16, intermediate_graph_degree=32, labels=labels)
    expected = index.search(queries, 10, backend="cuda", algo="single_cta")
    q = torch.from_numpy(queries).cuda()
    for ordered in (False, True):
        got, dist = index.search(q, 10, algo="single_cta", stream_ordered=ordered)
        assert got.dtype == torch.int64 and got.device == q.device
        torch.cuda.current_stream().synchronize()
        np.testing.assert_array_equal(got.cpu().numpy(), expected[0])
        np.testing.assert_array_equal(dist.cpu().numpy(), expected[1])
    index.extend(data[:5] + 0.5, labels=np.arange(5, dtype=np.int64) + 10**12)
    got, _ = index.search(q, 10, algo="single_cta")  # the device copy of the labels made again
    np.testing.assert_array_equal(
        got.cpu().numpy(), index.search(queries, 10, backend="cuda", algo="single_cta")[0]
    )


def test_torch_results_into_callers_tensors(setup):
    torch = _needs_gpu("torch")
    if not hasattr(torch, "uint32"):
        pytest.skip("this torch has no uint32 tensors")
    data, queries, index = setup
    q = torch.from_numpy(queries).cuda()
    expected = index.search(queries, 10, backend="cuda", algo="single_cta")

    def empty(dtype):
        return torch.full((len(queries), 10), 3, dtype=dtype, device=q.device)

    for ordered in (False, True):
        out = (empty(torch.uint32), empty(torch.float32))
        got = index.search(q, 10, algo="single_cta", out=out, stream_ordered=ordered)
        assert got[0] is out[0] and got[1] is out[1]
        torch.cuda.current_stream().synchronize()
        np.testing.assert_array_equal(_torch_to_numpy(out[0]), expected[0])
        np.testing.assert_array_equal(_torch_to_numpy(out[1]), expected[1])

    labels = np.arange(len(data), dtype=np.int64) * 5
    labelled = cagra.build(data, graph_degree=16, intermediate_graph_degree=32, labels=labels)
    out = (empty(torch.int64), empty(torch.float32))
    labelled.search(q, 10, algo="single_cta", out=out, stream_ordered=True)
    want = labelled.search(queries, 10, backend="cuda", algo="single_cta")
    np.testing.assert_array_equal(out[0].cpu().numpy(), want[0])

    ids, dist = empty(torch.uint32), empty(torch.float32)
    host = (np.zeros((len(queries), 10), np.uint32), np.zeros((len(queries), 10), np.float32))
    with pytest.raises(TypeError, match="torch tensors or cupy arrays"):
        index.search(q, 10, out=host)
    with pytest.raises(cagra.CagraError, match="on cpu"):
        index.search(q, 10, out=(ids.cpu(), dist))
    with pytest.raises(cagra.CagraError, match="dtype int64"):
        index.search(q, 10, out=(empty(torch.int64), dist))
    with pytest.raises(cagra.CagraError, match="overlap"):
        index.search(q, 10, out=(ids, q.reshape(-1)[: ids.numel()].reshape(ids.shape)))
    with pytest.raises(TypeError, match="numpy"):
        index.search(queries, 10, out=(ids, dist))  # host queries take numpy arrays
    np.testing.assert_array_equal(q.cpu().numpy(), queries)  # nothing written


def test_cupy_results_into_callers_arrays(setup):
    cupy = _needs_gpu("cupy")
    _, queries, index = setup
    q = cupy.asarray(queries)
    out = (
        cupy.zeros((len(queries), 10), cupy.uint32),
        cupy.zeros((len(queries), 10), cupy.float32),
    )
    got = index.search(q, 10, algo="single_cta", out=out)
    assert got[0] is out[0]
    expected = index.search(queries, 10, backend="cuda", algo="single_cta")
    np.testing.assert_array_equal(cupy.asnumpy(out[0]), expected[0])
    np.testing.assert_array_equal(cupy.asnumpy(out[1]), expected[1])


def test_sharded_torch_queries_written_on_a_side_stream(setup):
    torch = _needs_gpu("torch")
    data, queries, _ = setup
    sharded = cagra.build(data, graph_degree=16, intermediate_graph_degree=32, shards=3)
    expected = sharded.search(queries, 10, backend="cuda", algo="single_cta")
    side = torch.cuda.Stream()
    q = _queries_behind_a_busy_stream(torch, queries, side)
    ids, dist = sharded.search(q, 10, algo="single_cta", stream=side)
    np.testing.assert_array_equal(_torch_to_numpy(ids), expected[0])
    np.testing.assert_array_equal(_torch_to_numpy(dist), expected[1])
