/**
 * @file plan.hpp
 * @brief What a build or a search will do, with every automatic value resolved.
 *
 * A parameter of 0 (or an `automatic` enum) lets the library choose. The choice depends on the
 * data, the batch and the machine, and is made once, here: `plan_build` and `plan_search` turn
 * (parameters, data, batch, resources) into a complete plan, and the backends and GPU kernel
 * launchers read only the plan. `to_string` prints it, so a user can see what "auto" chose (the
 * CLI's `--explain`, the `plan` field of `cagra bench --json`, Python's `Index.explain`).
 *
 * @code
 *   cagra::search_plan p = cagra::plan_search({}, cagra::search_params{}, idx, 10, 1);
 *   std::puts(cagra::to_string(p).c_str());
 *   // on a 132-SM GPU: backend=cuda algo=multi_cta ... ctas_per_query=64 (the automatic CTA
 *   // count for batch 1: docs/cuda.md)
 * @endcode
 */
#pragma once

#include <cstdint>
#include <string>

#include <cagra/filter.hpp>
#include <cagra/index.hpp>
#include <cagra/params.hpp>
#include <cagra/types.hpp>

namespace cagra {

/** Where a build's graph optimization (paper §III-B) runs. */
enum class optimize_path : uint32_t {
  device = 0,  ///< every step on the GPU (the kNN graph, pruned graph and reverse-edge sort)
  /** Detour counting and pruning on the GPU (the kNN ids and the pruned graph on the device),
   *  reverse edges and merge on the host: the same graph, less device memory. */
  prune_on_device = 1,
  host = 2,  ///< every step on the host (the CPU backend, or a GPU without room for the ids)
};
const char* to_string(optimize_path o);

/** How a build will run. */
struct build_plan {
  backend target = backend::cpu;           ///< cpu or cuda (never automatic)
  knn_algo knn = knn_algo::brute_force;    ///< brute_force or nn_descent (never automatic)
  uint32_t graph_degree = 0;               ///< d
  uint32_t intermediate_graph_degree = 0;  ///< d_init: 2d when automatic, at most rows - 1
  dtype storage = dtype::f32;              ///< element type the index stores
  /** Peak device memory of the build in bytes (the larger of its kNN and optimize stages, from
   *  a model of their allocations: docs/cuda.md); 0 on the CPU. */
  uint64_t device_bytes = 0;
  /** The kNN graph is built over overlapping partitions of at most this many rows (0: the
   *  whole set in one pass): index_params::knn.partition_rows, or on the GPU the largest
   *  partition that fits when the whole set does not. */
  int64_t partition_rows = 0;
  /** Where the graph optimization runs (the CPU backend: host). */
  optimize_path optimize = optimize_path::host;
  /** The device memory the plan was fitted to: min(max_device_memory, the device's free
   *  memory); 0 on the CPU. */
  uint64_t device_budget = 0;
  /** Peak host memory the GPU build allocates (a model: the stored vectors, the kNN lists, one
   *  partition's rows and lists, the optimization's host arrays; the caller's input is not
   *  counted: docs/large_builds.md); 0 on the CPU. */
  uint64_t host_bytes = 0;
};

/** Resolves `params` for a dataset of `rows` x `dim` of type `input` on `res`'s backend.
 *  Throws cagra::error for invalid parameters or a backend that is not available.
 *  device_bytes needs the dimension: with `dim` = 0 (unknown) it stays 0. */
build_plan plan_build(const resources& res, const index_params& params, int64_t rows, int64_t dim,
                      dtype input);
/** plan_build without the dimension (device_bytes stays 0): the form before device_bytes. */
inline build_plan plan_build(const resources& res, const index_params& params, int64_t rows,
                             dtype input) {
  return plan_build(res, params, rows, 0, input);
}

/** How the query batch travels between the host and the GPU kernels (CUDA backend only). */
enum class search_io : uint32_t {
  none = 0,        ///< the CPU backend: no transfers
  copy = 1,        ///< queries copied to the device, results copied back (large batches)
  mapped = 2,      ///< kernels read and write pinned host memory in place (<= 256 queries)
  host_merge = 3,  ///< multi-CTA, <= 16 queries: each CTA's list polled and merged on the host
  persistent = 4,  ///< batch 1 through a resident kernel (search_params::persistent)
  device = 5,      ///< queries and results already in device memory
};

/** The filter of a search call (cagra/filter.hpp). */
enum class filter_kind : uint32_t {
  none = 0,       ///< no filter
  shared = 1,     ///< one bitset for the whole batch
  per_query = 2,  ///< one bitset per query
};

/** One search call, resolved. The multi-CTA kernel's `max_iterations`, `min_iterations` and
 *  `initial_nodes` are per CTA. */
struct search_plan {
  backend target = backend::cpu;              ///< cpu or cuda (never automatic)
  search_algo algo = search_algo::automatic;  ///< cuda: single_cta or multi_cta; cpu:
                                              ///< automatic, or multi_cta (walkers on threads)
  search_io io = search_io::none;
  uint32_t k = 0;
  uint32_t itopk = 0;  ///< max(itopk_size, k)
  uint32_t search_width = 0;
  uint32_t max_iterations = 0, min_iterations = 0;
  uint32_t random_samplings = 0;     ///< random draws per initial slot
  uint32_t initial_nodes = 0;        ///< random initial nodes per query (per CTA: multi-CTA)
  uint32_t hash_bits = 0;            ///< log2 of the visited-hash slots
  uint32_t hash_reset_interval = 0;  ///< 0: reset only when nearly full
  uint64_t seed = 0;
  // The GPU kernels' launch shape (0 on the CPU, but ctas_per_query: the CPU's walkers).
  uint32_t team_size = 0;       ///< lanes per distance
  uint32_t block_size = 0;      ///< threads per CTA
  uint32_t ctas_per_query = 0;  ///< 1 for single-CTA; multi-CTA: from the batch unless
                                ///< search_width or algo is set (docs/cuda.md)
  /** io == persistent: how long the resident kernel waits for the next query (microseconds,
   *  search_params::persistent_lifetime_us); 0 otherwise. */
  uint32_t persistent_lifetime_us = 0;
  /** io == persistent with the automatic shape: rows of the fixed initial-node pool each CTA
   *  holds in shared memory and scans for its first candidates, in place of random initial
   *  nodes (initial_nodes is then 0; docs/cuda.md, "Initial nodes from a pool"); 0 otherwise. */
  uint32_t pool_rows_per_cta = 0;
  // Filtered search (filter != none).
  filter_kind filter = filter_kind::none;
  filter_algo filter_path = filter_algo::automatic;  ///< graph or exact when filtered
  /** Rows the filter allows (per_query: the fewest any query is allowed). */
  int64_t allowed_rows = 0;
  /** io == persistent under one shared bitset that allows nearly every row (an index with a
   *  few deleted rows, a filter that excludes a few): the kernel walks unfiltered and the host
   *  drops the disallowed rows as it merges the CTAs' lists (docs/filter.md). */
  bool filter_in_merge = false;
  /** int8: the walk (and the kernel shape above) runs on the index's int8 copy and returns
   *  `rerank` candidates, which are re-ranked exactly into the k results. */
  traversal_type traversal = traversal_type::exact;
  uint32_t rerank = 0;  ///< candidates re-ranked per query (int8 traversal), else 0
  /** int8 traversal on the GPU: where the re-ranking reads the stored rows
   *  (search_params::stored_rows, as asked: `automatic` is settled by the device copy). */
  rows_location stored_rows = rows_location::automatic;
  /** Set by search() for a cosine index, never by plan_search: the caller's f32 rows go to the
   *  GPU as they are, and are checked and normalized there (with the host's arithmetic, the
   *  same bits) instead of in a host copy (a large batch through the copy pipeline). */
  bool normalize_on_device = false;
};

/** Resolves `params` for `batch` queries of `k` neighbors on `idx`, on the backend `res`
 *  selects (`automatic`: the GPU when one is visible and its kernels take the search, else the
 *  CPU), with queries in `space` (device memory always means the GPU), under `filter` (counts
 *  its allowed rows: the filtered path and list length depend on them). Throws cagra::error for
 *  invalid parameters or a filter of the wrong shape, as search() would. */
search_plan plan_search(const resources& res, const search_params& params, const index& idx,
                        uint32_t k, int64_t batch, memory_space space = memory_space::host,
                        const row_filter& filter = {});

/** One line, `name=value` pairs separated by spaces, e.g. "backend=cpu knn=nn_descent ...". */
std::string to_string(const build_plan& p);
std::string to_string(const search_plan& p);

const char* to_string(search_io io);
const char* to_string(filter_kind f);

}  // namespace cagra
