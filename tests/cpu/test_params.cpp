// Bad input through the C++ API: each case must throw cagra::error with a message that says what
// is wrong (never crash, never return a silently wrong answer).
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include <cagra/plan.hpp>

#include "core/plan.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const cagra::error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no cagra::error thrown";
  return "";
}

host_matrix random_f32(int64_t rows, int64_t cols, uint32_t seed = 1) {
  host_matrix m(dtype::f32, rows, cols);
  uint32_t s = seed;
  for (int64_t i = 0; i < rows * cols; ++i) {
    s = s * 1664525u + 1013904223u;
    m.as<float>().data[i] = float(s >> 8) / float(1 << 24);
  }
  return m;
}

index_params params(uint32_t d, uint32_t k) {
  index_params p;
  p.graph_degree = d;
  p.intermediate_graph_degree = k;
  return p;
}

class ParamsErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = random_f32(300, 8);
    idx_ = std::make_unique<cagra::index>(build({}, params(8, 16), base_));
    q_ = random_f32(5, 8, 9);
    ids_.assign(5 * 10, 0);
  }
  void search_k(uint32_t k, search_params p = {}) {
    ids_.assign(5 * size_t(k), 0);
    search({}, p, *idx_, q_, k, {ids_.data(), 5, k}, {});
  }
  host_matrix base_, q_;
  std::unique_ptr<cagra::index> idx_;
  std::vector<uint32_t> ids_;
};

TEST_F(ParamsErrors, KZero) {
  EXPECT_NE(error_of([&] { search_k(0); }).find("k must be >= 1"), std::string::npos);
}

TEST_F(ParamsErrors, KAboveIndexSize) {
  EXPECT_NE(error_of([&] { search_k(301); }).find("exceeds the index size"), std::string::npos);
}

TEST_F(ParamsErrors, QueryDimensionMismatch) {
  host_matrix q = random_f32(5, 9);
  EXPECT_NE(error_of([&] {
              search({}, {}, *idx_, q, 10, {ids_.data(), 5, 10}, {});
            }).find("dimension 9"),
            std::string::npos);
}

TEST_F(ParamsErrors, OutputShapeMismatch) {
  EXPECT_NE(error_of([&] {
              search({}, {}, *idx_, q_, 10, {ids_.data(), 4, 10}, {});
            }).find("neighbors must be"),
            std::string::npos);
}

TEST_F(ParamsErrors, AllViolationsInOneMessage) {
  search_params p;
  p.itopk_size = 0;
  p.search_width = 0;
  p.team_size = 3;
  p.hash_bits = 2;
  std::string msg = error_of([&] { search_k(10, p); });
  for (const char* part : {"itopk_size", "search_width", "team_size", "hash_bits"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
}

TEST_F(ParamsErrors, PersistentLifetimeRange) {
  search_params p;
  for (uint32_t bad : {0u, 199u, 10'000'001u}) {
    p.persistent_lifetime_us = bad;
    EXPECT_NE(error_of([&] {
                search_k(10, p);
              }).find("persistent_lifetime_us must be in [200, 10000000]"),
              std::string::npos)
        << bad;
  }
  p.persistent_lifetime_us = 200;
  search_k(10, p);
}

TEST_F(ParamsErrors, SearchWidthRange) {
  search_params p;
  p.search_width = 129;
  EXPECT_NE(error_of([&] { search_k(10, p); }).find("search_width must be in [1, 128]"),
            std::string::npos);
  p.search_width = 128;  // the multi-CTA kernel's most CTAs a query; the CPU takes it as parents
  search_k(10, p);
}

TEST_F(ParamsErrors, NanInQueries) {
  q_.as<float>().data[3] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(error_of([&] { search_k(10); }).find("NaN"), std::string::npos);
}

TEST(BuildErrors, FewerRowsThanDegree) {
  host_matrix base = random_f32(20, 4);
  std::string msg = error_of([&] { build({}, params(16, 32), base); });
  EXPECT_NE(msg.find("20 rows"), std::string::npos) << msg;
}

TEST(BuildErrors, DegreeAboveIntermediateAndZero) {
  host_matrix base = random_f32(100, 4);
  EXPECT_NE(error_of([&] { build({}, params(32, 16), base); }).find("must be >= graph_degree"),
            std::string::npos);
  EXPECT_NE(error_of([&] { build({}, params(0, 16), base); }).find("graph_degree must be >= 1"),
            std::string::npos);
}

TEST(BuildErrors, NanAndInfInData) {
  host_matrix base = random_f32(100, 4);
  base.as<float>().data[77] = std::numeric_limits<float>::infinity();
  EXPECT_NE(error_of([&] { build({}, params(4, 8), base); }).find("row 19"), std::string::npos);
  base.as<float>().data[77] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_NE(error_of([&] { build({}, params(4, 8), base); }).find("NaN"), std::string::npos);
}

TEST(BuildErrors, EmptyDataset) {
  host_matrix empty(dtype::f32, 0, 8);
  EXPECT_NE(error_of([&] { build({}, params(4, 8), empty); }).find("empty"), std::string::npos);
}

TEST(BuildErrors, CosineWithZeroRow) {
  host_matrix base = random_f32(100, 4);
  for (int j = 0; j < 4; ++j) base.as<float>().data[4 * 10 + j] = 0;
  index_params p = params(4, 8);
  p.metric = metric::cosine;
  EXPECT_NE(error_of([&] { build({}, p, base); }).find("row 10 is all zeros"), std::string::npos);
}

TEST(BuildErrors, UnsupportedElementType) {
  host_matrix ids(dtype::u32, 100, 4);
  EXPECT_NE(error_of([&] { build({}, params(4, 8), ids); }).find("u32"), std::string::npos);
}

TEST(BuildErrors, BadKnnSettings) {
  host_matrix base = random_f32(100, 4);
  index_params p = params(4, 8);
  p.knn.sample_rate = 0;
  p.knn.max_iterations = 0;
  std::string msg = error_of([&] { build({}, p, base); });
  EXPECT_NE(msg.find("sample_rate"), std::string::npos);
  EXPECT_NE(msg.find("max_iterations"), std::string::npos);
}

TEST(SearchErrors, NonIntegerQueriesForByteIndex) {
  host_matrix base(dtype::u8, 100, 4);
  for (int i = 0; i < 400; ++i) static_cast<uint8_t*>(base.data())[i] = uint8_t(i * 37);
  cagra::index idx = build({}, params(4, 8), base);
  host_matrix q(dtype::f32, 1, 4);
  for (int j = 0; j < 4; ++j) q.as<float>().data[j] = 0.5f;
  std::vector<uint32_t> ids(5);
  EXPECT_NE(error_of([&] {
              search({}, {}, idx, q, 5, {ids.data(), 1, 5}, {});
            }).find("integers"),
            std::string::npos);
  q.as<float>().data[0] = 300;
  EXPECT_THROW(search({}, {}, idx, q, 5, {ids.data(), 1, 5}, {}), cagra::error);
  for (int j = 0; j < 4; ++j) q.as<float>().data[j] = 3;  // exact integers are fine
  EXPECT_NO_THROW(search({}, {}, idx, q, 5, {ids.data(), 1, 5}, {}));
}

TEST(SearchErrors, CudaBackendWhenNotAvailable) {
  if (cuda_available()) GTEST_SKIP() << "this build has a usable CUDA backend";
  host_matrix base = random_f32(100, 4);
  resources res;
  res.target = backend::cuda;
  EXPECT_NE(error_of([&] { build(res, params(4, 8), base); }).find("CUDA"), std::string::npos);
}

TEST(SearchErrors, DeviceLabelsWithoutAGpu) {
  if (cuda_available()) GTEST_SKIP() << "this build has a usable CUDA backend";
  host_matrix base = random_f32(100, 4);
  const index idx = build({}, params(4, 8), base);
  // Refused before any pointer is read: host buffers stand in for device ones.
  std::vector<float> q(4, 0.5f);
  std::vector<int64_t> labels(5);
  const dataset_view device_q(q.data(), dtype::f32, 1, 4, memory_space::device);
  const matrix_view<int64_t> device_labels{labels.data(), 1, 5, memory_space::device};
  EXPECT_NE(error_of([&] {
              search({}, {}, idx, device_q, 5, device_labels, {});
            }).find("no CUDA device is visible"),
            std::string::npos);
  resources cpu;
  cpu.target = backend::cpu;
  EXPECT_NE(error_of([&] {
              search(cpu, {}, idx, device_q, 5, device_labels, {});
            }).find("CPU backend was asked for"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              search({}, {}, idx, dataset_view(q.data(), dtype::f32, 1, 4), 5, device_labels, {});
            }).find("must both be in host memory or both in device memory"),
            std::string::npos);
}

// The library's automatic values, as every surface (C++, the CLI, Python) resolves them: an
// intermediate degree of 0 is 2 x graph_degree capped at rows - 1, an itopk below k is raised to
// k. python/tests/test_surfaces.py checks that the CLI and Python print the same plans.
TEST(Plan, DefaultsResolve) {
  resources cpu;
  cpu.target = backend::cpu;
  const index_params defaults;
  EXPECT_EQ(defaults.intermediate_graph_degree, 0u) << "0 = automatic";
  build_plan b = plan_build(cpu, defaults, 1000, 8, dtype::f32);
  EXPECT_EQ(b.graph_degree, defaults.graph_degree);
  EXPECT_EQ(b.intermediate_graph_degree, 2 * defaults.graph_degree);
  EXPECT_EQ(b.target, backend::cpu);
  EXPECT_EQ(b.knn, knn_algo::brute_force) << "1000 rows: brute force";
  EXPECT_EQ(plan_build(cpu, params(16, 0), 1000, 8, dtype::f32).intermediate_graph_degree, 32u);
  EXPECT_EQ(plan_build(cpu, params(64, 0), 100, 8, dtype::f32).intermediate_graph_degree, 99u)
      << "rows - 1";
  EXPECT_EQ(plan_build(cpu, params(16, 48), 1000, 8, dtype::f32).intermediate_graph_degree, 48u)
      << "as given";
  EXPECT_NE(to_string(b).find("intermediate_graph_degree=128"), std::string::npos) << to_string(b);

  host_matrix base = random_f32(300, 8);
  const cagra::index idx = build(cpu, params(8, 0), base);
  search_params sp;
  EXPECT_EQ(plan_search(cpu, sp, idx, 10, 1).itopk, sp.itopk_size) << "default itopk >= k: kept";
  sp.itopk_size = 4;
  const search_plan s = plan_search(cpu, sp, idx, 10, 5);
  EXPECT_EQ(s.itopk, 10u) << "itopk < k is raised to k, never an error";
  EXPECT_EQ(s.k, 10u);
  EXPECT_NE(to_string(s).find(" itopk=10 "), std::string::npos) << to_string(s);
  // ... and the search runs with it.
  host_matrix q = random_f32(5, 8, 9);
  std::vector<uint32_t> ids(5 * 10);
  EXPECT_NO_THROW(search(cpu, sp, idx, q, 10, {ids.data(), 5, 10}, {}));
  for (uint32_t id : ids) EXPECT_LT(id, 300u);
}

// Python's `cagra.build(x, graph_degree=256)`: no intermediate degree given, so the automatic one
// (512) applies; before it was automatic, the fixed default 128 < 256 made this an error.
TEST(Plan, LargeGraphDegreeWithDefaultIntermediate) {
  resources cpu;
  cpu.target = backend::cpu;
  index_params p;
  p.graph_degree = 256;
  host_matrix base = random_f32(600, 8);
  EXPECT_EQ(plan_build(cpu, p, base.rows(), base.cols(), dtype::f32).intermediate_graph_degree,
            512u);
  const cagra::index idx = build(cpu, p, base);
  EXPECT_EQ(idx.graph_degree(), 256u);
  host_matrix q = random_f32(3, 8, 5);
  std::vector<uint32_t> ids(3 * 10);
  EXPECT_NO_THROW(search(cpu, {}, idx, q, 10, {ids.data(), 3, 10}, {}));
}

// The CPU walk draws one random sampling when num_random_samplings is left at 0: itopk + d random
// rows, not itopk + d x (1 + ceil(log2(N / 100K))) (5 at 1M rows), like the GPU's automatic
// single-CTA shape (core/plan.cpp, kAutoCpuSamplings). An explicit count is kept, and so is the
// general rule under a filter per query.
TEST(Plan, CpuDrawsOneSamplingByDefault) {
  const core::index_shape minilm{1000000, 384, 64, dtype::f32, metric::cosine};
  const auto plan = [&](const search_params& p, filter_kind f = filter_kind::none) {
    return core::make_search_plan(backend::cpu, p, minilm, 10, 10000, memory_space::host, 0, f,
                                  minilm.rows);
  };
  search_params p;
  p.itopk_size = 16;
  EXPECT_EQ(plan(p).random_samplings, 1u);
  EXPECT_EQ(plan(p).initial_nodes, 16u + 64u);
  EXPECT_EQ(plan(p, filter_kind::shared).random_samplings, 1u);
  EXPECT_EQ(plan(p, filter_kind::per_query).random_samplings, 5u) << "1 + ceil(log2(10))";
  p.search_width = 2;
  EXPECT_EQ(plan(p).initial_nodes, 16u + 2u * 64u);
  p.search_width = 1;
  p.num_random_samplings = 5;
  EXPECT_EQ(plan(p).initial_nodes, 16u + 5u * 64u) << "an explicit count is kept";
}

TEST(Parsing, MetricsAndBackends) {
  EXPECT_EQ(parse_metric("ip"), metric::inner_product);
  EXPECT_EQ(parse_metric("cosine"), metric::cosine);
  EXPECT_THROW(parse_metric("hamming"), cagra::error);
  EXPECT_EQ(parse_backend("cpu"), backend::cpu);
  EXPECT_THROW(parse_backend("tpu"), cagra::error);
}

}  // namespace
}  // namespace cagra::test
