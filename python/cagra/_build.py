"""Building: :func:`build` and its two stages (:func:`build_knn_graph`, :func:`optimize`),
the build plan (:func:`explain_build`), exact neighbors (:func:`brute_force`) and graph
metrics (:func:`analyze`)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import numpy.typing as npt

from . import _cagra as _ext
from ._arrays import ArrayLike, _dtype_name, _ids, _vectors
from ._index import Index
from ._living import labels_array
from ._options import (
    _BACKENDS,
    _DEFAULT_KNN_ALGO,
    _DEFAULT_METRIC,
    _DEFAULT_REORDER,
    _DEFAULT_STORAGE,
    _IP,
    _METRICS,
    _REORDERS,
    _choice,
    _devices,
    _index_params,
    _threads,
    _uint,
)
from ._sharded import ShardedIndex


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
    max_device_memory: int | None = None,
    knn_partition_rows: int = 0,
    backend: str = "auto",
    num_threads: int = 0,
    labels: ArrayLike | None = None,
    shards: int | None = None,
    devices: list[int] | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> Index | ShardedIndex:
    """Builds a CAGRA index: a kNN graph, then rank-based pruning and reverse edges.

    With ``shards`` (an int >= 1), or a ``devices`` list of two or more devices, it builds a
    :class:`ShardedIndex` instead (docs/multi_gpu.md): the rows split into ``shards``
    contiguous ranges (as equal as possible; ``None`` with several devices: one shard per
    device), one graph each, shard ``s`` on ``devices[s % len(devices)]``. Otherwise an
    :class:`Index`, built on ``devices[0]`` when ``devices`` names one device.

    Args:
        dataset: ``[n, dim]`` vectors, float32, float16, uint8 or int8, C-contiguous. float64
            input is converted to float32, one copy; a list of rows (or any ``__array__``
            object) is read with ``numpy.asarray`` and follows the same rule.
        metric: ``"l2"`` (squared Euclidean), ``"ip"``/``"inner_product"`` or ``"cosine"``.
        graph_degree: out-degree d of the final graph.
        intermediate_graph_degree: degree of the kNN graph pruned to d (2d..3d is typical;
            ``>= graph_degree``, ``< n``, ``<= 1024``). 0 = automatic: ``2 * graph_degree``,
            at most ``n - 1`` (:func:`explain_build` shows the value).
        knn_algo: ``"auto"``, ``"nn_descent"`` or ``"brute_force"``. Auto takes brute force
            up to ``max(10000, c * intermediate_graph_degree**2)`` rows, c = 2 on the CPU and
            4 on the GPU.
        knn_max_iterations: NN-descent iteration cap.
        knn_termination_threshold: NN-descent stops when fewer than this share of the list
            entries changed in an iteration.
        knn_sample_rate: NN-descent's sample rate (rho), in (0, 1].
        reorder: edge ordering when pruning: ``"rank"`` (CAGRA) or ``"distance"``.
        storage: stored element type: ``"same"`` as the input, ``"f32"`` or ``"f16"``.
        seed: all randomness of the build; same seed and data, same graph on the CPU backend
            (the GPU NN-descent is not bit-deterministic; its graphs reach the same recall).
        max_device_memory: bytes of device memory the GPU build may use (``None`` or 0: the
            device's free memory). A set that does not fit is built in kNN partitions, with
            the graph optimization partly or wholly on the host (:func:`explain_build` shows
            ``partition_rows`` and ``optimize``; docs/large_builds.md); a build that cannot fit
            even so is refused with CagraError before any work, saying what it needs and what
            lowers it (smaller degrees, f16 storage, shards). The CPU backend ignores it.
        knn_partition_rows: build the kNN graph over overlapping partitions of at most this
            many rows, one pass each (k-means clusters, every row in its two nearest): bounds
            the kNN stage's memory on either backend. 0 = one pass, or on the GPU what fits
            ``max_device_memory``. Otherwise at least ``4 * (intermediate_graph_degree + 1)``
            and 256.
        backend: ``"auto"`` (the GPU when built and visible), ``"cpu"`` or ``"cuda"``; a
            backend this build or machine cannot run raises CagraError.
        num_threads: CPU threads; 0 = all (or ``OMP_NUM_THREADS``). At most 4 per hardware
            thread are used (more are clamped); a count the system cannot start raises
            CagraError (the default count shrinks to what it can start).
        labels: one int64 label per row (any 1-D integer array), all different: searches
            then return labels instead of row numbers (see :attr:`Index.labels`). ``None``:
            each row's label is its row number. Not with ``shards`` (a sharded index numbers
            its rows globally).
        shards: build a :class:`ShardedIndex` of this many shards (1 <= shards <= rows).
        devices: CUDA devices, a list of distinct ordinals (``None``: device 0); several
            build a :class:`ShardedIndex`. The CPU backend builds the same shards on the CPU.
        checkpoint: a folder for the build's checkpoints (made when missing): every finished
            shard of a sharded build (docs/multi_gpu.md, "Checkpoints"), or every kNN partition
            of one index (docs/large_builds.md, "Checkpoints"), is saved there with a
            fingerprint of its inputs, and a later build with the same folder loads those whose
            fingerprint matches instead of building them.
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
        max_device_memory,
        knn_partition_rows,
    )
    devs = _devices(devices)
    if checkpoint is not None and shards is None and len(devs) < 2:
        p.knn_checkpoint_dir = os.fspath(checkpoint)
    if shards is not None or len(devs) > 1:
        n = 0 if shards is None else _uint("shards", shards)
        if shards is not None and n < 1:
            raise ValueError(f"shards must be >= 1, got {shards}")
        if labels is not None:
            raise ValueError(
                "labels are not supported on a sharded index (its rows are numbered "
                "globally): build without shards, or without labels"
            )
        return ShardedIndex(
            _ext.build_sharded(
                _vectors(dataset, "dataset"),
                p,
                _choice("backend", backend, _BACKENDS),
                _threads(num_threads),
                n,
                devs,
                "" if checkpoint is None else os.fspath(checkpoint),
            )
        )
    impl = _ext.build(
        _vectors(dataset, "dataset"),
        p,
        _choice("backend", backend, _BACKENDS),
        _threads(num_threads),
        None if labels is None else labels_array(labels),
        devs,
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
    max_device_memory: int | None = None,
    knn_partition_rows: int = 0,
    backend: str = "auto",
    num_threads: int = 0,
    shards: int | None = None,
    devices: list[int] | None = None,
    dim: int | None = None,
) -> str:
    """What :func:`build` will do with these arguments (the same keywords and defaults), every
    automatic value resolved: one line such as ``"backend=cpu knn=brute_force graph_degree=64
    intermediate_graph_degree=128 storage=f32"``. Nothing is built.

    Args:
        dataset: the array :func:`build` would get (only its row count and dtype are read),
            or a row count.
        dtype: with a row count, the vectors' dtype (default float32): anything
            ``numpy.dtype`` takes, e.g. ``"uint8"``; float64 plans the float32 copy
            :func:`build` makes of it.
        dim: with a row count, the vectors' dimension: the GPU plan's ``device_bytes`` (the
            build's peak device memory) needs it and is 0 without it. An array has its own.

    With ``shards`` (or several ``devices``), as :func:`build` takes them, the line is the plan
    of the largest shard (the shards differ by at most one row), each shard being built alike.

    The line is the C++ ``cagra::to_string(cagra::plan_build(...))``, the one the CLI's
    ``cagra build --explain`` prints. Raises CagraError for parameters :func:`build` would
    refuse.
    """
    if isinstance(dataset, (int, np.integer)) and not isinstance(dataset, bool):
        rows = _uint("dataset (a row count)", dataset, 63)
        dt = _dtype_name(np.float32 if dtype is None else dtype)
        cols = 0 if dim is None else _uint("dim", dim, 63)
    else:
        if dtype is not None:
            raise TypeError("dtype is taken with a row count only; an array has its own")
        # A float64 numpy array is planned as the float32 copy build would make, not copied.
        if isinstance(dataset, np.ndarray) and dataset.dtype.kind == "f" and dataset.itemsize == 8:
            v = dataset
        else:
            v = _vectors(dataset, "dataset")
        shape = getattr(v, "shape", ())
        if len(shape) != 2:
            raise ValueError(f"dataset must be a 2-D array [rows, dim], got shape {tuple(shape)}")
        if dim is not None:
            raise TypeError("dim is taken with a row count only; an array has its own")
        rows = int(shape[0])
        cols = int(shape[1])
        dt = _dtype_name(v.dtype)
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
        max_device_memory,
        knn_partition_rows,
    )
    devs = _devices(devices)
    n = len(devs) if shards is None else _uint("shards", shards)
    if shards is not None or n > 1:
        if n < 1:
            raise ValueError(f"shards must be >= 1, got {shards}")
        rows = -(-rows // n)  # the largest shard
    return _ext.explain_build(
        rows, cols, dt, p, _choice("backend", backend, _BACKENDS), _threads(num_threads)
    )


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
    most ``n - 1``). The other arguments (and the array rules: float64 input is converted to
    float32, one copy) are those of :func:`build`. Returns
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
    Both take the array rules of :func:`build` (float64 input is converted to float32, one
    copy).
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
