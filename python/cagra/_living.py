"""The living index from Python: labels, :meth:`Index.extend`, :meth:`Index.remove` and
:meth:`Index.compact` (the C++ ``cagra::extend``, ``cagra::remove``, ``cagra::compact`` and the
labels of ``cagra::index``; docs/python.md, "Living index").

:class:`cagra.Index` takes these methods from :class:`LivingIndex`; ``cagra.build`` takes its
``labels`` through :func:`labels_array`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from . import _cagra as _ext
from ._arrays import _host_array, _vectors
from ._options import _BACKENDS, _choice, _threads, _uint

CagraError = _ext.CagraError

# The C++ defaults (cagra::extend_params), read from a default-constructed struct.
_EP = _ext.ExtendParams()


def labels_array(labels: Any, name: str = "labels") -> np.ndarray:
    """``labels`` as a 1-D C-contiguous int64 numpy array: any 1-D integer array (numpy, torch,
    cupy: copied to the host) or sequence of ints. Every other input raises CagraError."""
    listed = not isinstance(labels, np.ndarray) and not hasattr(labels, "__dlpack__")
    try:
        a = _host_array(labels)
    except (ValueError, TypeError) as exc:  # e.g. a ragged list
        raise CagraError(
            f"{name} must be a 1-D array of integer labels; {type(labels).__name__} could not "
            f"be read as an array ({exc})"
        ) from None
    if listed and a.ndim == 1 and a.size == 0:
        a = np.zeros(0, np.int64)  # [] holds no labels (numpy reads it as float64)
    if a.ndim != 1:
        raise CagraError(f"{name} must be a 1-D array (one label per row), got shape {a.shape}")
    if a.dtype.kind not in "iu":
        raise CagraError(
            f"{name} has dtype {a.dtype}; labels are integers (any integer dtype, kept as int64)"
        )
    if a.dtype.kind == "u" and a.size and a.max() > np.iinfo(np.int64).max:
        pos = int(np.argmax(a > np.iinfo(np.int64).max))
        raise CagraError(f"{name}[{pos}] = {int(a[pos])} does not fit in int64")
    return np.ascontiguousarray(a, dtype=np.int64)


class LivingIndex:
    """The part of :class:`cagra.Index` that changes it: new rows, deleted rows, labels.

    An index may carry one int64 **label** per row, all different (like hnswlib's labels or
    faiss's ``IndexIDMap``): ``cagra.build(..., labels=...)`` or :meth:`extend` with labels gives
    them, and :meth:`search` then returns labels instead of row numbers. Without labels, a row's
    label is its row number. **Deleted** rows (:meth:`remove`) are never returned by a search but
    stay in the graph, which the search still walks through, until :meth:`compact` drops them.
    Filters stay over row numbers (``Index.size`` of them, deleted rows included).

    The changes happen in place and are safe with other Python threads: they wait for running
    searches, and searches started meanwhile wait for them. :meth:`extend` and :meth:`compact`
    (and a compacting :meth:`remove`) move the index's memory, so they raise ``BufferError``
    while an array from :attr:`graph` or :attr:`vectors` (views, no copies) is alive. On any
    CagraError the index is left exactly as it was.
    """

    __slots__ = ()
    _impl: Any

    @property
    def labels(self) -> npt.NDArray[np.int64] | None:
        """The rows' labels, ``[size]`` int64 (a copy), or ``None`` when the index has none
        (each row's label is then its row number)."""
        return self._impl.labels

    @property
    def deleted_count(self) -> int:
        """Rows removed by :meth:`remove` and not yet dropped by :meth:`compact`."""
        return self._impl.deleted_count

    @property
    def live_size(self) -> int:
        """Rows a search can return: ``size - deleted_count``."""
        return self._impl.live_size

    def extend(
        self,
        x: Any,
        labels: Any = None,
        *,
        chunk_size: int = _EP.chunk_size,
        candidates: int = _EP.candidates,
        itopk_size: int = _EP.itopk_size,
        backend: str = "auto",
        num_threads: int = 0,
    ) -> None:
        """Inserts the rows of ``x`` as rows ``size .. size + n - 1``.

        Each chunk of new rows finds its neighbour candidates through the index's own search
        and among itself, keeps them by the build's rank-based pruning and gives existing rows
        reverse edges (C++ ``cagra::extend``); recall stays close to that of a build of all rows.

        Args:
            x: ``[n, dim]`` vectors, the array rules of :func:`cagra.build` (numpy, torch,
                cupy, lists; CUDA arrays are copied to the host; float64 input is converted to
                float32, one copy). An index of uint8/int8 vectors takes its own dtype;
                float32/float16 indexes take any vector dtype.
            labels: one int64 label per new row (any 1-D integer array), none already in the
                index (a deleted row's label only after :meth:`compact`). Required when the
                index has labels; on an index without labels, giving them makes the existing
                rows' labels their row numbers.
            chunk_size: rows inserted together; 0 = automatic (2,000 on the CPU, 10,000 on
                the GPU).
            candidates: neighbour candidates per new row before pruning; 0 = automatic
                (``2 x graph_degree``).
            itopk_size: list length of the search that finds them; 0 = automatic
                (``max(64, 2 x candidates)``).
            backend: where the candidate search runs: ``"auto"``, ``"cpu"`` or ``"cuda"``.
            num_threads: CPU threads; 0 = all.

        Raises CagraError (and changes nothing) for a dimension or dtype the index cannot take,
        NaN or infinity, an empty batch, a label count other than ``n``, a label given twice or
        already in the index, or no labels for an index that has them.
        """
        p = _ext.ExtendParams()
        p.chunk_size = _uint("chunk_size", chunk_size)
        p.candidates = _uint("candidates", candidates)
        p.itopk_size = _uint("itopk_size", itopk_size)
        _ext.extend(
            self._impl,
            _vectors(x, "vectors"),
            None if labels is None else labels_array(labels),
            p,
            _choice("backend", backend, _BACKENDS),
            _threads(num_threads),
        )

    def remove(
        self,
        labels: Any,
        *,
        compact_above: float = 0.0,
        backend: str = "auto",
        num_threads: int = 0,
    ) -> int:
        """Deletes the rows with these labels (row numbers when the index has no labels): one
        label or a 1-D integer array of them. Returns the number of rows removed.

        The rows are never returned by a search again, but stay in the graph (searches walk
        through them) until :meth:`compact`. With ``compact_above`` in ``(0, 1]``, compacts
        right away when more than that share of the rows is deleted afterwards.

        Raises CagraError (and removes nothing) for an unknown label, one removed before, one
        listed twice, or ``compact_above`` outside ``[0, 1]``.
        """
        if isinstance(labels, (int, np.integer)) and not isinstance(labels, bool):
            labels = [labels]
        return _ext.remove(
            self._impl,
            labels_array(labels),
            float(compact_above),
            _choice("backend", backend, _BACKENDS),
            _threads(num_threads),
        )

    def compact(self, *, backend: str = "auto", num_threads: int = 0) -> None:
        """Drops the deleted rows: the neighbour lists that pointed at them are repaired
        through the deleted rows' own neighbours, and rows are renumbered in order. Labels stay
        with their rows; an index without labels gets its old row numbers as labels, so the ids
        searches return keep their meaning. Nothing to do when no row is deleted."""
        _ext.compact(self._impl, _choice("backend", backend, _BACKENDS), _threads(num_threads))
