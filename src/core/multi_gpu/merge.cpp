// The merge step of a sharded search: each shard returned its own sorted top-k list for every
// query (ids already made global); the answer is the k best of their union by (distance, id).
// S pointers walk the S lists (S is small: a linear scan for the minimum beats a heap), queries
// in parallel. On the host: the lists arrive there anyway (the host API returns host memory),
// and the merge costs O(nq x k x S) comparisons, far below one shard's search (docs/multi_gpu.md
// gives the measured share).
#include <algorithm>
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
  const int64_t nt = core::host_threads(0);
#pragma omp parallel num_threads(int(std::min <int64_t>(nt, (nq + 255) / 256))) if (nq >= 512)
  {
    // Per thread: the heads of the S lists (id, distance, end) of the query at hand.
    std::vector<const uint32_t*> id_at(s_count), id_end(s_count);
    std::vector<const float*> d_at(s_count);
#pragma omp for schedule(static)
    for (int64_t q = 0; q < nq; ++q) {
      for (size_t s = 0; s < s_count; ++s) {
        id_at[s] = ids[s].data + q * ids[s].cols;
        id_end[s] = id_at[s] + ids[s].cols;
        d_at[s] = distances[s].data + q * distances[s].cols;
      }
      uint32_t* out = out_ids.data + q * int64_t{k};
      float* out_d = out_distances.data ? out_distances.data + q * int64_t{k} : nullptr;
      for (uint32_t slot = 0; slot < k; ++slot) {
        size_t best = s_count;
        float best_d = kInf;
        uint32_t best_id = kInvalidId;
        for (size_t s = 0; s < s_count; ++s) {
          // A list ends at its first empty slot (kInvalidId; empty slots come last).
          if (id_at[s] == id_end[s] || *id_at[s] == kInvalidId) continue;
          const float d = *d_at[s];
          const uint32_t id = *id_at[s];
          // (distance, id) order; a NaN distance (never written by a search) sorts last.
          if (best == s_count || d < best_d || (d == best_d && id < best_id) ||
              (best_d != best_d && d == d)) {
            best = s;
            best_d = d;
            best_id = id;
          }
        }
        if (best != s_count) {
          ++id_at[best];
          ++d_at[best];
        } else {
          best_d = kInf;
        }
        out[slot] = best_id;
        if (out_d) out_d[slot] = best_d;
      }
    }
  }
}

}  // namespace cagra
