// The one internal header the benchmark tools may include (tools/cli's `bench`, bench/): the
// measurement hooks that are not part of the user API. Everything else they use is public.
#pragma once

#include <cstdint>
#include <vector>

#include <cagra/cagra.hpp>

#include "core/backend.hpp"

namespace cagra::bench_hooks {

using core::search_stats;

/** The CPU search of host `queries` with its work counted into *stats (summed): the single-CTA
 *  kernel takes the same steps, so the counts describe it too. ids are [queries.rows, k]. */
void cpu_search_with_stats(const resources& res, const search_params& params, const index& idx,
                           dataset_view queries, uint32_t k, uint32_t* ids, search_stats* stats);

/** cagra::optimize with only some of its steps (the paper's ablation Q-A1), on `res`'s backend:
 *  without `reorder` the kNN list is cut to `degree` in distance order; without `reverse` the
 *  pruned graph is returned as is. */
std::vector<uint32_t> optimize_steps(const resources& res, const knn_graph& knn, uint32_t degree,
                                     reorder_kind reorder, bool reorder_step, bool reverse_step);

/** Steps 2 and 3 of the optimization on the host (core::reverse_and_merge) and its per-row merge
 *  (core::merge_row), for bench/reverse_merge_ab.cpp. */
std::vector<uint32_t> reverse_and_merge(const std::vector<uint32_t>& pruned, int64_t n,
                                        uint32_t degree, int num_threads);
void merge_row(const uint32_t* pruned, const uint32_t* rev, uint32_t n_rev, uint32_t degree,
               uint32_t* out);

/** The host conversion of user rows to the stored type (core::to_storage), for
 *  bench/convert_timing.cpp. */
host_matrix to_storage(dataset_view input, metric m, storage_type s, int num_threads);

/** The allowed rows of a shared filter, ascending (core::allowed_ids: the exact filtered path's
 *  list), for bench/filter_timing.cpp. */
std::vector<uint32_t> allowed_ids(const row_filter& f);

/** The allowed rows of the filter a one-query search of `idx` under `f` runs with
 *  (core::visible_rows: a stamped shared filter's kept AND with the live rows, found by comparing
 *  the words, or with `stamp_trusted` by the stamp alone, as search() does when it checks the
 *  answers), for bench/filter_timing.cpp. */
int64_t visible_allowed_rows(const index& idx, const row_filter& f, bool stamp_trusted);

/** The multi-CTA latency path's initial-node pool of p rows of an n-row index
 *  (core::initial_pool_rows), for bench/multi_cta_sim.cpp. */
std::vector<uint32_t> initial_pool_rows(uint64_t n, uint32_t p);

}  // namespace cagra::bench_hooks
