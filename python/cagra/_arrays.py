"""Arrays handed in from Python: vectors (float64 and array-likes converted, one copy; checked
here where numpy cannot hand them over DLPack, then by the extension), integer id matrices,
host copies of torch and cupy arrays, and the library's dtype names."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from . import _cagra as _ext
from ._options import _DTYPES

#: Anything with ``__dlpack__`` (numpy, cupy, torch, jax ...), a numpy array, or anything
#: ``numpy.asarray`` reads (lists and tuples of rows, objects with ``__array__``).
ArrayLike = Any

_FLOAT64 = np.dtype(np.float64)
_ACCEPTED = (
    "cagra takes float32, float16, uint8 or int8 vectors and converts float64 to float32 "
    "(other dtypes are not converted: x.astype(numpy.float32), or x.astype(numpy.uint8) for "
    "byte vectors; a list of ints is int64)"
)


def _vectors(x: ArrayLike, name: str) -> ArrayLike:
    """``x`` as the extension takes vectors: float32, float16, uint8 and int8 arrays as they
    are (host or CUDA; used in place), float64 host arrays converted to C-contiguous float32
    (one copy), lists, tuples and ``__array__`` objects through ``numpy.asarray`` first.

    Dtype, shape, layout and device are checked by the extension, for every producer alike;
    numpy arrays whose dtype is not a vector dtype are checked here first, because numpy cannot
    hand object, string, structured or big-endian arrays over DLPack and the extension would
    only see "incompatible function arguments" and its signature.
    """
    if not isinstance(x, np.ndarray) and not hasattr(x, "__dlpack__"):
        if isinstance(x, (str, bytes)) or not (
            isinstance(x, (list, tuple)) or hasattr(x, "__array__")
        ):
            raise TypeError(
                f"{name} must be a 2-D array (numpy, a list of rows, or cupy/torch through "
                f"DLPack), not {type(x).__name__}"
            )
        try:
            x = np.asarray(x)
        except (ValueError, TypeError) as exc:  # e.g. rows of different lengths
            raise ValueError(
                f"{name} could not be read as a 2-D array [rows, dim] ({exc})"
            ) from None
    if isinstance(x, np.ndarray):
        if x.dtype.newbyteorder("=") == _FLOAT64:
            return _float32_copy(x, name)
        if x.dtype.newbyteorder("=") not in _DTYPES.values():
            raise TypeError(f"{name} has dtype {x.dtype.name}; {_ACCEPTED}")
        if not x.dtype.isnative:
            raise ValueError(
                f"{name} is big-endian (dtype {x.dtype.str!r}); cagra takes native (little-endian) "
                f"arrays: convert with x.astype(x.dtype.newbyteorder('='))"
            )
        return x
    if str(getattr(x, "dtype", "")).rpartition(".")[2] == "float64":  # torch.float64, cupy, jax
        device_type = x.__dlpack_device__()[0] if hasattr(x, "__dlpack_device__") else 1
        if device_type not in (1, 3):  # kDLCPU, kDLCUDAHost: host memory
            raise TypeError(
                f"{name} is a float64 array on a device (DLPack device type {device_type}); "
                f"cagra converts float64 to float32 on the host only: convert it where it is "
                f"(x.float() for torch, x.astype(cupy.float32) for cupy)"
            )
        if _framework(x) == "torch":
            return _float32_copy(x.detach().numpy(), name)
        return _float32_copy(np.from_dlpack(x), name)
    return x


def _float32_copy(x: np.ndarray, name: str) -> np.ndarray:
    """A float64 array as a new C-contiguous float32 array (one copy, rounded to nearest).
    A finite value beyond float32's range raises CagraError; NaN and infinity pass through, for
    the library to refuse with its own message."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ascontiguousarray(x, dtype=np.float32)
    if out.size and not np.isfinite(out).all():
        overflow = np.isinf(out) & np.isfinite(x)
        if overflow.any():
            where = np.unravel_index(int(np.argmax(overflow)), x.shape)
            at = ", ".join(str(int(i)) for i in where)
            raise _ext.CagraError(
                f"{name} is float64, converted to float32, but its value {float(x[where]):g} at "
                f"[{at}] does not fit in float32 (largest {float(np.finfo(np.float32).max):g})"
            )
    return out


def _dtype_name(dt: Any) -> str:
    """The library's name ("f32", "f16", "u8", "i8") of the vectors :func:`_vectors` makes of
    an array of dtype ``dt`` (anything numpy.dtype takes, or a torch dtype): float64 gives
    "f32", as it is converted."""
    try:
        d = np.dtype(dt)
    except TypeError:
        d = None
        name = str(dt).rpartition(".")[2]  # torch.float32 -> float32
        if name in ("float64", "float32", "float16", "uint8", "int8"):
            d = np.dtype(name)
    if d is not None and d.newbyteorder("=") == _FLOAT64:
        d = np.dtype(np.float32)
    for name, v in _DTYPES.items():
        if d == v:
            return name
    raise TypeError(
        f"dtype {dt} is not a vector dtype; cagra takes float32, float16, uint8 or int8 "
        f"(and converts float64 to float32)"
    )


def _framework(x: ArrayLike) -> str:
    # CUDA search results are handed back as the queries' own array type where it is one of these.
    top = type(x).__module__.partition(".")[0]
    return top if top in ("torch", "cupy") else ""


def _stream(stream: Any, queries: Any) -> int:
    """The CUDA stream (a cudaStream_t as an int, 0 = the legacy default stream) that a search of
    CUDA ``queries`` waits for: ``stream`` given as an int handle, a ``torch.cuda.Stream`` (its
    ``cuda_stream``) or a ``cupy.cuda.Stream`` (its ``ptr``); ``None``: the stream current in the
    queries' framework (``torch.cuda.current_stream`` of their device, cupy's
    ``get_current_stream``), else 0."""
    if stream is None:
        framework = _framework(queries)
        module = sys.modules.get(framework) if framework else None
        if framework == "torch" and module is not None and getattr(queries, "is_cuda", False):
            return int(module.cuda.current_stream(queries.device).cuda_stream)
        if framework == "cupy" and module is not None:
            with queries.device:  # cupy's current stream is per device: the queries' one
                return int(module.cuda.get_current_stream().ptr)
        return 0
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        if hasattr(stream, attr):
            stream = getattr(stream, attr)
            break
    if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)):
        raise TypeError(
            "stream must be None, an int (a cudaStream_t), a torch.cuda.Stream or a "
            f"cupy.cuda.Stream, got {type(stream).__name__}"
        )
    if not 0 <= int(stream) < 2**64:
        raise ValueError(f"stream must be a cudaStream_t handle in [0, 2**64), got {int(stream)}")
    return int(stream)


def _ids(x: ArrayLike, name: str) -> np.ndarray:
    """A host [rows, cols] uint32 matrix; other integer arrays are converted if they fit."""
    a = np.asarray(x)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {a.shape}")
    if a.dtype != np.uint32:
        if a.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integer ids, got dtype {a.dtype}")
        if a.size and (a.min() < 0 or a.max() > 0xFFFFFFFF):
            raise ValueError(f"{name} holds ids outside [0, 2**32 - 1]")
        a = a.astype(np.uint32)
    return np.ascontiguousarray(a)


def _host_array(x: Any) -> np.ndarray:
    """A numpy array of ``x``: numpy arrays as they are, torch tensors and cupy arrays (host or
    CUDA) copied to the host, anything else through ``numpy.asarray``."""
    if isinstance(x, np.ndarray):
        return x
    framework = _framework(x)
    if framework == "torch":
        return x.detach().cpu().numpy()
    if framework == "cupy":
        return x.get()
    return np.asarray(x)
