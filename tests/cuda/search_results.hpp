// Helpers the CUDA search suites share (test_cuda_search.cpp, test_cuda_multi_cta.cpp): a search
// answer, the CPU backend's answer as the oracle, and the checks every GPU answer must pass.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/cagra.hpp>

namespace cagra::test {

/** One search's ids and distances, [rows, k]. */
struct result {
  std::vector<uint32_t> ids;
  std::vector<float> dist;
  int64_t rows = 0;
  uint32_t k = 0;
  matrix_view<const uint32_t> view() const { return {ids.data(), rows, k}; }
};

/** The CPU backend's search of q (the oracle). */
inline result cpu_run(const cagra::index& idx, const host_matrix& q, uint32_t k, const search_params& p) {
  result r{std::vector<uint32_t>(size_t(q.rows()) * k), std::vector<float>(size_t(q.rows()) * k), q.rows(), k};
  resources res;
  res.target = backend::cpu;
  search(res, p, idx, q, k, {r.ids.data(), q.rows(), k}, {r.dist.data(), q.rows(), k});
  return r;
}

/** Every id < n, no duplicates in a row, distances ascending. */
inline void expect_well_formed(const result& r, int64_t n, const std::string& what) {
  for (int64_t q = 0; q < r.rows; ++q) {
    std::vector<uint32_t> row(r.ids.begin() + q * r.k, r.ids.begin() + (q + 1) * r.k);
    for (uint32_t j = 0; j < r.k; ++j) {
      ASSERT_LT(row[j], uint64_t(n)) << what << ": query " << q << " slot " << j;
      if (j) {
        ASSERT_LE(r.dist[q * r.k + j - 1], r.dist[q * r.k + j]) << what << ": query " << q;
      }
    }
    std::sort(row.begin(), row.end());
    ASSERT_EQ(std::adjacent_find(row.begin(), row.end()), row.end()) << what << ": duplicate id, query " << q;
  }
}

}  // namespace cagra::test
