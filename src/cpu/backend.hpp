// The CPU backend: the stages of the CAGRA pipeline on host memory, multi-threaded with OpenMP.
// It is the oracle the CUDA backend is tested against and a serving path of its own. Inputs are
// already converted (core/convert.hpp): vectors in a storage type, queries in its query type.
// core::cpu_backend() (backend.cpp) puts these behind the backend interface.
#pragma once

#include <cstdint>
#include <vector>

#include "core/backend.hpp"

namespace cagra::cpu {

using core::optimize_steps;
using core::progress_fn;
using core::search_stats;

/** Exact k nearest rows of `data` for every row of `queries` (same dtype), sorted by
 *  (distance, id). With `exclude_self` the queries are `data` itself and row i skips i. */
knn_graph brute_force(const host_matrix& data, const host_matrix& queries, metric m, uint32_t k,
                      bool exclude_self, int num_threads, const progress_fn& progress);

/** Approximate kNN graph of `data` by NN-descent (Dong et al. 2011), self excluded, rows
 *  sorted by (distance, id). Deterministic for a given seed and any thread count. */
knn_graph nn_descent(const host_matrix& data, metric m, uint32_t k, const knn_graph_params& p,
                     uint64_t seed, int num_threads, const progress_fn& progress,
                     uint32_t* iterations_run);

/** CAGRA graph optimization (paper §III-B): reorder by detour count, prune to `degree`, reverse
 *  graph, interleaved merge (the `steps` that are on). Deterministic. Distance-based reorder
 *  uses knn.distances. */
std::vector<uint32_t> optimize(const knn_graph& knn, uint32_t degree, reorder_kind reorder,
                               optimize_steps steps, int num_threads, const progress_fn& progress);

/** CAGRA search (paper §IV-A) of every query row with a resolved CPU plan, multi-threaded over
 *  queries; ids/distances are [queries.rows, plan.k] (distances may be null). A non-empty
 *  `filter`: the allowed entries of the final top-M list are returned. With `stats` the work
 *  counts are added to *stats (null: nothing is gathered). */
void search(const index& idx, dataset_view queries, const search_plan& plan,
            const row_filter& filter, uint32_t* ids, float* distances, int num_threads,
            search_stats* stats = nullptr);

/** search() of a plan with algo multi_cta: each query walked by plan.ctas_per_query walkers on
 *  as many threads, their lists merged (src/cpu/parallel_walk.cpp). */
void parallel_walk_search(const index& idx, dataset_view queries, const search_plan& plan,
                          const row_filter& filter, uint32_t* ids, float* distances,
                          int num_threads, search_stats* stats = nullptr);

/** Exact filtered search (plan.filter_path == exact): the k nearest allowed rows of every query
 *  by (distance, id), padded with kInvalidId / +inf (src/cpu/exact_search.cpp). */
void exact_search(const index& idx, dataset_view queries, const search_plan& plan,
                  const row_filter& filter, uint32_t* ids, float* distances, int num_threads);

/** Exact re-ranking of each query's `n_candidates` candidate rows (host [nq, n_candidates];
 *  ids >= idx.size(), e.g. kInvalidId, are skipped): the k nearest by (distance, id), padded
 *  with kInvalidId / +inf (core::backend_ops::rerank). */
void rerank(const index& idx, dataset_view queries, const uint32_t* candidates,
            uint32_t n_candidates, uint32_t k, uint32_t* ids, float* distances, int num_threads);

/** Number of OpenMP threads for `requested` (0 = OpenMP's default). */
inline int thread_count(int requested) { return core::host_threads(requested); }

}  // namespace cagra::cpu
