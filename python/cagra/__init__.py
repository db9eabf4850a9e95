"""CAGRA graph-based approximate nearest-neighbor search, from Python.

The Python face of the cagra C++ library (include/cagra/*.hpp): the same build and search, the
same parameters under the same names and defaults, the same index files as the ``cagra``
command-line tool. The package's modules hold the pythonic layer (keyword defaults, string
options, docstrings): ``_options`` (string options, C++ defaults, argument checks), ``_arrays``
(array input), ``_filter`` (search filters), ``_index`` (:class:`Index`, :func:`load`),
``_living`` (extend, remove, compact, labels), ``_sharded`` (:class:`ShardedIndex`, several
GPUs), ``_build`` (build and its stages) and ``_io``
(files, recall); the extension ``cagra._cagra`` only converts arrays and releases the GIL.

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
DLPack producer such as torch or cupy). Arrays in host memory are used in place. float64 input
is converted to float32, one copy (as hnswlib and faiss do; a value beyond float32's range is a
CagraError); lists, tuples and objects with ``__array__`` go through ``numpy.asarray`` first
and follow the same rule (a list of floats is float64: converted). CUDA arrays are accepted
when the CUDA backend is built: :meth:`Index.search` reads CUDA queries in place on the GPU and
returns CUDA results (no host copy); :func:`build`, :func:`brute_force` and :func:`optimize`
copy CUDA arrays to the host first (the build itself runs on the GPU when ``backend`` is
``"auto"`` or ``"cuda"`` and one is visible). CUDA float64 arrays are refused (convert them on
the GPU). Other dtypes (wider integers such as int64, whose meaning, byte or float vectors,
cagra does not guess; object arrays included), big-endian, empty and non-contiguous arrays are
refused, never silently converted.

Errors: ``CagraError`` (a subclass of ``ValueError``) carries the C++ library's message for
invalid parameters, data and files (an empty array included); wrong array types (object arrays
included) raise ``TypeError``, wrong shapes, layouts and byte orders ``ValueError``; an
allocation failure ``MemoryError``; anything else ``RuntimeError``.
The GIL is released while the library works, so searches in several Python threads run in
parallel.
"""

from __future__ import annotations

try:
    from . import _cagra as _ext
except ImportError as exc:  # e.g. Python started inside python/, next to the sources
    raise ImportError(
        "the cagra extension module is missing: install the package with "
        "`pip install .` from the repository root (and do not import it from python/)"
    ) from exc

from ._arrays import ArrayLike as ArrayLike
from ._build import analyze, brute_force, build, build_knn_graph, explain_build, optimize
from ._filter import Filter
from ._filter import _filter_words as _filter_words  # python/tests/test_filter.py uses it
from ._index import Index, from_hnswlib, load
from ._io import PathLike as PathLike
from ._io import read_matrix, read_neighbors, recall
from ._options import _BACKENDS, _choice, _uint
from ._sharded import ShardedIndex, load_sharded

__all__ = [
    "INVALID_ID",
    "CagraError",
    "Filter",
    "Index",
    "ShardedIndex",
    "analyze",
    "brute_force",
    "build",
    "build_knn_graph",
    "built_with_cuda",
    "cuda_available",
    "cuda_device_name",
    "explain_build",
    "from_hnswlib",
    "load",
    "load_sharded",
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


# The public names are cagra.<name> wherever they are defined: help() and repr() say so.
for _obj in (
    Index,
    ShardedIndex,
    load,
    load_sharded,
    from_hnswlib,
    analyze,
    brute_force,
    build,
    build_knn_graph,
    explain_build,
    optimize,
):
    _obj.__module__ = __name__
for _obj in (read_matrix, read_neighbors, recall):
    _obj.__module__ = __name__
del _obj
