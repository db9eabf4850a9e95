"""The package's options: the string choices (named as on the command line) and the C++
defaults they stand for, read from the extension's default-constructed parameter structs
(include/cagra/params.hpp), and the checks that turn keyword arguments into the extension's
parameter structs with clear errors."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import _cagra as _ext

CagraError = _ext.CagraError

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
_TRAVERSALS = {"exact": _ext.Traversal.exact, "int8": _ext.Traversal.int8}
_ROWS_LOCATIONS = {
    "auto": _ext.RowsLocation.auto,
    "device": _ext.RowsLocation.device,
    "host": _ext.RowsLocation.host,
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
_DEFAULT_TRAVERSAL = _name_of(_TRAVERSALS, _SP.traversal)
_DEFAULT_STORED_ROWS = _name_of(_ROWS_LOCATIONS, _SP.stored_rows)

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


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value


def _devices(value: Any) -> list[int]:
    """``devices=``: None (the default device) or a list of distinct CUDA device ordinals."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(
            f"devices must be a list of CUDA device ordinals such as [0, 1], got "
            f"{type(value).__name__}"
        )
    out = [_uint("devices entry", d, 31) for d in value]
    if len(set(out)) != len(out):
        raise ValueError(f"devices lists a device twice: {out} (each device once)")
    return out


def _threads(value: Any) -> int:
    # Any int32 count: the library clamps it to 4 x the hardware threads (cagra::resolve_threads).
    return _uint("num_threads", value, 31)


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
    max_device_memory: int | None = None,
    knn_partition_rows: int = 0,
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
    if max_device_memory is not None:
        p.max_device_memory = _uint("max_device_memory", max_device_memory, 64)
    p.knn_partition_rows = _uint("knn_partition_rows", knn_partition_rows, 31)
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
    traversal: str,
    rerank: int,
    persistent_lifetime_us: int = 1000,
    stored_rows: str = "auto",
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
    p.persistent = _flag("persistent", persistent)
    p.persistent_lifetime_us = _uint("persistent_lifetime_us", persistent_lifetime_us)
    try:
        p.filter = _FILTER_ALGOS[filter_algo]
    except (KeyError, TypeError):
        options = ", ".join(repr(k) for k in _FILTER_ALGOS)
        raise CagraError(f"filter_algo must be one of {options}; got {filter_algo!r}") from None
    p.traversal = _choice("traversal", traversal, _TRAVERSALS)
    p.rerank = _uint("rerank", rerank)
    p.stored_rows = _choice("stored_rows", stored_rows, _ROWS_LOCATIONS)
    return p
