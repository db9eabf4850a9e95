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
    if isinstance(filter, Filter):
        return filter._words_for(rows, nq), filter.per_query
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


def _filter_hint(filter: Any) -> tuple[int, int]:
    """A search filter's known count and stamp (a shared :class:`Filter`), else (-1, 0)."""
    if isinstance(filter, Filter):
        return filter._count, filter._stamp
    return -1, 0


class Filter:
    """A search filter packed once, for many searches: ``cagra.Filter(mask_or_ids, rows)``.

    ``filter=`` packs a boolean mask or a list of ids into the library's bitset on every call:
    33 us for a 1M-row mask, 0.73 ms from 500K ids (numpy 2.4, the 2-core development machine,
    bench/filter_packing.py), against ~45 us for a filtered GPU batch-1 search of 1M rows.
    A ``Filter`` holds the packed words, so a search given it passes them on as they are. It
    takes what ``filter=`` takes (a bool mask ``[rows]`` or ``[nq, rows]``, or allowed row ids)
    and keeps its own copy: changing the mask afterwards does not change the filter. A search
    checks that ``rows`` is its index's size (and a per-query filter's ``nq`` its batch).
    A shared ``Filter`` also hands over its count and a name for its bits, so that a GPU search
    that keeps the last bitset on the device neither counts nor compares it on each call.
    """

    __slots__ = ("_count", "_stamp", "_words", "per_query", "rows")

    def __init__(self, filter: Any, rows: int) -> None:
        if isinstance(filter, Filter):
            raise CagraError("filter is already a cagra.Filter: pass it to search as it is")
        if filter is None:
            raise CagraError("a Filter needs a boolean mask or a list of row ids, got None")
        rows = int(rows)
        if rows < 1:
            raise CagraError(f"rows must be >= 1 (the index's size), got {rows}")
        words, per_query = _filter_words(filter, rows, None)
        words.flags.writeable = False
        self._words = words
        #: Whether it holds one bitset per query (a 2-D mask).
        self.per_query: bool = per_query
        #: The index size it was made for.
        self.rows: int = rows
        # A shared bitset's count and stamp (cagra/filter.hpp row_filter::allowed_rows, stamp):
        # the words are read-only, so one stamp names them for the Filter's life.
        self._count = -1 if per_query else self.count()
        self._stamp = 0 if per_query else _ext.new_filter_stamp()

    @property
    def queries(self) -> int | None:
        """The number of per-query bitsets, or None for one bitset shared by the batch."""
        return int(self._words.shape[0]) if self.per_query else None

    def count(self) -> int:
        """Allowed rows (summed over the bitsets of a per-query filter)."""
        return int(np.unpackbits(self._words.view(np.uint8)).sum())

    def _words_for(self, rows: int, nq: int | None) -> np.ndarray:
        if rows != self.rows:
            raise CagraError(
                f"the Filter was made for {self.rows} rows but the index has {rows}: a filter "
                f"has one bit per index row"
            )
        if self.per_query and nq is not None and self._words.shape[0] != nq:
            raise CagraError(
                f"the per-query Filter holds {self._words.shape[0]} bitsets but the batch has "
                f"{nq} queries"
            )
        return self._words

    def __repr__(self) -> str:
        shape = f"{self.queries} bitsets" if self.per_query else "shared"
        return f"cagra.Filter(rows={self.rows}, {shape})"
