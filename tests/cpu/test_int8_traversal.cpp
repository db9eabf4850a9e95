// The int8 traversal (search_params::traversal = int8) on the CPU backend: the codec's
// arithmetic, the exact re-ranking against brute force, recall on real data (bigann10k as f32 and
// f16, every metric) within a point of the exact walk, exact returned distances, filters and
// labels through the same path, the copy following extend (refitted past twice its rows), and
// the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include <cagra/plan.hpp>

#include "core/backend.hpp"
#include "core/int8_traversal.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

struct result {
  std::vector<uint32_t> ids;
  std::vector<float> dist;
  matrix_view<const uint32_t> view(int64_t rows) const { return {ids.data(), rows, kK}; }
};

result run(const cagra::index& idx, const host_matrix& q, search_params p,
           const row_filter& f = {}) {
  result r;
  r.ids.assign(size_t(q.rows()) * kK, 0);
  r.dist.assign(size_t(q.rows()) * kK, 0);
  search(cpu(), p, idx, q, kK, {r.ids.data(), q.rows(), kK}, {r.dist.data(), q.rows(), kK}, f);
  return r;
}

search_params int8_params(uint32_t itopk = 64) {
  search_params p;
  p.itopk_size = itopk;
  p.traversal = traversal_type::int8;
  return p;
}

index build_as(const real_set& s, metric m, storage_type st) {
  index_params p;
  p.metric = m;
  p.graph_degree = 32;
  p.storage = st;
  return build(cpu(), p, s.base);
}

/** Exact neighbors of the queries under `m` (CPU brute force on f32 copies). */
std::vector<uint32_t> truth_of(const real_set& s, metric m) {
  return brute_force_knn(cpu(), m, s.base, s.queries, kK, false).ids;
}

class Int8Traversal : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { set_ = new real_set(bigann10k()); }
  static void TearDownTestSuite() { delete set_; }
  static real_set* set_;
};
real_set* Int8Traversal::set_ = nullptr;

TEST(Int8Codec, L2SharesOneScaleAndCentersEachDimension) {
  host_matrix rows(dtype::f32, 2, 2);
  float* v = rows.as<float>().data;
  v[0] = 0, v[1] = 10, v[2] = 2, v[3] = 30;  // dim 0 in [0, 2], dim 1 in [10, 30]
  const core::int8_codec c = core::fit_int8_codec(rows, metric::l2, 1);
  EXPECT_FLOAT_EQ(c.offset[0], 1.f);
  EXPECT_FLOAT_EQ(c.offset[1], 20.f);
  EXPECT_FLOAT_EQ(c.scale[0], 127.f / 10);  // the widest half-range, for every dimension
  EXPECT_FLOAT_EQ(c.scale[1], 127.f / 10);
  const host_matrix codes = core::encode_rows(c, rows, 1);
  const int8_t* x = static_cast<const int8_t*>(codes.data());
  EXPECT_EQ(x[0], -13);  // round(-1 * 12.7)
  EXPECT_EQ(x[1], -127);
  EXPECT_EQ(x[2], 13);
  EXPECT_EQ(x[3], 127);
  // Queries outside the rows' range are clamped, never wrapped.
  const float q[2] = {100.f, -100.f};
  const host_matrix qc = core::encode_queries(c, matrix_view<const float>{q, 1, 2}, 1);
  EXPECT_EQ(static_cast<const int8_t*>(qc.data())[0], 127);
  EXPECT_EQ(static_cast<const int8_t*>(qc.data())[1], -127);
}

TEST(Int8Codec, InnerProductKeepsTheOrderOfDotProducts) {
  // Rows of very different spreads per dimension: the per-dimension scales keep both.
  host_matrix rows(dtype::f32, 4, 2);
  float* v = rows.as<float>().data;
  const float r[8] = {0.01f, 5, -0.01f, -5, 0.005f, 1, -0.005f, 2};
  std::copy_n(r, 8, v);
  const core::int8_codec c = core::fit_int8_codec(rows, metric::inner_product, 1);
  EXPECT_FLOAT_EQ(c.scale[0], 127.f / 0.01f);
  EXPECT_FLOAT_EQ(c.scale[1], 127.f / 5);
  const host_matrix codes = core::encode_rows(c, rows, 1);
  const float q[2] = {300.f, 1.f};  // both dimensions matter: 3 and 5 for row 0
  const host_matrix qc = core::encode_queries(c, matrix_view<const float>{q, 1, 2}, 1);
  const int8_t* x = static_cast<const int8_t*>(codes.data());
  const int8_t* y = static_cast<const int8_t*>(qc.data());
  std::vector<std::pair<float, int>> exact, coded;
  for (int i = 0; i < 4; ++i) {
    exact.push_back({-(q[0] * r[2 * i] + q[1] * r[2 * i + 1]), i});
    coded.push_back({-float(int(y[0]) * x[2 * i] + int(y[1]) * x[2 * i + 1]), i});
  }
  std::sort(exact.begin(), exact.end());
  std::sort(coded.begin(), coded.end());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(exact[i].second, coded[i].second) << i;
}

TEST_F(Int8Traversal, RerankOfEveryRowIsTheExactSearch) {
  const index idx = build_as(*set_, metric::l2, storage_type::f32);
  const host_matrix q = head(set_->queries, 5);
  host_matrix qf(dtype::f32, q.rows(), q.cols());
  for (int64_t i = 0; i < q.rows() * q.cols(); ++i)
    qf.as<float>().data[i] = static_cast<const uint8_t*>(q.data())[i];
  const uint32_t n = uint32_t(idx.size()) + 1;  // every row, and one kInvalidId to skip
  std::vector<uint32_t> cand(size_t(q.rows()) * n);
  for (int64_t i = 0; i < q.rows(); ++i) {
    for (uint32_t j = 0; j + 1 < n; ++j) cand[size_t(i) * n + j] = n - 2 - j;
    cand[size_t(i) * n + n - 1] = kInvalidId;
  }
  std::vector<uint32_t> ids(size_t(q.rows()) * kK);
  std::vector<float> dist(ids.size());
  core::cpu_backend().rerank(idx, qf, cand.data(), n, kK, ids.data(), dist.data(), cpu());
  const knn_graph exact = brute_force_knn(cpu(), metric::l2, set_->base, q, kK, false);
  EXPECT_EQ(ids, exact.ids);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_FLOAT_EQ(dist[i], exact.distances[i]);
}

TEST_F(Int8Traversal, RerankPadsMissingCandidates) {
  const index idx = build_as(*set_, metric::l2, storage_type::f32);
  const float q[128] = {};
  const uint32_t cand[4] = {7, kInvalidId, 3, kInvalidId};
  uint32_t ids[kK];
  float dist[kK];
  core::cpu_backend().rerank(idx, matrix_view<const float>{q, 1, 128}, cand, 4, kK, ids, dist,
                             cpu());
  EXPECT_NE(ids[0], kInvalidId);
  EXPECT_NE(ids[1], kInvalidId);
  for (uint32_t j = 2; j < kK; ++j) {
    EXPECT_EQ(ids[j], kInvalidId);
    EXPECT_TRUE(std::isinf(dist[j]));
  }
}

TEST_F(Int8Traversal, RecallWithinAPointOfTheExactWalkForEveryMetricAndStorage) {
  for (metric m : {metric::l2, metric::inner_product, metric::cosine}) {
    const std::vector<uint32_t> truth = truth_of(*set_, m);
    const matrix_view<const uint32_t> t{truth.data(), set_->queries.rows(), kK};
    for (storage_type st : {storage_type::f32, storage_type::f16}) {
      SCOPED_TRACE(std::string(to_string(m)) + (st == storage_type::f16 ? " f16" : " f32"));
      const index idx = build_as(*set_, m, st);
      search_params exact;
      exact.itopk_size = 64;
      const double r_exact = recall(run(idx, set_->queries, exact).view(100), t, kK);
      const result r8 = run(idx, set_->queries, int8_params(64));
      const double r_int8 = recall(r8.view(100), t, kK);
      EXPECT_GE(r_int8, r_exact - 0.01) << r_exact;
      EXPECT_GE(r_int8, m == metric::inner_product ? 0.85 : 0.95);
      // Nearest first.
      for (int64_t q = 0; q < 100; ++q)
        for (uint32_t j = 1; j < kK; ++j) ASSERT_LE(r8.dist[q * kK + j - 1], r8.dist[q * kK + j]);
    }
  }
}

TEST_F(Int8Traversal, DistancesAreTheExactOnes) {
  const index idx = build_as(*set_, metric::l2, storage_type::f32);
  const result r = run(idx, set_->queries, int8_params());
  const uint8_t* x = static_cast<const uint8_t*>(set_->base.data());
  const uint8_t* q = static_cast<const uint8_t*>(set_->queries.data());
  for (int64_t i = 0; i < 100; ++i)
    for (uint32_t j = 0; j < kK; ++j) {
      const uint32_t id = r.ids[i * kK + j];
      double d = 0;
      for (int c = 0; c < 128; ++c) {
        const double t = double(q[i * 128 + c]) - double(x[size_t(id) * 128 + c]);
        d += t * t;
      }
      ASSERT_EQ(double(r.dist[i * kK + j]), d) << i << " " << j;  // integers: exact in f32
    }
}

TEST_F(Int8Traversal, PlanShowsTheWalkAndTheRerankDepth) {
  const index idx = build_as(*set_, metric::l2, storage_type::f32);
  search_plan p = plan_search(cpu(), int8_params(64), idx, kK, 100);
  EXPECT_EQ(p.traversal, traversal_type::int8);
  EXPECT_EQ(p.k, kK);
  EXPECT_EQ(p.rerank, 40u);  // min(itopk 64, max(32, 4 k))
  EXPECT_NE(to_string(p).find("traversal=int8 rerank=40"), std::string::npos) << to_string(p);
  search_params s = int8_params(16);
  EXPECT_EQ(plan_search(cpu(), s, idx, kK, 100).rerank, 16u);  // at most itopk
  s.rerank = 12;
  EXPECT_EQ(plan_search(cpu(), s, idx, kK, 100).rerank, 12u);
  EXPECT_EQ(plan_search(cpu(), search_params{}, idx, kK, 100).traversal, traversal_type::exact);
}

TEST_F(Int8Traversal, FiltersAndLabelsGoThroughTheSamePath) {
  index idx = build_as(*set_, metric::l2, storage_type::f32);
  const row_bitset allowed = random_subset(idx.size(), 0.5, 3);
  const result r = run(idx, set_->queries, int8_params(), allowed.view());
  for (uint32_t id : r.ids) {
    ASSERT_TRUE(id == kInvalidId || allowed.test(id)) << id;
  }
  std::vector<int64_t> labels(size_t(idx.size()));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = int64_t(i) * 3 + 1000;
  idx.set_labels(labels);
  std::vector<int64_t> out(100 * kK);
  search(cpu(), int8_params(), idx, set_->queries, kK, matrix_view<int64_t>{out.data(), 100, kK},
         matrix_view<float>{});
  const result rows = run(idx, set_->queries, int8_params());
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], int64_t(rows.ids[i]) * 3 + 1000);
}

TEST_F(Int8Traversal, CopyFollowsExtendAndIsRefittedPastTwiceItsRows) {
  index_params p;
  p.graph_degree = 32;
  p.storage = storage_type::f32;
  index idx = build(cpu(), p, head(set_->base, 5000));
  (void)run(idx, set_->queries, int8_params());  // makes the copy from 5,000 rows
  const auto first = core::int8_copy_of(idx, 1);
  const host_matrix more = slice(set_->base, 5000, 4900);
  extend(cpu(), extend_params{}, idx, more);
  // Followed, not remade: the same copy, the new rows encoded with its codec, the same graph.
  const auto after = core::int8_copy_of(idx, 1);
  EXPECT_EQ(after.get(), first.get());
  ASSERT_EQ(after->walk.size(), idx.size());
  const host_matrix codes = core::encode_rows(after->codec, idx.vectors(), 1);
  EXPECT_EQ(std::memcmp(codes.data(), after->walk.vectors().data(), codes.size_bytes()), 0);
  EXPECT_TRUE(std::equal(idx.graph().data, idx.graph().data + idx.graph().size(),
                         after->walk.graph().data));
  // The new rows are found: each of a few of them is its own nearest neighbor.
  const host_matrix q = head(more, 20);
  const result r = run(idx, q, int8_params());
  for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(r.dist[size_t(i) * kK], 0.f) << i;
  // Past twice the fitted rows the copy is dropped and refitted on next use.
  index small = build(cpu(), p, head(set_->base, 2000));
  (void)run(small, set_->queries, int8_params());
  extend(cpu(), extend_params{}, small, slice(set_->base, 2000, 2500));
  EXPECT_EQ(small.derived_cache(), nullptr);
  EXPECT_EQ(core::int8_copy_of(small, 1)->fitted_rows, 4500);
}

TEST_F(Int8Traversal, RefusesWhatItCannotDo) {
  const index bytes = build_as(*set_, metric::l2, storage_type::same_as_input);  // u8 rows
  EXPECT_THROW(run(bytes, set_->queries, int8_params()), error);
  const index idx = build_as(*set_, metric::l2, storage_type::f32);
  search_params p = int8_params(64);
  p.rerank = kK - 1;
  EXPECT_THROW(run(idx, set_->queries, p), error);
  p.rerank = 65;
  EXPECT_THROW(run(idx, set_->queries, p), error);
}

// search_params::stored_rows: parsed and printed by name; `host` needs the int8 traversal (an
// exact walk reads every row it visits); the CPU reads host rows anyway, so any row width passes
// there and the answers are those of `automatic` (the GPU's side: tests/cuda/test_cuda_host_rows).
TEST_F(Int8Traversal, StoredRowsOnTheHost) {
  EXPECT_EQ(parse_rows_location("host"), rows_location::host);
  EXPECT_EQ(parse_rows_location("device"), rows_location::device);
  EXPECT_EQ(parse_rows_location("auto"), rows_location::automatic);
  EXPECT_STREQ(to_string(rows_location::host), "host");
  EXPECT_THROW(parse_rows_location("disk"), error);
  const index idx = build_as(*set_, metric::l2, storage_type::f32);
  search_params exact;
  exact.stored_rows = rows_location::host;
  try {
    run(idx, set_->queries, exact);
    ADD_FAILURE() << "stored_rows = host with the exact walk";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("stored_rows = host needs traversal = int8"),
              std::string::npos)
        << e.what();
  }
  search_params p = int8_params();
  p.stored_rows = rows_location::host;
  const std::string plan = to_string(plan_search(cpu(), p, idx, kK, 100));
  EXPECT_NE(plan.find(" traversal=int8 rerank=40 stored_rows=host"), std::string::npos) << plan;
  const result host = run(idx, set_->queries, p);
  EXPECT_EQ(host.ids, run(idx, set_->queries, int8_params()).ids);
  host_matrix x(dtype::f32, 500, 6);  // 24-byte rows: only the GPU needs whole 16-byte chunks
  for (int64_t i = 0; i < x.rows() * 6; ++i) x.as<float>().data[i] = float(i % 97);
  index_params ip;
  ip.graph_degree = 8;
  const index narrow = build(cpu(), ip, x);
  EXPECT_NO_THROW(run(narrow, head(x, 5), p));
}

}  // namespace
}  // namespace cagra::test
