"""Files and recall: vector files and neighbor (ground-truth) files read into numpy arrays by
the library's readers (the formats of the ``cagra`` command-line tool), and recall@k."""

from __future__ import annotations

import os
from typing import Union

import numpy as np
import numpy.typing as npt

from . import _cagra as _ext
from ._arrays import ArrayLike, _ids
from ._options import _uint

PathLike = Union[str, "os.PathLike[str]"]


def read_matrix(path: PathLike) -> np.ndarray:
    """Reads a vector file (.fbin/.u8bin/.i8bin, .fvecs/.bvecs/.ivecs, .npy, IDX, HDF5 with a
    ``file.hdf5:dataset`` suffix) into a 2-D array of the file's dtype."""
    return _ext.read_matrix(os.fspath(path))


def read_neighbors(
    path: PathLike,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32] | None]:
    """Reads neighbors or ground truth (.ibin with optional distances, .ivecs, .npy, HDF5):
    ``(ids, distances)``, distances ``None`` when the file has none."""
    return _ext.read_neighbors(os.fspath(path))


def recall(found: ArrayLike, truth: ArrayLike, k: int | None = None) -> float:
    """Recall@k: the mean over rows of ``|found[:, :k] & truth[:, :k]| / k``
    (k defaults to ``found.shape[1]``)."""
    f = _ids(found, "found")
    t = _ids(truth, "truth")
    return _ext.recall(f, t, _uint("k", f.shape[1] if k is None else k))
