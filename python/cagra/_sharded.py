"""Several GPUs (docs/multi_gpu.md): :class:`ShardedIndex`, an index whose rows are split into
shards, each a complete CAGRA graph over a contiguous range of global row ids (the C++
``cagra::sharded_index``). Made by :func:`cagra.build` with ``shards`` or a ``devices`` list of
several devices, or by :func:`cagra.load` of a sharded manifest. A replicated search (one index,
a copy per GPU) is :meth:`cagra.Index.search` with ``devices``."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from . import _cagra as _ext
from ._arrays import ArrayLike, _framework, _stream, _vectors
from ._filter import _filter_words
from ._io import PathLike
from ._options import (
    _BACKENDS,
    _DEFAULT_FILTER_ALGO,
    _DEFAULT_SEARCH_ALGO,
    _DEFAULT_STORED_ROWS,
    _DEFAULT_TRAVERSAL,
    _DTYPES,
    _METRIC_NAMES,
    _SP,
    _choice,
    _devices,
    _search_params,
    _threads,
    _uint,
)
from ._results import _given_results


class ShardedIndex:
    """A sharded CAGRA index: shard ``s`` holds the global rows
    ``shard_offsets[s] .. shard_offsets[s + 1] - 1`` and, on the CUDA backend, is searched on
    ``devices[s % len(devices)]``. A search runs every shard with the same queries and merges
    their top-k lists by (distance, id); the ids it returns are global row numbers.

    Made by :func:`cagra.build` (``shards=`` or several ``devices=``) or :func:`cagra.load`,
    never directly. It does not change once made (no labels, extend or remove), so several
    threads may search it at once. Saved as a file set: the manifest ``PATH`` and
    ``PATH.shard-S-of-N`` (docs/index_format.md).
    """

    __slots__ = ("_impl",)

    def __init__(self, impl: Any) -> None:
        if not isinstance(impl, _ext.ShardedIndex):
            raise TypeError(
                "create a ShardedIndex with cagra.build(..., shards=N) or cagra.load(path)"
            )
        self._impl = impl

    @property
    def size(self) -> int:
        """Rows of all shards together."""
        return self._impl.size

    def __len__(self) -> int:
        return self._impl.size

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._impl.dim

    @property
    def graph_degree(self) -> int:
        """Out-degree of every node of every shard's graph."""
        return self._impl.graph_degree

    @property
    def metric(self) -> str:
        """Distance measure: ``"l2"``, ``"ip"`` or ``"cosine"`` (as :attr:`Index.metric`)."""
        return _METRIC_NAMES[self._impl.metric]

    @property
    def dtype(self) -> np.dtype:
        """Element type of the stored vectors."""
        return _DTYPES[self._impl.dtype]

    @property
    def shard_count(self) -> int:
        """Number of shards."""
        return self._impl.shard_count

    @property
    def shard_offsets(self) -> list[int]:
        """``shard_count + 1`` global row ids: shard ``s`` holds rows ``[shard_offsets[s],
        shard_offsets[s + 1])``; the last entry is :attr:`size`."""
        return list(self._impl.shard_offsets)

    def __repr__(self) -> str:
        return (
            f"cagra.ShardedIndex(shard_count={self.shard_count}, size={self.size}, "
            f"dim={self.dim}, graph_degree={self.graph_degree}, metric={self.metric!r}, "
            f"dtype={self.dtype.name})"
        )

    def search(
        self,
        queries: ArrayLike,
        k: int,
        *,
        itopk_size: int = _SP.itopk_size,
        search_width: int = _SP.search_width,
        max_iterations: int = _SP.max_iterations,
        min_iterations: int = _SP.min_iterations,
        team_size: int = _SP.team_size,
        algo: str = _DEFAULT_SEARCH_ALGO,
        hash_bits: int = _SP.hash_bits,
        hash_reset_interval: int = _SP.hash_reset_interval,
        num_random_samplings: int = _SP.num_random_samplings,
        seed: int = _SP.seed,
        traversal: str = _DEFAULT_TRAVERSAL,
        rerank: int = _SP.rerank,
        stored_rows: str = _DEFAULT_STORED_ROWS,
        backend: str = "auto",
        num_threads: int = 0,
        filter: ArrayLike | None = None,
        filter_algo: str = _DEFAULT_FILTER_ALGO,
        devices: list[int] | None = None,
        stream: Any = None,
        out: tuple[Any, Any] | None = None,
    ) -> tuple[Any, Any]:
        """Approximate k nearest neighbors of every row of ``queries`` over all shards.

        The keywords are those of :meth:`cagra.Index.search` (each shard is searched with
        them), less ``persistent``; ``stream`` orders the search of CUDA queries after that
        stream's work, as there; ``out`` gives the result arrays, as there (uint32 ids).
        ``filter`` covers the global rows (``size`` of them).
        ``devices``: the CUDA devices (a list of distinct ordinals; ``None``: device 0); shard
        ``s`` runs on ``devices[s % len(devices)]``. The CPU backend ignores it.

        Queries in host memory (numpy or anything ``numpy.asarray`` takes) give numpy results.
        A CUDA array (cupy, torch, ``__cuda_array_interface__``) on a device that holds a shard
        gives results of its framework on that device: the queries go to the other shards'
        devices and the lists come back there to be merged (NCCL when the shards span several
        GPUs). ``1 <= k <= size``: a shard smaller than ``k`` returns all its rows.

        Returns:
            ``(neighbors, distances)``: uint32 global row ids and float32 distances,
            ``[nq, k]``, nearest first (:data:`INVALID_ID` and +inf where fewer than ``k``
            neighbors were found, e.g. under a filter).
        """
        p = _search_params(
            itopk_size,
            search_width,
            max_iterations,
            min_iterations,
            team_size,
            algo,
            hash_bits,
            hash_reset_interval,
            num_random_samplings,
            seed,
            False,
            filter_algo,
            traversal,
            rerank,
            stored_rows=stored_rows,
        )
        q = _vectors(queries, "queries")
        shape = getattr(q, "shape", ())
        nq = int(shape[0]) if len(shape) == 2 else None
        words, per_query = _filter_words(filter, self.size, nq)
        k = _uint("k", k)
        out_ids = out_distances = 0
        if out is not None:
            out, out_ids, out_distances = _given_results(out, q, k, labels=False)
        got = _ext.search_sharded(
            self._impl,
            q,
            k,
            p,
            _choice("backend", backend, _BACKENDS),
            _threads(num_threads),
            _framework(queries),
            words,
            per_query,
            _devices(devices),
            _stream(stream, queries),
            out_ids=out_ids,
            out_distances=out_distances,
        )
        return out if out is not None else got

    def save(self, path: PathLike) -> None:
        """Writes the file set: ``path.shard-S-of-N`` for every shard (each an ordinary index
        file, loadable alone), then the manifest ``path`` naming their sizes and checksums.
        Each file is replaced only by a complete one."""
        _ext.save_sharded(self._impl, os.fspath(path))


def load_sharded(path: PathLike) -> ShardedIndex:
    """Reads a sharded index saved by :meth:`ShardedIndex.save` (or ``cagra build --shards``):
    the manifest ``path`` and its shard files, each checked against the size and checksum the
    manifest names (a set mixed from two saves raises CagraError). :func:`cagra.load` calls
    this for a manifest."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no index file at '{path}'")
    return ShardedIndex(_ext.load_sharded(path))
