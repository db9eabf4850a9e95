"""The :class:`Index` of the package: its properties, :meth:`Index.search` and
:meth:`Index.explain` (the living-index methods come from :class:`cagra._living.LivingIndex`),
:meth:`Index.save`, and :func:`load`."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _cagra as _ext
from ._arrays import ArrayLike, _framework, _stream, _vectors
from ._filter import _filter_hint, _filter_words
from ._hnswlib import HnswlibExport
from ._io import PathLike
from ._living import LivingIndex
from ._options import (
    _BACKENDS,
    _DEFAULT_FILTER_ALGO,
    _DEFAULT_SEARCH_ALGO,
    _DEFAULT_STORED_ROWS,
    _DEFAULT_TRAVERSAL,
    _DTYPES,
    _METRIC_NAMES,
    _METRICS,
    _SP,
    _choice,
    _devices,
    _flag,
    _search_params,
    _threads,
    _uint,
)
from ._results import _cuda_results, _device_pointer, _given_results
from ._sharded import ShardedIndex, load_sharded


class Index(LivingIndex, HnswlibExport):
    """A CAGRA index: the stored vectors and a fixed out-degree proximity graph.

    Made by :func:`build` or :func:`load`, never directly. One index may be searched from
    several threads at once. It can grow and shrink in place (:meth:`extend`, :meth:`remove`,
    :meth:`compact`) and carry labels that searches return instead of row numbers
    (:attr:`labels`): see :class:`cagra._living.LivingIndex`.
    """

    __slots__ = ("_impl",)

    def __init__(self, impl: Any) -> None:
        if not isinstance(impl, _ext.Index):
            raise TypeError("create an Index with cagra.build(...) or cagra.load(path)")
        self._impl = impl

    @property
    def size(self) -> int:
        """Number of vectors (graph nodes), deleted rows included (:attr:`live_size`
        excludes them)."""
        return self._impl.size

    def __len__(self) -> int:
        return self._impl.size

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._impl.dim

    @property
    def graph_degree(self) -> int:
        """Out-degree of every node of the graph."""
        return self._impl.graph_degree

    @property
    def metric(self) -> str:
        """Distance measure: ``"l2"`` (squared L2), ``"ip"`` (-<q, x>) or ``"cosine"``
        (1 - cos)."""
        return _METRIC_NAMES[self._impl.metric]

    @property
    def dtype(self) -> np.dtype:
        """Element type of the stored vectors (cosine indexes store unit-norm float32)."""
        return _DTYPES[self._impl.dtype]

    @property
    def graph(self) -> npt.NDArray[np.uint32]:
        """The graph, ``[size, graph_degree]`` uint32 ids: a read-only view, no copy."""
        return self._impl.graph

    @property
    def vectors(self) -> np.ndarray:
        """The stored vectors, ``[size, dim]`` of :attr:`dtype`: a read-only view, no copy."""
        return self._impl.vectors

    def __repr__(self) -> str:
        return (
            f"cagra.Index(size={self.size}, dim={self.dim}, graph_degree="
            f"{self.graph_degree}, metric={self.metric!r}, dtype={self.dtype.name})"
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
        persistent: bool = _SP.persistent,
        persistent_lifetime_us: int = _SP.persistent_lifetime_us,
        traversal: str = _DEFAULT_TRAVERSAL,
        rerank: int = _SP.rerank,
        stored_rows: str = _DEFAULT_STORED_ROWS,
        backend: str = "auto",
        num_threads: int = 0,
        filter: ArrayLike | None = None,
        filter_algo: str = _DEFAULT_FILTER_ALGO,
        devices: list[int] | None = None,
        stream: Any = None,
        stream_ordered: bool = False,
        out: tuple[Any, Any] | None = None,
    ) -> tuple[Any, Any]:
        """Approximate k nearest neighbors of every row of ``queries`` (one batch).

        Args:
            queries: ``[nq, dim]`` vectors; float32/float16 for float indexes, the index's
                own integer type (or exactly representable floats) for uint8/int8 indexes.
                float64 input is converted to float32, one copy; a list of rows (or any
                ``__array__`` object) goes through ``numpy.asarray`` first (the rules of
                :func:`build`).
            k: neighbors per query, ``1 <= k <= size``.
            itopk_size: length M of the internal top-M list (hnswlib's ef): the main
                recall/speed knob. Raised to ``k`` when smaller, as hnswlib raises ef
                (never an error; :meth:`explain` shows the value used).
            search_width: parents expanded per iteration (p).
            max_iterations: iteration cap; 0 = automatic.
            min_iterations: iterations run even after convergence.
            team_size: GPU threads per distance (0 = automatic, 2..32); CPU ignores it.
            algo: GPU kernel, ``"auto"``, ``"single_cta"`` or ``"multi_cta"``; on the CPU
                ``"multi_cta"`` walks each query on several threads (docs/params.md, "The
                CPU's latency path").
            hash_bits: visited-set size as log2(slots); 0 = automatic, else 8..24.
            hash_reset_interval: clear the visited set every this many iterations
                (forgettable hash); 0 = never.
            num_random_samplings: random samples per initial slot; 0 = automatic.
            seed: seed of the random initial nodes. Same seed, same results.
            persistent: GPU, one host query per call through the multi-CTA kernel (no
                filter, or one shared filter: another filter than the last relaunches it):
                keep the kernel resident between calls, polling for the next query (the
                lowest batch-1 latency: 12-13 us on SIFT-wall-1M, H200, docs/cuda.md).
                Its CTAs hold their SMs until the index is searched another way or 1 ms
                passes without a query, and a device synchronize elsewhere in the process
                (``torch.cuda.synchronize``) waits for it meanwhile. ``False``: a launch per
                call, for a process that shares the GPU with other work and synchronizes
                often. Ignored elsewhere.
            persistent_lifetime_us: how long the resident kernel waits for the next query
                before it leaves, microseconds (200 .. 10,000,000; default 1,000). A stream
                of queries further apart than this relaunches it for each query, which on an
                idle GPU costs several times a resident call (docs/params.md); a longer
                lifetime keeps it resident, holding its SMs and delaying a device
                synchronize elsewhere that much longer.
            traversal: which copy of the rows the graph walk reads: ``"exact"`` (default;
                the stored rows) or ``"int8"``: an int8 copy of a float32/float16 index's rows
                (a quarter of float32's bytes per visited row), made on the first such search
                and kept with the index until it changes; the walk's best ``rerank``
                candidates are then re-ranked by their exact distances, so the distances
                returned are exact (CUDA queries too: all on the GPU). uint8/int8 indexes
                raise CagraError; the exact filtered path ignores it. Any other value raises
                ValueError.
            rerank: ``traversal="int8"``: candidates re-ranked per query, in
                ``[k, itopk_size]``; 0 = automatic, ``min(itopk_size, max(32, 4 k))``
                (:meth:`explain` shows it as ``rerank=``).
            stored_rows: ``traversal="int8"`` on the GPU: where the stored rows that the
                re-ranking reads live. ``"device"``: copied to the GPU; ``"host"``: left in
                host memory, pinned in place and mapped, so the GPU holds only the int8 codes
                and the graph and reads each re-ranked candidate's row across PCIe (for an
                index whose rows do not fit the GPU); ``"auto"`` (default): the copy the GPU
                already has, else ``"device"`` when the rows fit its free memory, else
                ``"host"``. The results are the same. ``"host"`` needs ``traversal="int8"``
                and rows of a multiple of 16 bytes (CagraError otherwise).
            backend: ``"auto"`` (CUDA when built and a GPU is visible, for what the GPU
                kernels take; else the CPU), ``"cpu"`` or ``"cuda"``.
            num_threads: CPU threads; 0 = all (or ``OMP_NUM_THREADS``). At most 4 per
                hardware thread are used (more are clamped); a count the system cannot start
                raises CagraError (the default count shrinks to what it can start).
            filter: the rows the search may return (filtered search; ``None``: every row).
                One of: a numpy bool mask ``[size]`` shared by every query, or ``[nq, size]``
                with one row per query (True = allowed); or a 1-D array or list of allowed
                integer row ids (any integer dtype; duplicates are fine), shared by the batch.
                A list of bools is a mask, a list of ints is ids; a 0/1 integer array is ids
                (convert a 0/1 mask with ``mask.astype(bool)``). Torch and cupy arrays are
                copied to the host. A disallowed row is never returned, but the search still
                walks through it (the graph stays connected whatever the filter). Where fewer
                than ``k`` rows are allowed, the allowed ones come first and the remaining
                slots hold :data:`INVALID_ID` with distance +inf. A mask of the wrong shape, a
                2-D mask whose first dimension is not ``nq``, an id outside ``[0, size)``, or
                any other dtype or dimension raises CagraError. The filter is over row numbers
                (``size`` of them), also on an index with labels.
            filter_algo: how a filtered search finds the allowed rows: ``"auto"`` (default),
                ``"graph"`` (walk the graph with a top-M list grown as the filter's
                selectivity falls, ``itopk_size`` being its length at 100%) or ``"exact"``
                (distances to every allowed row: exact results, cost in proportion to the
                allowed rows). ``"auto"`` picks the path automatically: exact below a
                crossover in selectivity (when the allowed rows are fewer than the distances
                the graph walk would compute, about ``itopk x graph_degree``, or at most
                ``k``), else the graph; :meth:`explain` with the same ``filter`` shows the
                choice (``filter_path=``). Ignored without a filter; any other value raises
                CagraError.
            devices: the CUDA devices to search on (a list of distinct ordinals; ``None``:
                device 0). With two or more the search is replicated (docs/multi_gpu.md): each
                device keeps its own copy of the index (made on first use); a batch of at
                least 512 queries per device is split into one contiguous slice per device,
                searched in parallel, and a smaller batch goes whole to the next device in
                turn. The results are those of a one-device search. Host queries only; the
                CPU backend ignores the list.
            stream: CUDA queries only: the CUDA stream whose work queued before the call
                the search waits for before it reads the queries and writes the results. An
                int (a ``cudaStream_t``), a ``torch.cuda.Stream`` or a ``cupy.cuda.Stream``;
                ``None`` (the default): the stream current in the queries' framework
                (``torch.cuda.current_stream()``, cupy's ``get_current_stream()``, e.g.
                inside ``with torch.cuda.stream(s):``), else the legacy default stream. It
                must be a stream of the queries' device. Host queries do not use it.
            stream_ordered: CUDA queries only: return as soon as the search is queued, without
                waiting for the GPU, like a torch or cupy operation. The results are then
                complete for the work queued on ``stream`` after the call (read them there, or
                synchronize it), and the queries must stay unchanged until then. A query row
                with NaN or Inf (cosine: all zeros) cannot raise then: its neighbors are
                :data:`INVALID_ID` and its distances NaN. ``False`` (the default): the call
                returns with the results complete, and such a row raises CagraError. Host
                queries always wait. (An index with labels maps them on the GPU either way.)
            out: ``(neighbors, distances)``, arrays of the caller's to write the results
                into (and return) instead of new ones, e.g. buffers reused call after call:
                ``[nq, k]``, C-contiguous, writeable, of the dtypes returned (uint32 ids, or
                int64 labels on an index with labels; float32 distances); numpy arrays for
                host queries, torch tensors or cupy arrays on the queries' GPU for CUDA
                queries (with ``stream_ordered``, written on ``stream``). Neither may overlap
                the other or the queries. A wrong shape, dtype, device or layout raises
                CagraError (a non-array TypeError) before anything is written; after a
                failed search their contents are unspecified.

        Returns:
            ``(neighbors, distances)``: uint32 ids and float32 distances, ``[nq, k]``,
            nearest first (id :data:`INVALID_ID`, ``0xFFFFFFFF``, and distance +inf where
            fewer than k neighbors were found). On an index with labels (:attr:`labels`) the
            neighbors are int64 labels instead, -1 where fewer than k were found. Deleted rows
            (:meth:`remove`) are never returned.
            Host queries give numpy arrays. CUDA queries (cupy, torch ``.cuda()``, any
            DLPack producer on a GPU) are searched in place on the GPU, with no host copy,
            and the results stay on that GPU: torch tensors for torch queries, cupy arrays
            for cupy queries, else arrays with ``__dlpack__`` (``torch.from_dlpack``,
            ``cupy.from_dlpack``). They are ready when the call returns, on any stream
            (``stream_ordered``: on ``stream``); the queries are read after ``stream``'s
            earlier work. CUDA queries need the CUDA backend
            (``backend="cpu"`` raises CagraError) and, for a uint8/int8 index, the index's
            own dtype.
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
            persistent,
            filter_algo,
            traversal,
            rerank,
            persistent_lifetime_us,
            stored_rows,
        )
        q = _vectors(queries, "queries")
        shape = getattr(q, "shape", ())
        nq = int(shape[0]) if len(shape) == 2 else None  # else the extension says what is wrong
        words, per_query = _filter_words(filter, self.size, nq)
        k = _uint("k", k)
        target = _choice("backend", backend, _BACKENDS)
        threads = _threads(num_threads)
        on = _stream(stream, queries)
        ordered = _flag("stream_ordered", stream_ordered)
        if out is not None:
            out, out_ids, out_distances = _given_results(out, q, k, self._impl.has_labels)
        elif ordered and k <= self.size:
            # Stream-ordered CUDA queries: results from their framework's allocator, whose free
            # does not wait for the GPU as the extension's cudaFree does (a waiting call keeps
            # the extension's allocation: fewer Python steps a call). Arguments are checked
            # first.
            out = _cuda_results(queries, k, on, self._impl.has_labels)
            if out is not None:
                out_ids, out_distances = _device_pointer(out[0]), _device_pointer(out[1])
        if out is None:
            out_ids = out_distances = 0
        got = _ext.search(
            self._impl,
            q,
            k,
            p,
            target,
            threads,
            _framework(queries),
            words,
            per_query,
            _devices(devices),
            on,
            *_filter_hint(filter),
            stream_ordered=ordered,
            out_ids=out_ids,
            out_distances=out_distances,
        )
        return out if out is not None else got

    def explain(
        self,
        k: int,
        batch: int = 1,
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
        persistent: bool = _SP.persistent,
        persistent_lifetime_us: int = _SP.persistent_lifetime_us,
        traversal: str = _DEFAULT_TRAVERSAL,
        rerank: int = _SP.rerank,
        stored_rows: str = _DEFAULT_STORED_ROWS,
        backend: str = "auto",
        num_threads: int = 0,
        filter: ArrayLike | None = None,
        filter_algo: str = _DEFAULT_FILTER_ALGO,
    ) -> str:
        """What :meth:`search` will do for ``batch`` host queries of ``k`` neighbors with
        these arguments (the same keywords and defaults as :meth:`search`): one line of
        ``name=value`` pairs with every automatic value resolved, e.g.
        ``"backend=cpu k=10 itopk=64 search_width=1 max_iterations=87 ..."``. On the GPU it
        adds the kernel (``algo``), the batch's path (``io``) and the launch shape. With a
        ``filter`` (as :meth:`search` takes it; a per-query mask needs ``batch`` rows) it
        ends with ``filter=shared|per_query filter_path=graph|exact allowed_rows=N`` (the
        fewest rows any query is allowed), and ``itopk`` is the list length the filter's
        selectivity needs. With ``traversal="int8"`` it ends with ``traversal=int8 rerank=N``
        (the candidates re-ranked), then ``stored_rows=device|host`` when ``stored_rows``
        names a place. The line is the C++
        ``cagra::to_string(cagra::plan_search(...))``, the one the CLI's
        ``cagra search --explain`` prints; nothing is searched. Raises
        CagraError for parameters or filters :meth:`search` would refuse.
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
            persistent,
            filter_algo,
            traversal,
            rerank,
            persistent_lifetime_us,
            stored_rows,
        )
        batch = _uint("batch", batch, 63)
        if batch < 1:
            raise ValueError("batch must be >= 1")
        words, per_query = _filter_words(filter, self.size, batch)
        return _ext.explain_search(
            self._impl,
            _uint("k", k),
            batch,
            p,
            _choice("backend", backend, _BACKENDS),
            _threads(num_threads),
            words,
            per_query,
        )

    def save(self, path: PathLike) -> None:
        """Writes the index to ``path`` (the format of ``cagra build``; see
        docs/index_format.md). An existing file is replaced only by a complete one."""
        _ext.save(self._impl, os.fspath(path))


def load(path: PathLike) -> Index | ShardedIndex:
    """Reads an index written by :meth:`Index.save` or ``cagra build``; every header field
    and the checksum are verified. The manifest of a sharded index (:meth:`ShardedIndex.save`,
    ``cagra build --shards``) gives a :class:`ShardedIndex` (:func:`load_sharded`)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no index file at '{path}'")
    if _ext.is_sharded_file(path):
        return load_sharded(path)
    return Index(_ext.load(path))


def from_hnswlib(
    path: PathLike,
    *,
    metric: str = "l2",
    dim: int = 0,
    graph_degree: int = 0,
    backend: str = "auto",
    num_threads: int = 0,
) -> Index:
    """Reads a float32 hnswlib file (``hnswlib.Index.save_index`` / ``saveIndex``) into an
    :class:`Index` (the C++ ``cagra::import_hnswlib``; docs/hnswlib.md). Level 0 becomes the
    graph, each row's links made exactly ``graph_degree`` long; the upper levels are dropped;
    hnswlib's labels become the index's labels and its deleted marks deleted rows.

    Args:
        path: the hnswlib file.
        metric: the space the file was built in (hnswlib files do not record it): ``"l2"``,
            ``"ip"`` or ``"cosine"`` (vectors are normalized again).
        dim: the expected dimension, checked against the file; 0 = take it from the file.
        graph_degree: degree of the imported graph; 0 = the file's level-0 capacity (2 M), at
            most rows - 1.
        backend, num_threads: where the graph is completed (``"auto"``, ``"cpu"``,
            ``"cuda"``) and the CPU threads (0 = all).

    Raises CagraError for a file that is not an hnswlib index of float32 vectors, a damaged
    one, or a dimension other than ``dim``.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no hnswlib file at '{path}'")
    return Index(
        _ext._import_hnswlib(
            path,
            _choice("metric", metric, _METRICS),
            _uint("dim", dim),
            _uint("graph_degree", graph_degree),
            _choice("backend", backend, _BACKENDS),
            _threads(num_threads),
        )
    )
