"""Search filters: a boolean mask or a list of allowed row ids, turned into the bitset words of
cagra/filter.hpp that the extension hands to the library."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _cagra as _ext
from ._arrays import _host_array

CagraError = _ext.CagraError


def _filter_words(filter: Any, rows: int, nq: int | None) -> tuple[np.ndarray | None, bool]:
    """The bitset words of a search filter (cagra/filter.hpp) and whether they are per query.

    ``filter`` is a boolean mask ``[rows]`` (shared) or ``[nq, rows]`` (one row per query), or
    a 1-D sequence of allowed integer row ids (shared); ``None`` filters nothing. The words are
    uint32, LSB first (row i is bit i % 32 of word i // 32), C-contiguous: ``[ceil(rows / 32)]``
    or ``[nq, ceil(rows / 32)]``. ``nq`` (the batch) is checked against a 2-D mask when known.
    Every malformed filter raises CagraError.
    """
    if filter is None:
        return None, False
    listed = not isinstance(filter, np.ndarray) and not hasattr(filter, "__dlpack__")
    try:
        a = _host_array(filter)
    except (ValueError, TypeError) as exc:  # e.g. a ragged list
        raise CagraError(
            f"filter must be a boolean mask or a list of row ids; {type(filter).__name__} "
            f"could not be read as an array ({exc})"
        ) from None
    if listed and a.ndim == 1 and a.size == 0:
        a = np.zeros(0, np.int64)  # [] holds no ids (numpy reads it as float64)
    if a.dtype == np.bool_:
        if a.ndim not in (1, 2):
            raise CagraError(
                f"a boolean filter mask must be 1-D [{rows}] (one bitset for the batch) or 2-D "
                f"[nq, {rows}] (one per query), got shape {a.shape}"
            )
        if a.shape[-1] != rows:
            raise CagraError(
                f"the filter mask has {a.shape[-1]} entries per bitset (shape {a.shape}) but the "
                f"index has {rows} rows: a mask has one entry per index row"
            )
        if a.ndim == 2 and nq is not None and a.shape[0] != nq:
            raise CagraError(
                f"the 2-D filter mask has {a.shape[0]} rows (shape {a.shape}) but the batch has "
                f"{nq} queries: a per-query mask is [nq, {rows}], one row per query (a mask "
                f"shared by every query is 1-D [{rows}])"
            )
        packed = np.packbits(a, axis=-1, bitorder="little")
        pad = -packed.shape[-1] % 4
        if pad:
            packed = np.pad(packed, [(0, 0)] * (a.ndim - 1) + [(0, pad)])
        words = np.ascontiguousarray(packed).view("<u4").astype(np.uint32, copy=False)
        return np.ascontiguousarray(words), a.ndim == 2
    if a.dtype.kind in "iu":
        if a.ndim != 1:
            raise CagraError(
                f"filter ids must be a 1-D list of allowed row ids (shared by the batch), got "
                f"shape {a.shape}; a per-query filter is a boolean mask [nq, {rows}]"
            )
        bad = np.flatnonzero((a < 0) | (a >= rows))
        if bad.size:
            pos = int(bad[0])
            raise CagraError(
                f"filter id {int(a[pos])} at position {pos} is outside the index's rows "
                f"[0, {rows}) ({bad.size} id{'s' if bad.size > 1 else ''} out of range)"
            )
        mask = np.zeros(rows, np.bool_)
        mask[a] = True
        return _filter_words(mask, rows, None)
    raise CagraError(
        f"filter has dtype {a.dtype}: pass a boolean mask (shape [{rows}], or [nq, {rows}] per "
        f"query) or integer row ids (a 0/1 mask: mask.astype(bool))"
    )
