// CPU search: recall on real data, every metric and element type, the paper's knobs (search
// width, forgettable hash), batch independence, and edge cases (k = itopk, tiny indexes,
// identical vectors).
#include <gtest/gtest.h>

#include "test_data.hpp"

namespace cagra::test {
namespace {

struct result {
  std::vector<uint32_t> ids;
  std::vector<float> dist;
  matrix_view<const uint32_t> view(int64_t rows, uint32_t k) const { return {ids.data(), rows, k}; }
};

result run(const cagra::index& idx, const host_matrix& q, uint32_t k, search_params p = {}) {
  result r;
  r.ids.assign(size_t(q.rows()) * k, 0);
  r.dist.assign(size_t(q.rows()) * k, 0);
  search({}, p, idx, q, k, {r.ids.data(), q.rows(), k}, {r.dist.data(), q.rows(), k});
  return r;
}

index_params small_params(uint32_t d = 32) {
  index_params p;
  p.graph_degree = d;
  p.intermediate_graph_degree = 2 * d;
  return p;
}

class SearchBigann : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    set_ = new real_set(bigann10k());
    idx_ = new cagra::index(build({}, small_params(), set_->base));
  }
  static void TearDownTestSuite() {
    delete idx_;
    delete set_;
  }
  static real_set* set_;
  static cagra::index* idx_;
};
real_set* SearchBigann::set_ = nullptr;
cagra::index* SearchBigann::idx_ = nullptr;

TEST_F(SearchBigann, RecallReaches99) {
  search_params p;
  p.itopk_size = 64;
  result r = run(*idx_, set_->queries, 10, p);
  EXPECT_GE(recall(r.view(100, 10), set_->truth.as<uint32_t>(), 10), 0.99);
  for (size_t i = 0; i < r.ids.size(); ++i) ASSERT_LT(r.ids[i], idx_->size());
  for (int64_t q = 0; q < 100; ++q)
    for (int j = 1; j < 10; ++j) ASSERT_LE(r.dist[q * 10 + j - 1], r.dist[q * 10 + j]);
}

TEST_F(SearchBigann, RecallGrowsWithItopk) {
  double prev = 0;
  for (uint32_t m : {10u, 32u, 128u}) {
    search_params p;
    p.itopk_size = m;
    double rc =
        recall(run(*idx_, set_->queries, 10, p).view(100, 10), set_->truth.as<uint32_t>(), 10);
    EXPECT_GE(rc, prev - 0.005) << "itopk " << m;
    prev = rc;
  }
  EXPECT_GE(prev, 0.995);
}

TEST_F(SearchBigann, SearchWidthDoesNotLoseRecall) {
  // The iteration budget must not shrink with search_width (cuvs#1187).
  for (uint32_t w : {1u, 2u, 4u, 8u}) {
    search_params p;
    p.itopk_size = 64;
    p.search_width = w;
    EXPECT_GE(
        recall(run(*idx_, set_->queries, 10, p).view(100, 10), set_->truth.as<uint32_t>(), 10),
        0.99)
        << "search_width " << w;
  }
}

TEST_F(SearchBigann, ForgettableHashKeepsRecall) {
  for (uint32_t interval : {1u, 2u, 4u}) {
    search_params p;
    p.itopk_size = 64;
    p.hash_bits = 10;
    p.hash_reset_interval = interval;
    EXPECT_GE(
        recall(run(*idx_, set_->queries, 10, p).view(100, 10), set_->truth.as<uint32_t>(), 10),
        0.985)
        << "reset every " << interval;
  }
}

TEST_F(SearchBigann, SameAnswerInAnyBatch) {
  result all = run(*idx_, set_->queries, 10);
  for (int64_t q : {0, 37, 99}) {
    host_matrix one(dtype::u8, 1, 128);
    std::memcpy(one.data(), set_->queries.row_bytes(q), 128);
    result r = run(*idx_, one, 10);
    EXPECT_TRUE(std::equal(r.ids.begin(), r.ids.end(), all.ids.begin() + q * 10)) << "query " << q;
  }
}

TEST_F(SearchBigann, KEqualsItopkAndKAboveItopk) {
  search_params p;
  p.itopk_size = 16;
  result a = run(*idx_, set_->queries, 16, p);   // k == itopk
  result b = run(*idx_, set_->queries, 100, p);  // k > itopk: itopk is raised to k
  EXPECT_GE(recall(b.view(100, 100), set_->truth.as<uint32_t>(), 100), 0.95);
  for (uint32_t id : a.ids) ASSERT_LT(id, idx_->size());
}

TEST(Search, FashionMnistSubset) {
  real_set f = fashion(20000, 200);
  cagra::index idx = build({}, small_params(), f.base);
  search_params p;
  p.itopk_size = 64;
  EXPECT_GE(recall(run(idx, f.queries, 10, p).view(200, 10), f.truth.as<uint32_t>(), 10), 0.97);
}

TEST(Search, InnerProductCosineAndFloatStorage) {
  real_set s = bigann10k();
  host_matrix base(dtype::f32, s.base.rows(), 128), q(dtype::f32, 100, 128);
  for (int64_t i = 0; i < base.rows() * 128; ++i)
    base.as<float>().data[i] = s.base.as<uint8_t>().data[i] / 255.0f;
  for (int64_t i = 0; i < 100 * 128; ++i)
    q.as<float>().data[i] = s.queries.as<uint8_t>().data[i] / 255.0f;
  for (metric m : {metric::l2, metric::inner_product, metric::cosine}) {
    index_params ip = small_params();
    ip.metric = m;
    cagra::index idx = build({}, ip, base);
    knn_graph gt = brute_force_knn({}, m, base, q, 10);
    search_params p;
    p.itopk_size = 128;
    EXPECT_GE(recall(run(idx, q, 10, p).view(100, 10), gt.view(), 10), 0.95) << to_string(m);
  }
}

TEST(Search, HalfStorageAndInt8) {
  real_set s = bigann10k();
  index_params ip = small_params();
  ip.storage = storage_type::f16;
  cagra::index idx = build({}, ip, s.base);
  EXPECT_EQ(idx.storage_dtype(), dtype::f16);
  search_params p;
  p.itopk_size = 64;
  EXPECT_GE(recall(run(idx, s.queries, 10, p).view(100, 10), s.truth.as<uint32_t>(), 10), 0.99);
  host_matrix base8(dtype::i8, s.base.rows(), 128), q8(dtype::i8, 100, 128);
  for (int64_t i = 0; i < base8.rows() * 128; ++i)
    base8.as<int8_t>().data[i] = int8_t(s.base.as<uint8_t>().data[i] / 2);
  for (int64_t i = 0; i < 100 * 128; ++i)
    q8.as<int8_t>().data[i] = int8_t(s.queries.as<uint8_t>().data[i] / 2);
  cagra::index idx8 = build({}, small_params(), base8);
  knn_graph gt = brute_force_knn({}, metric::l2, base8, q8, 10);
  EXPECT_GE(recall(run(idx8, q8, 10, p).view(100, 10), gt.view(), 10), 0.98);
}

TEST(Search, TinyIndexAndIdenticalVectors) {
  host_matrix tiny(dtype::f32, 9, 4);
  for (int i = 0; i < 36; ++i) tiny.as<float>().data[i] = float(i % 7) + float(i / 4);
  index_params ip = small_params(4);
  ip.intermediate_graph_degree = 8;  // rows = d_init + 1
  cagra::index idx = build({}, ip, tiny);
  result r = run(idx, tiny, 9);  // k = n: every vector, each exactly once
  for (int q = 0; q < 9; ++q) {
    std::vector<uint32_t> row(r.ids.begin() + q * 9, r.ids.begin() + q * 9 + 9);
    EXPECT_EQ(row[0], uint32_t(q));
    std::sort(row.begin(), row.end());
    for (uint32_t j = 0; j < 9; ++j) EXPECT_EQ(row[j], j);
  }
  host_matrix same(dtype::u8, 200, 16);
  std::fill_n(static_cast<uint8_t*>(same.data()), same.size_bytes(), uint8_t(7));
  cagra::index idx_same = build({}, small_params(8), same);
  result s = run(idx_same, head(same, 3), 10);
  for (int q = 0; q < 3; ++q) {
    std::vector<uint32_t> row(s.ids.begin() + q * 10, s.ids.begin() + q * 10 + 10);
    std::sort(row.begin(), row.end());
    EXPECT_EQ(std::unique(row.begin(), row.end()), row.end());
    for (float d : s.dist) EXPECT_EQ(d, 0.0f);
  }
}

}  // namespace
}  // namespace cagra::test
