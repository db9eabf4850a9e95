# Type stub of the extension module cagra._cagra (python/src/cagra_ext.cpp), written by
# nanobind.stubgen: python -m nanobind.stubgen -m cagra._cagra -o python/cagra/_cagra.pyi, then
# this comment restored and `built_with_cuda: bool` left without a value (it depends on the build).
# python/tests/test_api.py checks that it matches the built module.
"""
Binding of the cagra C++ library; use the `cagra` package, not this module.
"""

from collections.abc import Sequence
import enum
from typing import Annotated

import numpy
from numpy.typing import NDArray


class CagraError(ValueError):
    """
    Invalid parameters, data or files (cagra::error): a ValueError carrying the C++ library's message, which lists every violated constraint.
    """

built_with_cuda: bool

class Metric(enum.Enum):
    l2 = 0

    inner_product = 1

    cosine = 2

class Backend(enum.Enum):
    auto = 0

    cpu = 1

    cuda = 2

class KnnAlgo(enum.Enum):
    auto = 0

    nn_descent = 1

    brute_force = 2

class Reorder(enum.Enum):
    rank = 0

    distance = 1

class Storage(enum.Enum):
    same = 0

    f32 = 1

    f16 = 2

class SearchAlgo(enum.Enum):
    auto = 0

    single_cta = 1

    multi_cta = 2

class FilterAlgo(enum.Enum):
    auto = 0

    graph = 1

    exact = 2

class Traversal(enum.Enum):
    exact = 0

    int8 = 1

class RowsLocation(enum.Enum):
    auto = 0

    device = 1

    host = 2

INVALID_ID: int = 4294967295

class IndexParams:
    def __init__(self) -> None: ...

    @property
    def metric(self) -> Metric: ...

    @metric.setter
    def metric(self, arg: Metric, /) -> None: ...

    @property
    def graph_degree(self) -> int: ...

    @graph_degree.setter
    def graph_degree(self, arg: int, /) -> None: ...

    @property
    def intermediate_graph_degree(self) -> int: ...

    @intermediate_graph_degree.setter
    def intermediate_graph_degree(self, arg: int, /) -> None: ...

    @property
    def knn_algo(self) -> KnnAlgo: ...

    @knn_algo.setter
    def knn_algo(self, arg: KnnAlgo, /) -> None: ...

    @property
    def knn_max_iterations(self) -> int: ...

    @knn_max_iterations.setter
    def knn_max_iterations(self, arg: int, /) -> None: ...

    @property
    def knn_termination_threshold(self) -> float: ...

    @knn_termination_threshold.setter
    def knn_termination_threshold(self, arg: float, /) -> None: ...

    @property
    def knn_sample_rate(self) -> float: ...

    @knn_sample_rate.setter
    def knn_sample_rate(self, arg: float, /) -> None: ...

    @property
    def knn_partition_rows(self) -> int: ...

    @knn_partition_rows.setter
    def knn_partition_rows(self, arg: int, /) -> None: ...

    @property
    def knn_checkpoint_dir(self) -> str: ...

    @knn_checkpoint_dir.setter
    def knn_checkpoint_dir(self, arg: str, /) -> None: ...

    @property
    def reorder(self) -> Reorder: ...

    @reorder.setter
    def reorder(self, arg: Reorder, /) -> None: ...

    @property
    def storage(self) -> Storage: ...

    @storage.setter
    def storage(self, arg: Storage, /) -> None: ...

    @property
    def seed(self) -> int: ...

    @seed.setter
    def seed(self, arg: int, /) -> None: ...

    @property
    def max_device_memory(self) -> int: ...

    @max_device_memory.setter
    def max_device_memory(self, arg: int, /) -> None: ...

class SearchParams:
    def __init__(self) -> None: ...

    @property
    def itopk_size(self) -> int: ...

    @itopk_size.setter
    def itopk_size(self, arg: int, /) -> None: ...

    @property
    def search_width(self) -> int: ...

    @search_width.setter
    def search_width(self, arg: int, /) -> None: ...

    @property
    def max_iterations(self) -> int: ...

    @max_iterations.setter
    def max_iterations(self, arg: int, /) -> None: ...

    @property
    def min_iterations(self) -> int: ...

    @min_iterations.setter
    def min_iterations(self, arg: int, /) -> None: ...

    @property
    def team_size(self) -> int: ...

    @team_size.setter
    def team_size(self, arg: int, /) -> None: ...

    @property
    def algo(self) -> SearchAlgo: ...

    @algo.setter
    def algo(self, arg: SearchAlgo, /) -> None: ...

    @property
    def hash_bits(self) -> int: ...

    @hash_bits.setter
    def hash_bits(self, arg: int, /) -> None: ...

    @property
    def hash_reset_interval(self) -> int: ...

    @hash_reset_interval.setter
    def hash_reset_interval(self, arg: int, /) -> None: ...

    @property
    def persistent(self) -> bool: ...

    @persistent.setter
    def persistent(self, arg: bool, /) -> None: ...

    @property
    def persistent_lifetime_us(self) -> int: ...

    @persistent_lifetime_us.setter
    def persistent_lifetime_us(self, arg: int, /) -> None: ...

    @property
    def num_random_samplings(self) -> int: ...

    @num_random_samplings.setter
    def num_random_samplings(self, arg: int, /) -> None: ...

    @property
    def seed(self) -> int: ...

    @seed.setter
    def seed(self, arg: int, /) -> None: ...

    @property
    def filter(self) -> FilterAlgo: ...

    @filter.setter
    def filter(self, arg: FilterAlgo, /) -> None: ...

    @property
    def traversal(self) -> Traversal: ...

    @traversal.setter
    def traversal(self, arg: Traversal, /) -> None: ...

    @property
    def rerank(self) -> int: ...

    @rerank.setter
    def rerank(self, arg: int, /) -> None: ...

    @property
    def stored_rows(self) -> RowsLocation: ...

    @stored_rows.setter
    def stored_rows(self, arg: RowsLocation, /) -> None: ...

class ExtendParams:
    def __init__(self) -> None: ...

    @property
    def chunk_size(self) -> int: ...

    @chunk_size.setter
    def chunk_size(self, arg: int, /) -> None: ...

    @property
    def candidates(self) -> int: ...

    @candidates.setter
    def candidates(self, arg: int, /) -> None: ...

    @property
    def itopk_size(self) -> int: ...

    @itopk_size.setter
    def itopk_size(self, arg: int, /) -> None: ...

class Index:
    @property
    def size(self) -> int: ...

    @property
    def dim(self) -> int: ...

    @property
    def graph_degree(self) -> int: ...

    @property
    def metric(self) -> Metric: ...

    @property
    def dtype(self) -> str: ...

    @property
    def deleted_count(self) -> int: ...

    @property
    def live_size(self) -> int: ...

    @property
    def has_labels(self) -> bool: ...

    @property
    def labels(self) -> NDArray[numpy.int64] | None: ...

    @property
    def graph(self) -> Annotated[NDArray[numpy.uint32], dict(shape=(None, None), writable=False)]: ...

    @property
    def vectors(self) -> Annotated[NDArray, dict(shape=(None, None), writable=False)]: ...

class ShardedIndex:
    @property
    def size(self) -> int: ...

    @property
    def dim(self) -> int: ...

    @property
    def graph_degree(self) -> int: ...

    @property
    def metric(self) -> Metric: ...

    @property
    def dtype(self) -> str: ...

    @property
    def shard_count(self) -> int: ...

    @property
    def shard_offsets(self) -> list[int]: ...

def build(dataset: Annotated[NDArray, dict(writable=False)], params: IndexParams, backend: Backend, num_threads: int, labels: Annotated[NDArray[numpy.int64], dict(shape=(None,), order='C', device='cpu', writable=False)] | None = None, devices: Sequence[int] = []) -> Index: ...

def build_sharded(dataset: Annotated[NDArray, dict(writable=False)], params: IndexParams, backend: Backend, num_threads: int, shards: int, devices: Sequence[int], checkpoint: str = '') -> ShardedIndex: ...

def extend(index: Index, vectors: Annotated[NDArray, dict(writable=False)], labels: Annotated[NDArray[numpy.int64], dict(shape=(None,), order='C', device='cpu', writable=False)] | None, params: ExtendParams, backend: Backend, num_threads: int) -> None: ...

def remove(index: Index, labels: Annotated[NDArray[numpy.int64], dict(shape=(None,), order='C', device='cpu', writable=False)], compact_above: float, backend: Backend, num_threads: int) -> int: ...

def compact(index: Index, backend: Backend, num_threads: int) -> None: ...

def search(index: Index, queries: Annotated[NDArray, dict(writable=False)], k: int, params: SearchParams, backend: Backend, num_threads: int, framework: str = '', filter_words: Annotated[NDArray[numpy.uint32], dict(order='C', device='cpu', writable=False)] | None = None, filter_per_query: bool = False, devices: Sequence[int] = [], stream: int = 0, filter_count: int = -1, filter_stamp: int = 0, stream_ordered: bool = False, out_ids: int = 0, out_distances: int = 0) -> object: ...

def new_filter_stamp() -> int: ...

def search_sharded(index: ShardedIndex, queries: Annotated[NDArray, dict(writable=False)], k: int, params: SearchParams, backend: Backend, num_threads: int, framework: str = '', filter_words: Annotated[NDArray[numpy.uint32], dict(order='C', device='cpu', writable=False)] | None = None, filter_per_query: bool = False, devices: Sequence[int] = [], stream: int = 0, out_ids: int = 0, out_distances: int = 0) -> object: ...

def explain_build(rows: int, dim: int, dtype: str, params: IndexParams, backend: Backend, num_threads: int) -> str: ...

def explain_search(index: Index, k: int, batch: int, params: SearchParams, backend: Backend, num_threads: int, filter_words: Annotated[NDArray[numpy.uint32], dict(order='C', device='cpu', writable=False)] | None = None, filter_per_query: bool = False) -> str: ...

def build_knn_graph(dataset: Annotated[NDArray, dict(writable=False)], params: IndexParams, backend: Backend, num_threads: int) -> tuple: ...

def optimize(knn_ids: Annotated[NDArray[numpy.uint32], dict(shape=(None, None), order='C', device='cpu', writable=False)], knn_distances: Annotated[NDArray[numpy.float32], dict(shape=(None, None), order='C', device='cpu', writable=False)] | None, graph_degree: int, reorder: Reorder, dataset: Annotated[NDArray, dict(writable=False)] | None, metric: Metric, backend: Backend, num_threads: int) -> Annotated[NDArray[numpy.uint32], dict(shape=(None, None))]: ...

def analyze(graph: Annotated[NDArray[numpy.uint32], dict(shape=(None, None), order='C', device='cpu', writable=False)], two_hop_samples: int, num_threads: int) -> dict: ...

def brute_force(dataset: Annotated[NDArray, dict(writable=False)], queries: Annotated[NDArray, dict(writable=False)], k: int, metric: Metric, exclude_self: bool, backend: Backend, num_threads: int) -> tuple: ...

def save(index: Index, path: str) -> None: ...

def load(path: str) -> Index: ...

def save_sharded(index: ShardedIndex, path: str) -> None: ...

def load_sharded(path: str) -> ShardedIndex: ...

def is_sharded_file(path: str) -> bool: ...

def read_matrix(path: str) -> Annotated[NDArray, dict(shape=(None, None))]: ...

def read_neighbors(path: str) -> tuple: ...

def recall(found: Annotated[NDArray[numpy.uint32], dict(shape=(None, None), order='C', device='cpu', writable=False)], truth: Annotated[NDArray[numpy.uint32], dict(shape=(None, None), order='C', device='cpu', writable=False)], k: int) -> float: ...

def version() -> str: ...

def cuda_available() -> bool: ...

def search_backend(backend: Backend) -> Backend: ...

def cuda_device_name(device: int) -> str: ...
