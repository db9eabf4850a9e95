/**
 * @file cagra.hpp
 * @brief The library's entry points: build, search, save/load, and the separate build stages.
 *
 * @code
 *   cagra::host_matrix base = cagra::io::read_matrix("base.fbin");
 *   cagra::index_params ip;  ip.graph_degree = 32;  ip.intermediate_graph_degree = 64;
 *   cagra::index idx = cagra::build({}, ip, base);
 *   std::vector<uint32_t> ids(nq * 10);  std::vector<float> dist(nq * 10);
 *   cagra::search({}, cagra::search_params{}, idx, queries, 10,
 *                 {ids.data(), nq, 10}, {dist.data(), nq, 10});
 *   cagra::save(idx, "base.cagra");
 * @endcode
 *
 * Every function throws cagra::error on invalid input (with every violated constraint listed)
 * and never aborts. Vectors come in as dataset_view (f32, f16, u8, i8), row-major.
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cagra/error.hpp>
#include <cagra/filter.hpp>
#include <cagra/index.hpp>
#include <cagra/params.hpp>
#include <cagra/types.hpp>

namespace cagra {

/** A kNN graph: for each row, k neighbor ids sorted by ascending distance (with the distances). */
struct knn_graph {
  int64_t rows = 0;
  uint32_t k = 0;
  std::vector<uint32_t> ids;     ///< [rows, k]
  std::vector<float> distances;  ///< [rows, k]
  matrix_view<const uint32_t> view() const { return {ids.data(), rows, static_cast<int64_t>(k)}; }
};

/** What a build did and how long each stage took (wall-clock seconds). */
struct build_report {
  knn_algo knn_used = knn_algo::automatic;  ///< the kNN algorithm actually run
  backend backend_used = backend::cpu;
  double knn_seconds = 0;       ///< intermediate kNN graph
  double optimize_seconds = 0;  ///< reorder + prune + reverse + merge
  double total_seconds = 0;     ///< everything, including validation, conversion and transfers
  uint32_t knn_iterations = 0;  ///< NN-descent iterations run (0 for brute force; partitioned:
                                ///< the most of any partition)
  /** cagra::build_sharded: shards built by this call, and shards loaded from the checkpoint
   *  folder instead (shard_build_options::checkpoint_dir); 0 and 0 for cagra::build. */
  uint32_t shards_built = 0;
  uint32_t shards_resumed = 0;
  /** kNN graphs built: 1, or the partitions of a partitioned kNN stage
   *  (build_plan::partition_rows). */
  int64_t knn_partitions = 1;
  /** Of those, loaded from knn_graph_params::checkpoint_dir instead of built. */
  int64_t knn_partitions_resumed = 0;
  /** The partitions were built on a worker thread while the host merged the previous one (GPU
   *  builds with room on the host for a second partition's lists). */
  bool knn_partitions_overlapped = false;
};

/** Builds a CAGRA index: kNN graph (NN-descent or brute force), then `optimize` (paper §III).
 *  @param[in]  res     backend, threads, progress callback
 *  @param[in]  params  metric, degrees, seed, ...
 *  @param[in]  dataset [n, dim] vectors, host memory (device memory with the CUDA backend)
 *  @param[out] report  optional: stage times and choices */
index build(const resources& res, const index_params& params, dataset_view dataset,
            build_report* report = nullptr);
/** `build` of a matrix the caller gives away: when the index stores the rows in their own
 *  element type (f32 rows for cosine, which are scaled to unit norm in place), the matrix
 *  becomes the index's vectors without a copy, which halves the host memory of a large build;
 *  otherwise it is converted and freed before the graph is built. Same index as `build` of its
 *  view. Input refused (NaN/Inf, an all-zero row for cosine) leaves the matrix as it was. */
index build(const resources& res, const index_params& params, host_matrix&& dataset,
            build_report* report = nullptr);

/** Stage 1 of build: the intermediate kNN graph with k = params.intermediate_graph_degree,
 *  self excluded, rows sorted by distance. Deterministic for a given params.seed. */
knn_graph build_knn_graph(const resources& res, const index_params& params, dataset_view dataset);

/** Stage 2 of build (paper §III-B): rank-based (or distance-based) reordering and pruning to
 *  `graph_degree`, reverse graph, d/2 interleaved merge. Needs no vectors for reorder_kind::rank
 *  (pass an empty `dataset`); deterministic: the same input gives the same graph bit for bit.
 *  @return [knn.rows, graph_degree] row-major graph */
std::vector<uint32_t> optimize(const resources& res, const knn_graph& knn, uint32_t graph_degree,
                               reorder_kind reorder = reorder_kind::rank, dataset_view dataset = {},
                               cagra::metric m = cagra::metric::l2);

/** Approximate k-NN search of `queries` (paper §IV).
 *  Host views (memory_space::host) run on either backend. Device views (queries, neighbors
 *  and distances all memory_space::device, on CUDA device res.device) run on the CUDA backend
 *  with no host round trip: `automatic` means CUDA, backend::cpu is an error ("device memory
 *  needs the CUDA backend"), mixed host/device views are an error. Device queries must be f32,
 *  f16, u8 or i8 for an f32/f16 index and the index's own dtype for a u8/i8 index; they are
 *  read after the work queued on res.cuda_stream (by default the legacy default stream), and
 *  the results are complete when search returns (it synchronizes). Same results as the same
 *  queries in host memory.
 *  @param[in]  queries   [nq, dim]; any dtype that converts exactly to the index's storage
 *  @param[in]  k         neighbors per query, 1 <= k <= itopk_size
 *  @param[out] neighbors [nq, k] ids, nearest first (kInvalidId where fewer than k were found)
 *  @param[out] distances [nq, k] distances (see cagra::metric), or an empty view to skip
 *  @param[in]  filter    optional: the rows each query may return (cagra/filter.hpp; host
 *                        memory); slots beyond the allowed rows hold kInvalidId and +inf */
void search(const resources& res, const search_params& params, const index& idx,
            dataset_view queries, uint32_t k, matrix_view<uint32_t> neighbors,
            matrix_view<float> distances, const row_filter& filter = {});

/** search() that writes labels: each result's user label (index::label_of), -1 where a slot
 *  holds no neighbor. Same arguments otherwise. In device memory (queries, labels and distances
 *  all there, as for search()), the rows are mapped to labels on the GPU from a copy of the
 *  labels kept there (made again when they change), and resources::stream_ordered holds as for
 *  search(). */
void search(const resources& res, const search_params& params, const index& idx,
            dataset_view queries, uint32_t k, matrix_view<int64_t> labels,
            matrix_view<float> distances, const row_filter& filter = {});

/** What an extend did and where its time went (wall-clock seconds, summed over the chunks). */
struct extend_report {
  int64_t rows_added = 0;
  uint32_t chunks = 0;
  backend backend_used = backend::cpu;  ///< where the candidates were searched
  double setup_seconds = 0;             ///< checks, conversion, room for the new rows, in-degrees
  double search_seconds = 0;            ///< candidates from the index's own search
  double chunk_knn_seconds = 0;         ///< exact kNN inside each chunk
  double prune_seconds = 0;             ///< merging candidates, pruning, the new rows (host)
  double reverse_seconds = 0;           ///< appending, reverse edges into existing rows (host)
  double device_seconds = 0;            ///< bringing a backend's copy of the index up to date
  double total_seconds = 0;             ///< everything, validation and conversion included

  /** Adds another call's report (a stream of extend calls summed): counts and times add up,
   *  backend_used becomes the other's. */
  extend_report& operator+=(const extend_report& o) {
    rows_added += o.rows_added;
    chunks += o.chunks;
    backend_used = o.backend_used;
    setup_seconds += o.setup_seconds;
    search_seconds += o.search_seconds;
    chunk_knn_seconds += o.chunk_knn_seconds;
    prune_seconds += o.prune_seconds;
    reverse_seconds += o.reverse_seconds;
    device_seconds += o.device_seconds;
    total_seconds += o.total_seconds;
    return *this;
  }
};

/** Inserts `vectors` into `idx` (docs/living_index.md): per chunk of new rows, candidates from
 *  the index's own search and from the chunk itself, the build's rank-based pruning, and reverse
 *  edges into existing rows that replace their weakest replaceable edge (the fixed degree is
 *  kept). The new rows are rows size() .. size() + n - 1.
 *  @param[in] labels  one label per new row, or null. An index with labels needs them; on an
 *                     index without, they make the existing rows' labels their row numbers.
 *  @param[out] report optional: chunks and the time of each step
 *  Throws cagra::error (bad dimension, dtype, non-finite values, empty batch, duplicate or
 *  missing labels) and then leaves the index exactly as it was. */
void extend(const resources& res, const extend_params& params, index& idx, dataset_view vectors,
            const int64_t* labels = nullptr, extend_report* report = nullptr);

/** Marks the rows with these labels (row numbers when the index has no labels) deleted: they
 *  are never returned again, but stay walkable until compact(). Throws (and changes nothing)
 *  for an unknown label, one deleted before, or one listed twice. With `compact_above` > 0,
 *  compacts when more than that share of rows is deleted afterwards. Returns the rows removed. */
int64_t remove(const resources& res, index& idx, const int64_t* labels, int64_t n,
               double compact_above = 0.0);

/** Drops the deleted rows: neighbour lists that pointed at them keep their live edges and refill
 *  from the deleted rows' neighbours and 2-hop rows, nearest first (rank rule: candidates a kept
 *  neighbour links to come last), refills get reverse edges, rows no longer pointed at get an
 *  in-edge, rows are renumbered in order. Labels are kept (an
 *  index without labels gets its old row numbers as labels, so results keep their ids). */
void compact(const resources& res, index& idx);

/** Exact k-NN by brute force (the ground-truth oracle). Ids/distances are [nq, k].
 *  With `exclude_self`, queries must be the dataset itself and row i never lists i. */
knn_graph brute_force_knn(const resources& res, cagra::metric m, dataset_view dataset,
                          dataset_view queries, uint32_t k, bool exclude_self = false);

/** Writes `idx` to `path` (format: docs/index_format.md). Writes to a temporary file first, so an
 *  existing file is never left half-written. */
void save(const index& idx, const std::string& path);
/** Reads an index written by `save`; validates every header field. */
index load(const std::string& path);

/** Reachability metrics of a fixed-degree graph (paper §III-A). */
struct graph_stats {
  int64_t nodes = 0;
  uint32_t degree = 0;
  double avg_two_hop = 0;         ///< mean number of distinct nodes reachable in <= 2 hops
  int64_t strong_components = 0;  ///< strongly connected components
  int64_t weak_components = 0;    ///< weakly connected components
  int64_t invalid_edges = 0;      ///< ids >= nodes
  int64_t self_loops = 0;
  int64_t duplicate_edges = 0;  ///< repeated ids within a row
  /** Nodes sampled for avg_two_hop (all nodes when 0 was asked). */
  int64_t two_hop_samples = 0;
};
/** Computes graph_stats; avg_two_hop over `two_hop_samples` evenly spaced nodes (0 = all). */
graph_stats analyze(const resources& res, matrix_view<const uint32_t> graph,
                    int64_t two_hop_samples = 0);

/** Recall of `found` against `truth`: mean over rows of |found[:k] ∩ truth[:k]| / k. */
double recall(matrix_view<const uint32_t> found, matrix_view<const uint32_t> truth, uint32_t k);

/** Library version string ("major.minor.patch"). */
const char* version();

/** Whether this build has the CUDA backend and can see a GPU. */
bool cuda_available();

/** The backend a `search` with `res` runs on (resolves backend::automatic); throws when
 *  res.target is cuda but no GPU is usable. */
backend search_backend(const resources& res);

/** "NVIDIA H200 (sm_90, 132 SMs, ...)" for CUDA device `device`; throws without CUDA. */
std::string cuda_device_name(int device = 0);

}  // namespace cagra
