"""Arrays handed in from Python: vectors (checked here where numpy cannot hand them over
DLPack, then by the extension), integer id matrices, host copies of torch and cupy arrays, and
the library's dtype names."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._options import _DTYPES

#: Anything with ``__dlpack__`` (numpy, cupy, torch, jax ...) or a numpy array.
ArrayLike = Any


def _vectors(x: ArrayLike, name: str) -> ArrayLike:
    # Dtype, shape, layout and device are checked by the extension, for every producer alike;
    # numpy arrays whose dtype is not a vector dtype are checked here first, because numpy cannot
    # hand object, string, structured or big-endian arrays over DLPack and the extension would
    # only see "incompatible function arguments" and its signature.
    if isinstance(x, np.ndarray):
        if x.dtype.newbyteorder("=") not in _DTYPES.values():
            raise TypeError(
                f"{name} has dtype {x.dtype.name}; cagra takes float32, float16, uint8 or int8 "
                f"vectors (convert with x.astype(numpy.float32))"
            )
        if not x.dtype.isnative:
            raise ValueError(
                f"{name} is big-endian (dtype {x.dtype.str!r}); cagra takes native (little-endian) "
                f"arrays: convert with x.astype(x.dtype.newbyteorder('='))"
            )
        return x
    if hasattr(x, "__dlpack__"):
        return x
    raise TypeError(
        f"{name} must be a 2-D array (numpy, or cupy/torch through DLPack), not "
        f"{type(x).__name__}; e.g. numpy.asarray({name}, dtype=numpy.float32)"
    )


def _dtype_name(dt: Any) -> str:
    """The library's name ("f32", "f16", "u8", "i8") of a vector dtype: anything numpy.dtype
    takes, or a torch dtype."""
    try:
        d = np.dtype(dt)
    except TypeError:
        d = None
        name = str(dt).rpartition(".")[2]  # torch.float32 -> float32
        if name in ("float32", "float16", "uint8", "int8"):
            d = np.dtype(name)
    for name, v in _DTYPES.items():
        if d == v:
            return name
    raise TypeError(
        f"dtype {dt} is not a vector dtype; cagra takes float32, float16, uint8 or int8"
    )


def _framework(x: ArrayLike) -> str:
    # CUDA search results are handed back as the queries' own array type where it is one of these.
    top = type(x).__module__.partition(".")[0]
    return top if top in ("torch", "cupy") else ""


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
