// The merge step of a sharded search: each shard returned its own sorted top-k list for every
// query (ids already made global); the answer is the k best of their union by (distance, id).
// S pointers walk the S lists (S is small: a linear scan for the minimum beats a heap), queries
// in parallel. On the host: the lists arrive there anyway (the host API returns host memory),
// and the merge costs O(nq x k x S) comparisons, far below one shard's search (docs/multi_gpu.md
// gives the measured share).
#include <cmath>
#include <limits>

#include <cagra/multi_gpu.hpp>

#include "core/backend.hpp"

namespace cagra {

void merge_topk(const std::vector<matrix_view<const uint32_t>>& ids,
                const std::vector<matrix_view<const float>>& distances, uint32_t k,
                matrix_view<uint32_t> out_ids, matrix_view<float> out_distances) {
  const size_t s_count = ids.size();
  CAGRA_EXPECTS(s_count >= 1 && distances.size() == s_count,
                "merge_topk needs one distance list per id list (got %zu ids, %zu distances)",
                s_count, distances.size());
  const int64_t nq = out_ids.rows;
  CAGRA_EXPECTS(out_ids.data && out_ids.cols == int64_t{k},
                "merge_topk: the output must be [nq, %u] (got [%lld, %lld])", k, (long long)nq,
                (long long)out_ids.cols);
  CAGRA_EXPECTS(!out_distances.data || (out_distances.rows == nq && out_distances.cols == k),
                "merge_topk: the output distances must be [%lld, %u] or empty", (long long)nq, k);
  for (size_t s = 0; s < s_count; ++s)
    CAGRA_EXPECTS(ids[s].rows == nq && distances[s].rows == nq &&
                      ids[s].cols == distances[s].cols && ids[s].data && distances[s].data,
                  "merge_topk: list %zu is not [%lld, w] ids with [%lld, w] distances", s,
                  (long long)nq, (long long)nq);
  constexpr float kInf = std::numeric_limits<float>::infinity();
#pragma omp parallel for num_threads(core::host_threads(0)) schedule(static)
  for (int64_t q = 0; q < nq; ++q) {
    std::vector<int64_t> at(s_count, 0);
    for (uint32_t slot = 0; slot < k; ++slot) {
      size_t best = s_count;
      float best_d = kInf;
      uint32_t best_id = kInvalidId;
      for (size_t s = 0; s < s_count; ++s) {
        if (at[s] >= ids[s].cols) continue;
        const uint32_t id = ids[s].row(q)[at[s]];
        if (id == kInvalidId) continue;  // the list ends here (empty slots come last)
        const float d = distances[s].row(q)[at[s]];
        // (distance, id) order; a NaN distance (never written by a search) sorts last.
        const bool better = best == s_count || d < best_d || (d == best_d && id < best_id) ||
                            (std::isnan(best_d) && !std::isnan(d));
        if (better) {
          best = s;
          best_d = d;
          best_id = id;
        }
      }
      if (best != s_count) ++at[best];
      out_ids.row(q)[slot] = best_id;
      if (out_distances.data) out_distances.row(q)[slot] = best == s_count ? kInf : best_d;
    }
  }
}

}  // namespace cagra
