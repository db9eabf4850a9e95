// The CPU backend: the stages of the CAGRA pipeline on host memory, multi-threaded with OpenMP.
// It is the oracle the CUDA backend is tested against and a serving path of its own. Inputs are
// already converted (core/convert.hpp): vectors in a storage type, queries in its query type.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <cagra/cagra.hpp>

namespace cagra::cpu {

using progress_fn = std::function<void(const char*, double)>;

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
 *  graph, interleaved merge. Deterministic. Distance-based reorder uses knn.distances. */
std::vector<uint32_t> optimize(const knn_graph& knn, uint32_t degree, reorder_kind reorder,
                               int num_threads, const progress_fn& progress);

/** Which optimization steps run (for the paper's ablation, Q-A1): without `reorder` the kNN list
 *  is cut to `degree` in distance order; without `reverse` the pruned graph is returned as is. */
struct optimize_steps {
  bool reorder = true;
  bool reverse = true;
};
std::vector<uint32_t> optimize(const knn_graph& knn, uint32_t degree, reorder_kind reorder,
                               optimize_steps steps, int num_threads, const progress_fn& progress);

/** Work done by cpu::search, summed over the queries (for bytes-per-query analysis: the CUDA
 *  single-CTA kernel follows the same steps, so these counts hold for it too). */
struct search_stats {
  uint64_t queries = 0;
  uint64_t distances = 0;    // distance computations (random init + expanded neighbors)
  uint64_t iterations = 0;   // search iterations that expanded at least one parent
  uint64_t parents = 0;      // parent nodes expanded (graph rows read)
  uint64_t hash_resets = 0;  // visited-hash clears (forgettable hash or nearly full)
};

/** CAGRA search (paper §IV-A) of every query row, multi-threaded over queries. `params` are
 *  already validated; ids/distances are [queries.rows(), k] (distances may be null). With
 *  `stats` the work counts are added to *stats (null: nothing is gathered). */
void search(const index& idx, const host_matrix& queries, uint32_t k, const search_params& params,
            uint32_t* ids, float* distances, int num_threads, search_stats* stats = nullptr);

/** Resolved search settings (the AUTO values made concrete); shared with the CUDA plan. */
struct search_plan {
  uint32_t itopk, width, max_iterations, min_iterations, hash_bits, reset_interval, samplings;
  /** Random initial draws: itopk + width * degree * samplings (the whole buffer, as cuVS fills
   *  it; seeding only width * degree slots lost recall on clustered data). The single-CTA
   *  kernel draws exactly these, so it stays bit-identical to the CPU. */
  uint32_t init_count;
};
search_plan make_search_plan(const search_params& p, uint32_t k, int64_t rows, uint32_t degree);

/** Number of OpenMP threads for `requested` (0 = OpenMP's default). */
int thread_count(int requested);

}  // namespace cagra::cpu
