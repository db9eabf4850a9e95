"""Result arrays of a search: the caller's own (``out=``), checked before the extension writes
into them, and the ones a stream-ordered search of CUDA queries takes from their framework's
allocator."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import _cagra as _ext
from ._arrays import _framework

_HOST_OUT = "numpy arrays (for a torch CPU tensor t, pass t.numpy())"
_DTYPE = {name: np.dtype(name) for name in ("uint32", "int64", "float32")}


def _where(a: Any) -> tuple[str, int]:
    """``("cpu", 0)`` or ``("cuda", ordinal)``: where the memory of array ``a`` lives."""
    if isinstance(a, np.ndarray):
        return "cpu", 0
    framework = _framework(a)
    if framework == "torch":
        return ("cuda", int(a.device.index or 0)) if a.is_cuda else ("cpu", 0)
    if framework == "cupy":
        return "cuda", int(a.device.id)
    if hasattr(a, "__dlpack_device__"):
        kind, ordinal = a.__dlpack_device__()
        return ("cuda", int(ordinal)) if int(kind) == 2 else ("cpu", 0)  # 2: kDLCUDA
    return "cpu", 0


def _span(a: Any, first: int) -> tuple[int, int]:
    """The address range ``[first, last)`` of the elements of a C-contiguous torch tensor or
    cupy array whose first element is at ``first``."""
    if _framework(a) == "torch":
        return first, first + int(a.numel()) * int(a.element_size())
    return first, first + int(a.nbytes)  # cupy


def _address(a: Any) -> int:
    """The address of the first element of a numpy array, torch tensor or cupy array."""
    if isinstance(a, np.ndarray):
        return int(a.__array_interface__["data"][0])
    return _device_pointer(a)


def _check_host(a: Any, name: str, dtype: str, want: tuple[int, int]) -> None:
    """One of the caller's result arrays for host queries (see :func:`_given_results`)."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"out {name}: host queries take {_HOST_OUT}, not {type(a).__name__}")
    if a.dtype != _DTYPE[dtype]:  # a big-endian array differs too
        got = a.dtype.name if a.dtype.isnative else a.dtype.str
        raise _ext.CagraError(f"out {name} has dtype {got}; it must be {dtype}")
    if a.shape != want:
        raise _ext.CagraError(f"out {name} has shape {a.shape}; it must be [nq, k] = {list(want)}")
    flags = a.flags
    if not flags.c_contiguous:
        raise _ext.CagraError(f"out {name} must be C-contiguous (row-major, no strides)")
    if not flags.writeable:
        raise _ext.CagraError(f"out {name} is read-only")


def _check_device(a: Any, name: str, dtype: str, want: tuple[int, int], where: Any) -> None:
    """One of the caller's result arrays for CUDA queries on device ``where``."""
    framework = _framework(a)
    if framework not in ("torch", "cupy"):
        raise TypeError(
            f"out {name}: CUDA queries take torch tensors or cupy arrays on their GPU, not "
            f"{type(a).__name__}"
        )
    if _where(a) != where:
        raise _ext.CagraError(
            f"out {name} is on {_where(a)[0]}:{_where(a)[1]}, the queries on CUDA device "
            f"{where[1]}: the results are written on the queries' device"
        )
    got = str(a.dtype).rpartition(".")[2]  # torch.uint32 -> uint32
    if got != dtype:
        raise _ext.CagraError(f"out {name} has dtype {got}; it must be {dtype}")
    shape = tuple(int(d) for d in a.shape)
    if shape != want:
        raise _ext.CagraError(f"out {name} has shape {shape}; it must be [nq, k] = {list(want)}")
    contiguous = a.is_contiguous() if framework == "torch" else a.flags.c_contiguous
    if not contiguous:
        raise _ext.CagraError(f"out {name} must be C-contiguous (row-major, no strides)")
    if framework == "torch" and a.requires_grad:
        raise _ext.CagraError(f"out {name} requires grad; pass a tensor that does not")


def _given_results(
    out: Any, queries: Any, k: int, labels: bool
) -> tuple[tuple[Any, Any], int, int]:
    """The caller's ``out=(neighbors, distances)`` for a search of ``queries`` (as the extension
    takes them) with ``k`` neighbors, checked, and the two arrays' addresses for the extension:
    ``[nq, k]`` C-contiguous writeable arrays of uint32 (int64 on an index with ``labels``) and
    float32, numpy arrays for host queries, torch tensors or cupy arrays on the queries' GPU for
    CUDA queries, overlapping neither each other nor the queries."""
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        raise TypeError(
            f"out must be a pair (neighbors, distances) of arrays, not {type(out).__name__}"
        )
    shape = getattr(queries, "shape", ())
    if len(shape) != 2:
        raise _ext.CagraError(f"queries must be a 2-D array [nq, dim], got shape {tuple(shape)}")
    want = (int(shape[0]), int(k))
    ids, distances = out
    ids_dtype = "int64" if labels else "uint32"
    where = _where(queries)
    for a, name, dtype in ((ids, "neighbors", ids_dtype), (distances, "distances", "float32")):
        if where[0] == "cpu":
            _check_host(a, name, dtype, want)
        else:
            _check_device(a, name, dtype, want, where)
    addresses = _address(ids), _address(distances)
    if want[0] > 0 and _overlap(ids, distances, queries, addresses):
        raise _ext.CagraError(
            "out's arrays overlap each other or the queries: give the results memory of their own"
        )
    return (ids, distances), addresses[0], addresses[1]


def _overlap(ids: Any, distances: Any, queries: Any, addresses: tuple[int, int]) -> bool:
    """Whether any two of the result arrays and the queries share memory (their address ranges
    meet: numpy's bounds check for host arrays)."""
    if isinstance(ids, np.ndarray):
        return (
            np.may_share_memory(ids, distances)
            or np.may_share_memory(ids, queries)
            or np.may_share_memory(distances, queries)
        )
    spans = [_span(ids, addresses[0]), _span(distances, addresses[1])]
    if _framework(queries):
        spans.append(_span(queries, _address(queries)))
    return any(
        spans[i][0] < spans[j][1] and spans[j][0] < spans[i][1]
        for i in range(len(spans))
        for j in range(i)
    )


def _cuda_results(queries: Any, k: int, stream: int, labels: bool) -> tuple[Any, Any] | None:
    """``[nq, k]`` uint32 ids (int64 with ``labels``) and float32 distances for a stream-ordered
    search of CUDA
    ``queries``, made by the queries' own framework on their device (torch's or cupy's caching
    allocator: no ``cudaMalloc`` a call, and a free that does not wait for the GPU), on
    ``stream`` (the stream the results are ordered on, so that the allocator reuses the memory
    only after the work queued there); ``None`` for other arrays, host arrays, or a torch
    without uint32 tensors (the extension then allocates them)."""
    framework = _framework(queries)
    module = sys.modules.get(framework) if framework else None
    shape = getattr(queries, "shape", ())
    if module is None or len(shape) != 2:
        return None
    nq = int(shape[0])
    if framework == "torch":
        ids_dtype = module.int64 if labels else getattr(module, "uint32", None)
        if ids_dtype is None or not getattr(queries, "is_cuda", False):
            return None
        dev = queries.device
        cuda = module.cuda

        def make() -> tuple[Any, Any]:
            return (
                module.empty((nq, k), dtype=ids_dtype, device=dev),
                module.empty((nq, k), dtype=module.float32, device=dev),
            )

        if cuda.current_stream(dev).cuda_stream == stream:
            return make()  # (entering a stream context costs microseconds a call)
        on = cuda.default_stream(dev) if stream == 0 else cuda.ExternalStream(stream, device=dev)
        with cuda.stream(on):
            return make()
    if framework == "cupy" and getattr(queries, "device", None) is not None:
        cuda = module.cuda
        with queries.device:
            on = cuda.ExternalStream(stream) if stream else cuda.Stream.null
            with on:
                ids = module.empty((nq, k), dtype=np.int64 if labels else np.uint32)
                return ids, module.empty((nq, k), dtype=np.float32)
    return None


def _device_pointer(a: Any) -> int:
    """The device address of a torch tensor or cupy array."""
    ptr = getattr(a, "data_ptr", None)
    return int(ptr()) if ptr is not None else int(a.data.ptr)
