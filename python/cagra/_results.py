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


def _where(a: Any) -> tuple[str, int]:
    """``("cpu", 0)`` or ``("cuda", ordinal)``: where the memory of array ``a`` lives."""
    framework = _framework(a)
    if framework == "torch":
        return ("cuda", int(a.device.index or 0)) if a.is_cuda else ("cpu", 0)
    if framework == "cupy":
        return "cuda", int(a.device.id)
    if hasattr(a, "__dlpack_device__") and not isinstance(a, np.ndarray):
        kind, ordinal = a.__dlpack_device__()
        return ("cuda", int(ordinal)) if int(kind) == 2 else ("cpu", 0)  # 2: kDLCUDA
    return "cpu", 0


def _span(a: Any) -> tuple[int, int]:
    """The address range ``[first, last)`` of array ``a``'s elements (numpy, torch or cupy)."""
    if isinstance(a, np.ndarray):
        if hasattr(np, "byte_bounds"):  # numpy 1.x
            return np.byte_bounds(a)
        return np.lib.array_utils.byte_bounds(a)
    if _framework(a) == "torch":
        first = int(a.data_ptr())
        return first, first + int(a.numel()) * int(a.element_size())
    first = int(a.data.ptr)  # cupy
    return first, first + int(a.nbytes)


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
    where = _where(queries)
    ids_dtype = "int64" if labels else "uint32"
    for a, name, dtype in ((out[0], "neighbors", ids_dtype), (out[1], "distances", "float32")):
        framework = _framework(a)
        if where[0] == "cpu":
            if not isinstance(a, np.ndarray):
                raise TypeError(
                    f"out {name}: host queries take {_HOST_OUT}, not {type(a).__name__}"
                )
        elif framework not in ("torch", "cupy"):
            raise TypeError(
                f"out {name}: CUDA queries take torch tensors or cupy arrays on their GPU, not "
                f"{type(a).__name__}"
            )
        elif _where(a) != where:
            raise _ext.CagraError(
                f"out {name} is on {_where(a)[0]}:{_where(a)[1]}, the queries on CUDA device "
                f"{where[1]}: the results are written on the queries' device"
            )
        got = str(a.dtype).rpartition(".")[2]  # torch.uint32 -> uint32
        if got != dtype or (isinstance(a, np.ndarray) and not a.dtype.isnative):
            what = "labels, int64" if labels else "row ids, uint32"
            detail = f" ({what}: the index has {'labels' if labels else 'no labels'})"
            raise _ext.CagraError(
                f"out {name} has dtype {got}; it must be {dtype}"
                + (detail if name == "neighbors" else "")
            )
        if tuple(int(d) for d in a.shape) != want:
            raise _ext.CagraError(
                f"out {name} has shape {tuple(int(d) for d in a.shape)}; it must be [nq, k] = "
                f"{list(want)}"
            )
        contiguous = a.is_contiguous() if framework == "torch" else a.flags.c_contiguous
        if not contiguous:
            raise _ext.CagraError(f"out {name} must be C-contiguous (row-major, no strides)")
        if isinstance(a, np.ndarray) and not a.flags.writeable:
            raise _ext.CagraError(f"out {name} is read-only")
        if framework == "torch" and a.requires_grad:
            raise _ext.CagraError(f"out {name} requires grad; pass a tensor that does not")
    spans = [_span(out[0]), _span(out[1])]
    if isinstance(queries, np.ndarray) or _framework(queries):
        spans.append(_span(queries))
    for i in range(len(spans)):
        for j in range(i):
            if spans[i][0] < spans[j][1] and spans[j][0] < spans[i][1] and want[0] > 0:
                raise _ext.CagraError(
                    "out's arrays overlap each other or the queries: give the results memory "
                    "of their own"
                )
    return (out[0], out[1]), _address(out[0]), _address(out[1])


def _address(a: Any) -> int:
    """The address of the first element of a numpy array, torch tensor or cupy array."""
    if isinstance(a, np.ndarray):
        return int(a.ctypes.data)
    return _device_pointer(a)


def _cuda_results(queries: Any, k: int, stream: int) -> tuple[Any, Any] | None:
    """``[nq, k]`` uint32 ids and float32 distances for a stream-ordered search of CUDA
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
        uint32 = getattr(module, "uint32", None)
        if uint32 is None or not getattr(queries, "is_cuda", False):
            return None
        dev = queries.device
        cuda = module.cuda

        def make() -> tuple[Any, Any]:
            return (
                module.empty((nq, k), dtype=uint32, device=dev),
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
                return module.empty((nq, k), dtype=np.uint32), module.empty(
                    (nq, k), dtype=np.float32
                )
    return None


def _device_pointer(a: Any) -> int:
    """The device address of a torch tensor or cupy array."""
    ptr = getattr(a, "data_ptr", None)
    return int(ptr()) if ptr is not None else int(a.data.ptr)
