// Helpers the CUDA search suites share (test_cuda_search.cpp, test_cuda_multi_cta.cpp): a search
// answer, the CPU backend's answer as the oracle, the GPU's answer, the checks every GPU answer
// must pass, and the small inputs both build.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/cagra.hpp>
#include <cagra/plan.hpp>

#include "core/convert.hpp"
#include "cuda/backend.hpp"

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
inline result cpu_run(const cagra::index& idx, const host_matrix& q, uint32_t k,
                      const search_params& p) {
  result r{std::vector<uint32_t>(size_t(q.rows()) * k), std::vector<float>(size_t(q.rows()) * k),
           q.rows(), k};
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
    ASSERT_EQ(std::adjacent_find(row.begin(), row.end()), row.end())
        << what << ": duplicate id, query " << q;
  }
}

/** The CUDA backend's plan for `batch` queries of k neighbors with p (what cagra::search uses). */
inline search_plan gpu_plan(const cagra::index& idx, const search_params& p, uint32_t k,
                            int64_t batch) {
  resources res;
  res.target = backend::cuda;
  return plan_search(res, p, idx, k, batch);
}

/** cuda::search of the rows of q (the user's type) with p as given, `batch` rows per call
 *  (0: all in one). Outputs start as garbage (12345 / -1) so unwritten slots show. */
inline result gpu_search(const cagra::index& idx, const host_matrix& q, uint32_t k,
                         const search_params& p, int64_t batch = 0) {
  p.validate(k, idx.size(), idx.graph_degree());
  const host_matrix qc = core::queries_for(q, idx.storage_dtype(), idx.metric(), 0);
  result r{std::vector<uint32_t>(size_t(q.rows()) * k, 12345u),
           std::vector<float>(size_t(q.rows()) * k, -1.f), q.rows(), k};
  if (batch <= 0) batch = q.rows();
  const size_t row_bytes = qc.size_bytes() / size_t(qc.rows());
  for (int64_t first = 0; first < q.rows(); first += batch) {
    const int64_t n = std::min(batch, q.rows() - first);
    host_matrix part(qc.type(), n, qc.cols());
    std::memcpy(part.data(), qc.row_bytes(first), size_t(n) * row_bytes);
    cuda::search(idx, part, gpu_plan(idx, p, k, n), r.ids.data() + first * k,
                 r.dist.data() + first * k, 0);
  }
  return r;
}

inline index_params small_params(uint32_t d = 32, metric m = metric::l2) {
  index_params p;
  p.graph_degree = d;
  p.intermediate_graph_degree = 2 * d;
  p.metric = m;
  return p;
}

inline search_params itopk(uint32_t m) {
  search_params p;
  p.itopk_size = m;
  return p;
}

/** u8 rows as f32 times `scale`. */
inline host_matrix scaled_f32(const host_matrix& u8, float scale) {
  host_matrix out(dtype::f32, u8.rows(), u8.cols());
  for (int64_t i = 0; i < u8.rows() * u8.cols(); ++i)
    out.as<float>().data[i] = static_cast<const uint8_t*>(u8.data())[i] * scale;
  return out;
}

/** `rows` rows cycling through m's rows. */
inline host_matrix repeat_rows(const host_matrix& m, int64_t rows) {
  host_matrix out(m.type(), rows, m.cols());
  const size_t rb = m.size_bytes() / m.rows();
  for (int64_t i = 0; i < rows; ++i)
    std::memcpy(static_cast<uint8_t*>(out.data()) + i * rb, m.row_bytes(i % m.rows()), rb);
  return out;
}

}  // namespace cagra::test
