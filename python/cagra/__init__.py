"""CAGRA graph-based approximate nearest-neighbor search, from Python.

The Python face of the cagra C++ library (include/cagra/*.hpp): the same build and search, the
same parameters under the same names and defaults, the same index files as the ``cagra``
command-line tool. This module holds the pythonic layer (keyword defaults, string options,
docstrings); the extension ``cagra._cagra`` only converts arrays and releases the GIL.

Example::

    import numpy as np
    import cagra

    data = np.random.rand(10_000, 128).astype(np.float32)
    index = cagra.build(data, graph_degree=32)    # intermediate_graph_degree: automatic (64)
    neighbors, distances = index.search(data[:5], k=10, itopk_size=64)
    evens, _ = index.search(data[:5], k=10, filter=np.arange(0, 10_000, 2))  # even rows only
    index.save("data.cagra")
    index = cagra.load("data.cagra")
    print(cagra.explain_build(data, graph_degree=32))  # what build chose: "backend=cpu knn=..."
    print(index.explain(k=10, batch=5))                # what search chooses: "... itopk=64 ..."

Parameters left out take the C++ library's defaults (include/cagra/params.hpp); 0 means
"automatic", resolved by the library's one rule set (the same for C++, the CLI and Python):
:func:`explain_build` and :meth:`Index.explain` show the resolved values, as the CLI's
``--explain`` does.

Vectors are 2-D, C-contiguous arrays of float32, float16, uint8 or int8 (numpy, or any
DLPack producer such as torch or cupy). Arrays in host memory are used in place. CUDA arrays
are accepted when the CUDA backend is built: :meth:`Index.search` reads CUDA queries in place
on the GPU and returns CUDA results (no host copy); :func:`build`, :func:`brute_force` and
:func:`optimize` copy CUDA arrays to the host first (the build itself runs on the GPU when
``backend`` is ``"auto"`` or ``"cuda"`` and one is visible). Other dtypes (object arrays
included), big-endian, empty and non-contiguous arrays are refused, never silently converted.

Errors: ``CagraError`` (a subclass of ``ValueError``) carries the C++ library's message for
invalid parameters, data and files (an empty array included); wrong array types (object arrays
included) raise ``TypeError``, wrong shapes, layouts and byte orders ``ValueError``; an
allocation failure ``MemoryError``; anything else ``RuntimeError``.
The GIL is released while the library works, so searches in several Python threads run in
parallel.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Mapping
from typing import Any, Union

import numpy as np
import numpy.typing as npt

try:
    from . import _cagra as _ext
except ImportError as exc:  # e.g. Python started inside python/, next to the sources
    raise ImportError(
        "the cagra extension module is missing: install the package with "
        "`pip install .` from the repository root (and do not import it from python/)"
    ) from exc

__all__ = [
    "INVALID_ID",
    "CagraError",
    "Index",
    "analyze",
    "brute_force",
    "build",
    "build_knn_graph",
    "built_with_cuda",
    "cuda_available",
    "cuda_device_name",
    "explain_build",
    "load",
    "optimize",
    "read_matrix",
    "read_neighbors",
    "recall",
    "search_backend",
]

CagraError = _ext.CagraError
CagraError.__doc__ = (
    "Invalid parameters, data or files (cagra::error): a ValueError carrying the C++ "
    "library's message, which lists every violated constraint."
)
__version__: str = _ext.version()
#: Whether this build has the CUDA backend (CUDA arrays are accepted only then).
built_with_cuda: bool = _ext.built_with_cuda
#: The id of an empty result slot (``0xFFFFFFFF``, C++ ``cagra::kInvalidId``): where a search
#: finds fewer than k neighbors (a filter allowing fewer than k rows), its distance is +inf.
INVALID_ID: int = _ext.INVALID_ID

#: Anything with ``__dlpack__`` (numpy, cupy, torch, jax ...) or a numpy array.
ArrayLike = Any
PathLike = Union[str, "os.PathLike[str]"]

# ---- string options, named as on the command line -----------------------------------------

_METRICS = {
    "l2": _ext.Metric.l2,
    "euclidean": _ext.Metric.l2,
    "ip": _ext.Metric.inner_product,
    "inner_product": _ext.Metric.inner_product,
    "dot": _ext.Metric.inner_product,
    "cosine": _ext.Metric.cosine,
    "angular": _ext.Metric.cosine,
}
_METRIC_NAMES = {
    _ext.Metric.l2: "l2",
    _ext.Metric.inner_product: "ip",
    _ext.Metric.cosine: "cosine",
}
_BACKENDS = {
    "auto": _ext.Backend.auto,
    "cpu": _ext.Backend.cpu,
    "cuda": _ext.Backend.cuda,
    "gpu": _ext.Backend.cuda,
}
_KNN_ALGOS = {
    "auto": _ext.KnnAlgo.auto,
    "nn_descent": _ext.KnnAlgo.nn_descent,
    "brute_force": _ext.KnnAlgo.brute_force,
}
_REORDERS = {"rank": _ext.Reorder.rank, "distance": _ext.Reorder.distance}
_STORAGES = {
    "same": _ext.Storage.same,
    "f32": _ext.Storage.f32,
    "float32": _ext.Storage.f32,
    "f16": _ext.Storage.f16,
    "float16": _ext.Storage.f16,
}
_SEARCH_ALGOS = {
    "auto": _ext.SearchAlgo.auto,
    "single_cta": _ext.SearchAlgo.single_cta,
    "multi_cta": _ext.SearchAlgo.multi_cta,
}
_FILTER_ALGOS = {
    "auto": _ext.FilterAlgo.auto,
    "graph": _ext.FilterAlgo.graph,
    "exact": _ext.FilterAlgo.exact,
}
_DTYPES = {
    "f32": np.dtype(np.float32),
    "f16": np.dtype(np.float16),
    "u8": np.dtype(np.uint8),
    "i8": np.dtype(np.int8),
}


def _name_of(table: Mapping[str, Any], value: Any) -> str:
    return next(name for name, v in table.items() if v == value)


# The C++ defaults (params.hpp), read from default-constructed parameter structs.
_IP = _ext.IndexParams()
_SP = _ext.SearchParams()
_DEFAULT_METRIC = _METRIC_NAMES[_IP.metric]
_DEFAULT_KNN_ALGO = _name_of(_KNN_ALGOS, _IP.knn_algo)
_DEFAULT_REORDER = _name_of(_REORDERS, _IP.reorder)
_DEFAULT_STORAGE = _name_of(_STORAGES, _IP.storage)
_DEFAULT_SEARCH_ALGO = _name_of(_SEARCH_ALGOS, _SP.algo)
_DEFAULT_FILTER_ALGO = _name_of(_FILTER_ALGOS, _SP.filter)

# ---- argument checks -------------------------------------------------------------------------


def _choice(name: str, value: Any, table: Mapping[str, Any]) -> Any:
    try:
        return table[value]
    except (KeyError, TypeError):
        options = ", ".join(repr(k) for k in table)
        raise ValueError(f"{name} must be one of {options}; got {value!r}") from None


def _uint(name: str, value: Any, bits: int = 32) -> int:
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}") from None
    if not 0 <= v < 2**bits:
        raise ValueError(f"{name} must be in [0, {2**bits - 1}], got {v}")
    return v


def _threads(value: Any) -> int:
    # Any int32 count: the library clamps it to 4 x the hardware threads (cagra::resolve_threads).
    return _uint("num_threads", value, 31)


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


def _index_params(
    metric: str,
    graph_degree: int,
    intermediate_graph_degree: int,
    knn_algo: str,
    knn_max_iterations: int,
    knn_termination_threshold: float,
    knn_sample_rate: float,
    reorder: str,
    storage: str,
    seed: int,
) -> Any:
    p = _ext.IndexParams()
    p.metric = _choice("metric", metric, _METRICS)
    p.graph_degree = _uint("graph_degree", graph_degree)
    p.intermediate_graph_degree = _uint("intermediate_graph_degree", intermediate_graph_degree)
    p.knn_algo = _choice("knn_algo", knn_algo, _KNN_ALGOS)
    p.knn_max_iterations = _uint("knn_max_iterations", knn_max_iterations)
    p.knn_termination_threshold = float(knn_termination_threshold)
    p.knn_sample_rate = float(knn_sample_rate)
    p.reorder = _choice("reorder", reorder, _REORDERS)
    p.storage = _choice("storage", storage, _STORAGES)
    p.seed = _uint("seed", seed, 64)
    return p


def _search_params(
    itopk_size: int,
    search_width: int,
    max_iterations: int,
    min_iterations: int,
    team_size: int,
    algo: str,
    hash_bits: int,
    hash_reset_interval: int,
    num_random_samplings: int,
    seed: int,
    persistent: bool,
    filter_algo: str,
) -> Any:
    p = _ext.SearchParams()
    p.itopk_size = _uint("itopk_size", itopk_size)
    p.search_width = _uint("search_width", search_width)
    p.max_iterations = _uint("max_iterations", max_iterations)
    p.min_iterations = _uint("min_iterations", min_iterations)
    p.team_size = _uint("team_size", team_size)
    p.algo = _choice("algo", algo, _SEARCH_ALGOS)
    p.hash_bits = _uint("hash_bits", hash_bits)
    p.hash_reset_interval = _uint("hash_reset_interval", hash_reset_interval)
    p.num_random_samplings = _uint("num_random_samplings", num_random_samplings)
    p.seed = _uint("seed", seed, 64)
    if not isinstance(persistent, bool):
        raise TypeError(f"persistent must be a bool, got {type(persistent).__name__}")
    p.persistent = persistent
    try:
        p.filter = _FILTER_ALGOS[filter_algo]
    except (KeyError, TypeError):
        options = ", ".join(repr(k) for k in _FILTER_ALGOS)
        raise CagraError(f"filter_algo must be one of {options}; got {filter_algo!r}") from None
    return p


# ---- the index -------------------------------------------------------------------------------

# Labels, extend, remove, compact (python/cagra/_living.py) and Index.to_hnswlib (_hnswlib.py):
# imported here, after the argument checks above that they use.
from ._hnswlib import HnswlibExport  # noqa: E402
from ._living import LivingIndex, labels_array  # noqa: E402


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
        backend: str = "auto",
        num_threads: int = 0,
        filter: ArrayLike | None = None,
        filter_algo: str = _DEFAULT_FILTER_ALGO,
    ) -> tuple[Any, Any]:
        """Approximate k nearest neighbors of every row of ``queries`` (one batch).

        Args:
            queries: ``[nq, dim]`` vectors; float32/float16 for float indexes, the index's
                own integer type (or exactly representable floats) for uint8/int8 indexes.
            k: neighbors per query, ``1 <= k <= size``.
            itopk_size: length M of the internal top-M list (hnswlib's ef): the main
                recall/speed knob. Raised to ``k`` when smaller, as hnswlib raises ef
                (never an error; :meth:`explain` shows the value used).
            search_width: parents expanded per iteration (p).
            max_iterations: iteration cap; 0 = automatic.
            min_iterations: iterations run even after convergence.
            team_size: GPU threads per distance (0 = automatic, 2..32); CPU ignores it.
            algo: GPU kernel, ``"auto"``, ``"single_cta"`` or ``"multi_cta"``.
            hash_bits: visited-set size as log2(slots); 0 = automatic, else 8..24.
            hash_reset_interval: clear the visited set every this many iterations
                (forgettable hash); 0 = never.
            num_random_samplings: random samples per initial slot; 0 = automatic.
            seed: seed of the random initial nodes. Same seed, same results.
            persistent: GPU, one host query per call through the multi-CTA kernel: keep
                the kernel resident between calls, polling for the next query (the lowest
                batch-1 latency: 19 us against 23 us on SIFT-1M, docs/cuda.md). Its CTAs
                hold their SMs until the index is searched another way or 1 s passes
                without a query. Ignored elsewhere.
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
            ``cupy.from_dlpack``). They are ready when the call returns; the queries must
            be ready on the default CUDA stream. CUDA queries need the CUDA backend
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
        )
        shape = getattr(queries, "shape", ())
        nq = int(shape[0]) if len(shape) == 2 else None  # else the extension says what is wrong
        words, per_query = _filter_words(filter, self.size, nq)
        return _ext.search(
            self._impl,
            _vectors(queries, "queries"),
            _uint("k", k),
            p,
            _choice("backend", backend, _BACKENDS),
            _threads(num_threads),
            _framework(queries),
            words,
            per_query,
        )

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
        selectivity needs. The line is the C++ ``cagra::to_string(cagra::plan_search(...))``,
        the one the CLI's ``cagra search --explain`` prints; nothing is searched. Raises
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


# ---- module functions ------------------------------------------------------------------------


def build(
    dataset: ArrayLike,
    *,
    metric: str = _DEFAULT_METRIC,
    graph_degree: int = _IP.graph_degree,
    intermediate_graph_degree: int = _IP.intermediate_graph_degree,
    knn_algo: str = _DEFAULT_KNN_ALGO,
    knn_max_iterations: int = _IP.knn_max_iterations,
    knn_termination_threshold: float = _IP.knn_termination_threshold,
    knn_sample_rate: float = _IP.knn_sample_rate,
    reorder: str = _DEFAULT_REORDER,
    storage: str = _DEFAULT_STORAGE,
    seed: int = _IP.seed,
    backend: str = "auto",
    num_threads: int = 0,
    labels: ArrayLike | None = None,
) -> Index:
    """Builds a CAGRA index: a kNN graph, then rank-based pruning and reverse edges.

    Args:
        dataset: ``[n, dim]`` vectors, float32, float16, uint8 or int8, C-contiguous.
        metric: ``"l2"`` (squared Euclidean), ``"ip"``/``"inner_product"`` or ``"cosine"``.
        graph_degree: out-degree d of the final graph.
        intermediate_graph_degree: degree of the kNN graph pruned to d (2d..3d is typical;
            ``>= graph_degree``, ``< n``, ``<= 1024``). 0 = automatic: ``2 * graph_degree``,
            at most ``n - 1`` (:func:`explain_build` shows the value).
        knn_algo: ``"auto"``, ``"nn_descent"`` or ``"brute_force"``. Auto takes brute force
            up to ``max(10000, 4 * intermediate_graph_degree**2)`` rows.
        knn_max_iterations: NN-descent iteration cap.
        knn_termination_threshold: NN-descent stops when fewer than this share of the list
            entries changed in an iteration.
        knn_sample_rate: NN-descent's sample rate (rho), in (0, 1].
        reorder: edge ordering when pruning: ``"rank"`` (CAGRA) or ``"distance"``.
        storage: stored element type: ``"same"`` as the input, ``"f32"`` or ``"f16"``.
        seed: all randomness of the build; same seed and data, same graph on the CPU backend
            (the GPU NN-descent is not bit-deterministic; its graphs reach the same recall).
        backend: ``"auto"`` (the GPU when built and visible), ``"cpu"`` or ``"cuda"``; a
            backend this build or machine cannot run raises CagraError.
        num_threads: CPU threads; 0 = all (or ``OMP_NUM_THREADS``). At most 4 per hardware
            thread are used (more are clamped); a count the system cannot start raises
            CagraError (the default count shrinks to what it can start).
        labels: one int64 label per row (any 1-D integer array), all different: searches
            then return labels instead of row numbers (see :attr:`Index.labels`). ``None``:
            each row's label is its row number.
    """
    p = _index_params(
        metric,
        graph_degree,
        intermediate_graph_degree,
        knn_algo,
        knn_max_iterations,
        knn_termination_threshold,
        knn_sample_rate,
        reorder,
        storage,
        seed,
    )
    impl = _ext.build(
        _vectors(dataset, "dataset"),
        p,
        _choice("backend", backend, _BACKENDS),
        _threads(num_threads),
        None if labels is None else labels_array(labels),
    )
    return Index(impl)


def explain_build(
    dataset: ArrayLike | int,
    dtype: Any = None,
    *,
    metric: str = _DEFAULT_METRIC,
    graph_degree: int = _IP.graph_degree,
    intermediate_graph_degree: int = _IP.intermediate_graph_degree,
    knn_algo: str = _DEFAULT_KNN_ALGO,
    knn_max_iterations: int = _IP.knn_max_iterations,
    knn_termination_threshold: float = _IP.knn_termination_threshold,
    knn_sample_rate: float = _IP.knn_sample_rate,
    reorder: str = _DEFAULT_REORDER,
    storage: str = _DEFAULT_STORAGE,
    seed: int = _IP.seed,
    backend: str = "auto",
    num_threads: int = 0,
) -> str:
    """What :func:`build` will do with these arguments (the same keywords and defaults), every
    automatic value resolved: one line such as ``"backend=cpu knn=brute_force graph_degree=64
    intermediate_graph_degree=128 storage=f32"``. Nothing is built.

    Args:
        dataset: the array :func:`build` would get (only its row count and dtype are read),
            or a row count.
        dtype: with a row count, the vectors' dtype (default float32): anything
            ``numpy.dtype`` takes, e.g. ``"uint8"``.

    The line is the C++ ``cagra::to_string(cagra::plan_build(...))``, the one the CLI's
    ``cagra build --explain`` prints. Raises CagraError for parameters :func:`build` would
    refuse.
    """
    if isinstance(dataset, (int, np.integer)) and not isinstance(dataset, bool):
        rows = _uint("dataset (a row count)", dataset, 63)
        dt = _dtype_name(np.float32 if dtype is None else dtype)
    else:
        if dtype is not None:
            raise TypeError("dtype is taken with a row count only; an array has its own")
        shape = getattr(_vectors(dataset, "dataset"), "shape", ())
        if len(shape) != 2:
            raise ValueError(f"dataset must be a 2-D array [rows, dim], got shape {tuple(shape)}")
        rows = int(shape[0])
        dt = _dtype_name(dataset.dtype)
    p = _index_params(
        metric,
        graph_degree,
        intermediate_graph_degree,
        knn_algo,
        knn_max_iterations,
        knn_termination_threshold,
        knn_sample_rate,
        reorder,
        storage,
        seed,
    )
    return _ext.explain_build(
        rows, dt, p, _choice("backend", backend, _BACKENDS), _threads(num_threads)
    )


def load(path: PathLike) -> Index:
    """Reads an index written by :meth:`Index.save` or ``cagra build``; every header field
    and the checksum are verified."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no index file at '{path}'")
    return Index(_ext.load(path))


def build_knn_graph(
    dataset: ArrayLike,
    k: int | None = None,
    *,
    metric: str = _DEFAULT_METRIC,
    knn_algo: str = _DEFAULT_KNN_ALGO,
    knn_max_iterations: int = _IP.knn_max_iterations,
    knn_termination_threshold: float = _IP.knn_termination_threshold,
    knn_sample_rate: float = _IP.knn_sample_rate,
    seed: int = _IP.seed,
    backend: str = "auto",
    num_threads: int = 0,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]:
    """Stage 1 of :func:`build`: the kNN graph of ``dataset`` (self excluded).

    ``k`` plays the part of ``intermediate_graph_degree``; ``None`` (the default) takes the
    automatic one of :func:`build` with its default ``graph_degree`` (``2 * graph_degree``, at
    most ``n - 1``). The other arguments are those of :func:`build`. Returns
    ``(ids, distances)``, ``[n, k]`` each, nearest first.
    """
    if k is None:
        degree, k = _IP.graph_degree, _IP.intermediate_graph_degree  # 0: automatic
    else:
        degree = k = _uint("k", k)
    p = _index_params(
        metric,
        degree,
        k,
        knn_algo,
        knn_max_iterations,
        knn_termination_threshold,
        knn_sample_rate,
        _DEFAULT_REORDER,
        _DEFAULT_STORAGE,
        seed,
    )
    return _ext.build_knn_graph(
        _vectors(dataset, "dataset"),
        p,
        _choice("backend", backend, _BACKENDS),
        _threads(num_threads),
    )


def optimize(
    knn_ids: ArrayLike,
    knn_distances: ArrayLike | None = None,
    *,
    graph_degree: int = _IP.graph_degree,
    reorder: str = _DEFAULT_REORDER,
    dataset: ArrayLike | None = None,
    metric: str = _DEFAULT_METRIC,
    backend: str = "auto",
    num_threads: int = 0,
) -> npt.NDArray[np.uint32]:
    """Stage 2 of :func:`build`: prunes a kNN graph to ``graph_degree`` and adds reverse edges.

    Args:
        knn_ids: ``[n, k]`` neighbor ids, each row sorted nearest first (any integer dtype
            that fits uint32; host memory).
        knn_distances: ``[n, k]`` distances; needed only by ``reorder="distance"``, which
            otherwise computes them from ``dataset`` with ``metric``.
        graph_degree: out-degree of the result, ``<= k``.
        reorder: ``"rank"`` (needs no distances) or ``"distance"``.

    Returns:
        The graph, ``[n, graph_degree]`` uint32; deterministic for a given input.
    """
    ids = _ids(knn_ids, "knn_ids")
    dist = None
    if knn_distances is not None:
        dist = np.ascontiguousarray(np.asarray(knn_distances, dtype=np.float32))
    return _ext.optimize(
        ids,
        dist,
        _uint("graph_degree", graph_degree),
        _choice("reorder", reorder, _REORDERS),
        None if dataset is None else _vectors(dataset, "dataset"),
        _choice("metric", metric, _METRICS),
        _choice("backend", backend, _BACKENDS),
        _threads(num_threads),
    )


def analyze(graph: Index | ArrayLike, *, two_hop_samples: int = 0, num_threads: int = 0) -> dict:
    """Reachability metrics of a fixed-degree graph (an :class:`Index` or a ``[n, d]`` id
    array), as ``cagra info`` prints them.

    Returns a dict: ``nodes``, ``degree``, ``avg_two_hop`` (mean distinct nodes within two
    hops, over ``two_hop_samples`` evenly spaced nodes; 0 = all), ``strong_components``,
    ``weak_components``, ``invalid_edges``, ``self_loops``, ``duplicate_edges``,
    ``two_hop_samples``.
    """
    g = graph.graph if isinstance(graph, Index) else _ids(graph, "graph")
    return _ext.analyze(g, _uint("two_hop_samples", two_hop_samples, 63), _threads(num_threads))


def brute_force(
    dataset: ArrayLike,
    queries: ArrayLike,
    k: int,
    *,
    metric: str = _DEFAULT_METRIC,
    exclude_self: bool = False,
    backend: str = "auto",
    num_threads: int = 0,
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.float32]]:
    """Exact k nearest neighbors (the ground-truth oracle), ``(ids, distances)`` ``[nq, k]``.

    With ``exclude_self``, ``queries`` must be ``dataset`` itself and row i never lists i.
    """
    return _ext.brute_force(
        _vectors(dataset, "dataset"),
        _vectors(queries, "queries"),
        _uint("k", k),
        _choice("metric", metric, _METRICS),
        bool(exclude_self),
        _choice("backend", backend, _BACKENDS),
        _threads(num_threads),
    )


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


def cuda_available() -> bool:
    """Whether this build has the CUDA backend and a GPU is visible."""
    return _ext.cuda_available()


def search_backend(backend: str = "auto") -> str:
    """The backend (``"cpu"`` or ``"cuda"``) that a search with this ``backend`` argument
    runs on: ``"auto"`` is CUDA when this build has it and a GPU is visible. Raises
    CagraError for ``"cuda"`` when no GPU is usable."""
    b = _ext.search_backend(_choice("backend", backend, _BACKENDS))
    return "cuda" if b == _ext.Backend.cuda else "cpu"


def cuda_device_name(device: int = 0) -> str:
    """A description of CUDA device ``device`` (name, architecture, SMs, memory); raises
    CagraError without the CUDA backend or that device."""
    return _ext.cuda_device_name(_uint("device", device, 31))
