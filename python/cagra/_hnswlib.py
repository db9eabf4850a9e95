"""An index written in hnswlib's own file format: :meth:`Index.to_hnswlib` (the C++
``cagra::export_hnswlib``; docs/hnswlib.md). Build here (on a GPU), serve with hnswlib::

    index = cagra.build(data, graph_degree=32)
    index.to_hnswlib("data.hnsw")

    import hnswlib
    p = hnswlib.Index(space="l2", dim=data.shape[1])  # "ip" for inner_product, "cosine"
    p.load_index("data.hnsw")
    p.set_ef(64)
    labels, distances = p.knn_query(queries, k=10)

:class:`cagra.Index` takes the method from :class:`HnswlibExport`.
"""

from __future__ import annotations

import os
from typing import Any

from . import _cagra as _ext
from ._io import PathLike
from ._options import _BACKENDS, _choice, _threads, _uint


class HnswlibExport:
    """The part of :class:`cagra.Index` that writes hnswlib files."""

    __slots__ = ()
    _impl: Any

    def to_hnswlib(
        self,
        path: PathLike,
        *,
        M: int = 0,  # noqa: N803 (hnswlib's name)
        seed: int = 0,
        ef_construction: int = 200,
        backend: str = "auto",
        num_threads: int = 0,
    ) -> dict[str, Any]:
        """Writes the index to ``path`` in the format of hnswlib's ``saveIndex``, for
        ``hnswlib.Index(space, dim).load_index(path)`` (Python) or ``HierarchicalNSW::loadIndex``
        (C++). An existing file is replaced only by a complete one.

        Level 0 of the file is this index's graph; the upper levels are drawn and linked as
        hnswlib does. Vectors are written as float32 (uint8, int8 and float16 indexes are
        converted exactly); the labels (row numbers without labels) become hnswlib's labels;
        deleted rows get hnswlib's deleted mark. Load it with ``space="l2"`` for an l2 index,
        ``"ip"`` for inner_product and ``"cosine"`` for cosine (its rows are unit-norm).

        Args:
            path: the file to write.
            M: hnswlib's M: upper-level links per row and ``2 * M`` level-0 slots, which must
                hold the graph degree; 0 = ``ceil(graph_degree / 2)`` (at least 2).
            seed: seed of the level draw (same seed, same file).
            ef_construction: written into the file; hnswlib uses it only to add points later.
            backend: ``"auto"``, ``"cpu"`` or ``"cuda"``: where the upper levels are searched.
            num_threads: CPU threads; 0 = all.

        Returns:
            ``rows``, ``deleted``, ``M``, ``level_rows`` (rows on each level, level 0 first),
            ``entry_point`` (a row of the top level), ``file_bytes`` and ``seconds``.

        Raises CagraError for what hnswlib cannot hold (``2 * M`` below the graph degree, a
        negative label) and for a path that cannot be written.
        """
        return _ext._export_hnswlib(
            self._impl,
            os.fspath(path),
            _uint("M", M),
            _uint("seed", seed, 64),
            _uint("ef_construction", ef_construction),
            _choice("backend", backend, _BACKENDS),
            _threads(num_threads),
        )
