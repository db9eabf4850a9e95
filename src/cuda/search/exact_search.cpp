// cuda::exact_search: the exact path of a filtered search on the GPU (search_plan::filter_path
// == exact, chosen by core/plan.cpp when the filter allows few rows). A shared bitset runs the
// cuBLAS brute force on its allowed rows alone (at 1% of 1M rows, 10K rows), gathered on the
// device from the index's cached copy (a host gather + upload cost 1 ms a call for 128-d u8
// rows and 5 ms for 384-d f32 at batch 1); up to 16 queries of k <= 32 run one kernel over the
// allowed rows instead (exact_rows.cu); per-query bitsets run it over every row with each
// query's bitset as a mask (brute_force_masked). Ids are mapped back to index rows; slots beyond
// the allowed rows hold kInvalidId and +inf.
#include <algorithm>
#include <cstring>
#include <limits>

#include "core/filter.hpp"
#include "cuda/backend.hpp"
#include "cuda/search/exact_rows.hpp"

namespace cagra::cuda {

void exact_search(const index& idx, dataset_view queries, const search_plan& plan,
                  const row_filter& filter, uint32_t* ids, float* distances, int device) {
  const uint32_t k = plan.k;
  const int64_t nq = queries.rows;
  CAGRA_EXPECTS(k <= brute_force_max_k(),
                "the exact filtered search on the GPU takes k <= %u (got %u): use the CPU backend",
                brute_force_max_k(), k);
  if (nq == 0) return;
  const host_matrix& x = idx.vectors();
  if (filter.queries != 0) {
    const knn_graph r = brute_force_masked(x, queries, idx.metric(), k, filter.words,
                                           row_filter::words_for(idx.size()), device);
    std::memcpy(ids, r.ids.data(), r.ids.size() * sizeof(uint32_t));
    if (distances) std::memcpy(distances, r.distances.data(), r.distances.size() * sizeof(float));
    return;
  }
  const std::vector<uint32_t> rows = core::allowed_ids(filter);
  // A few queries: one kernel over the allowed rows (exact_rows.cu) instead of the brute force's
  // gather, norms, product and selection, whose fixed costs dominate a small call.
  if (!rows.empty() && exact_rows_takes(idx, nq, k)) {
    exact_rows(idx, rows, queries, k, ids, distances, device);
    return;
  }
  const uint32_t found = static_cast<uint32_t>(std::min<size_t>(k, rows.size()));
  knn_graph r;
  if (found > 0) r = brute_force_rows(idx, rows, queries, found, device);
  for (int64_t q = 0; q < nq; ++q) {
    for (uint32_t j = 0; j < k; ++j) {
      const bool has = j < found;
      ids[q * k + j] = has ? rows[r.ids[q * found + j]] : kInvalidId;
      if (distances)
        distances[q * k + j] =
            has ? r.distances[q * found + j] : std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace cagra::cuda
