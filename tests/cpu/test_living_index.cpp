// The living index on the CPU backend (docs/living_index.md): extend, remove, compact, labels,
// and their files. Recall is measured on bigann10k against its exact ground truth (or an exact
// oracle over the rows still present), at equal search parameters against a fresh build of the
// same rows, the acceptance rule at 10K scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <set>

#include "test_data.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

resources cpu() {
  resources r;
  r.target = backend::cpu;
  return r;
}

index_params params32() {
  index_params p;
  p.graph_degree = 32;
  p.intermediate_graph_degree = 64;
  return p;
}

/** Rows [first, first + rows) of `m`. */
host_matrix slice(const host_matrix& m, int64_t first, int64_t rows) {
  host_matrix out(m.type(), rows, m.cols());
  std::memcpy(out.data(), m.row_bytes(first), out.size_bytes());
  return out;
}

/** Labels of the k nearest results of every query. */
std::vector<int64_t> search_labels(const index& idx, const host_matrix& q, uint32_t itopk,
                                   uint32_t k = kK) {
  std::vector<int64_t> out(size_t(q.rows()) * k);
  search_params sp;
  sp.itopk_size = itopk;
  search(cpu(), sp, idx, q, k, matrix_view<int64_t>{out.data(), q.rows(), k}, {});
  return out;
}

/** Exact k nearest of each query among `rows` of `base` (u8, squared L2, ties by row), as the
 *  values `label[row]`. */
std::vector<int64_t> exact_labels(const host_matrix& base, const host_matrix& q,
                                  const std::vector<int64_t>& rows,
                                  const std::vector<int64_t>& label, uint32_t k = kK) {
  const int64_t dim = base.cols();
  const auto* x = static_cast<const uint8_t*>(base.data());
  const auto* qq = static_cast<const uint8_t*>(q.data());
  std::vector<int64_t> out(size_t(q.rows()) * k, -1);
  std::vector<std::pair<int64_t, int64_t>> all;
  for (int64_t i = 0; i < q.rows(); ++i) {
    all.clear();
    for (int64_t r : rows) {
      int64_t d = 0;
      for (int64_t j = 0; j < dim; ++j) {
        const int64_t t = int64_t(qq[i * dim + j]) - int64_t(x[r * dim + j]);
        d += t * t;
      }
      all.push_back({d, r});
    }
    const size_t m = std::min<size_t>(k, all.size());
    std::partial_sort(all.begin(), all.begin() + m, all.end());
    for (size_t j = 0; j < m; ++j) out[size_t(i) * k + j] = label[size_t(all[j].second)];
  }
  return out;
}

double recall_of(const std::vector<int64_t>& found, const std::vector<int64_t>& truth,
                 uint32_t k = kK) {
  int64_t hits = 0, wanted = 0;
  for (size_t i = 0; i < truth.size() / k; ++i)
    for (uint32_t a = 0; a < k; ++a) {
      const int64_t t = truth[i * k + a];
      if (t < 0) continue;
      ++wanted;
      hits += std::count(found.begin() + i * k, found.begin() + (i + 1) * k, t) > 0;
    }
  return wanted ? double(hits) / double(wanted) : 1.0;
}

/** Fixed degree, no self loops, no duplicates, ids in range, no edge to a deleted row when
 *  `no_deleted_targets`, labels one-to-one. */
void check_invariants(const index& idx, bool no_deleted_targets) {
  const graph_stats s = analyze(cpu(), idx.graph(), 64);
  EXPECT_EQ(s.invalid_edges, 0);
  EXPECT_EQ(s.self_loops, 0);
  EXPECT_EQ(s.duplicate_edges, 0);
  if (no_deleted_targets) {
    for (int64_t r = 0; r < idx.size(); ++r)
      for (uint32_t t = 0; t < idx.graph_degree(); ++t)
        ASSERT_FALSE(idx.is_deleted(idx.graph().row(r)[t])) << "row " << r;
  }
  if (idx.has_labels()) {
    std::set<int64_t> seen(idx.labels().begin(), idx.labels().end());
    EXPECT_EQ(int64_t(seen.size()), idx.size());
    for (int64_t r = 0; r < idx.size(); r += 97) EXPECT_EQ(idx.row_of(idx.label_of(r)), r);
  }
}

TEST(LivingIndex, ExtendHalfToFullMatchesFullBuild) {
  const real_set s = bigann10k();
  const int64_t n = s.base.rows(), half = n / 2;
  index full = build(cpu(), params32(), s.base);
  index grown = build(cpu(), params32(), slice(s.base, 0, half));
  extend_params ep;
  ep.chunk_size = 1000;
  extend(cpu(), ep, grown, slice(s.base, half, n - half));
  ASSERT_EQ(grown.size(), n);
  check_invariants(grown, true);
  std::vector<int64_t> truth(size_t(s.queries.rows()) * kK);
  for (int64_t i = 0; i < s.queries.rows(); ++i)
    for (uint32_t j = 0; j < kK; ++j)
      truth[size_t(i) * kK + j] =
          static_cast<const uint32_t*>(s.truth.data())[i * s.truth.cols() + j];
  for (uint32_t itopk : {16u, 32u, 64u}) {
    const double rf = recall_of(search_labels(full, s.queries, itopk), truth);
    const double rg = recall_of(search_labels(grown, s.queries, itopk), truth);
    std::printf("itopk %u: full build %.4f, half + extend %.4f\n", itopk, rf, rg);
    EXPECT_GE(rg, rf - 0.01) << "itopk " << itopk;
  }
}

}  // namespace
}  // namespace cagra::test
