// GPU brute force (cuBLAS, src/cuda/brute_force) against the CPU oracle (cpu::brute_force via
// brute_force_knn with backend::cpu): bigann10k as u8, f32 and f16 with l2 / ip / cosine; byte
// vectors give exact distances, so there the answers must be identical (ids, tie order by id, and
// distances); float data agrees to recall >= 0.999 and distances within 1e-3 relative.
// Also exclude_self, k = 1 and k = 1000, several query and data tiles, a tiny case with ties,
// i8 vectors, and the dispatch (backend::cuda through the public brute_force_knn).
// Needs a GPU: label `cuda`.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "cpu/distance.hpp"
#include "cuda/backend.hpp"
#include "cuda/testing.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

knn_graph run(backend b, metric m, const host_matrix& data, const host_matrix& q, uint32_t k,
              bool exclude_self = false) {
  resources res;
  res.target = b;
  return brute_force_knn(res, m, data, q, k, exclude_self);
}

host_matrix to_f32(const host_matrix& m) {
  host_matrix out(dtype::f32, m.rows(), m.cols());
  float* o = static_cast<float*>(out.data());
  const int64_t n = m.rows() * m.cols();
  if (m.type() == dtype::u8) {
    const uint8_t* s = static_cast<const uint8_t*>(m.data());
    for (int64_t i = 0; i < n; ++i) o[i] = s[i];
  } else {
    std::memcpy(o, m.data(), out.size_bytes());
  }
  return out;
}

host_matrix to_f16(const host_matrix& f32) {
  host_matrix out(dtype::f16, f32.rows(), f32.cols());
  const float* s = static_cast<const float*>(f32.data());
  half* o = static_cast<half*>(out.data());
  for (int64_t i = 0; i < f32.rows() * f32.cols(); ++i) o[i] = cpu::float_to_half(s[i]);
  return out;
}

host_matrix random_f32(int64_t rows, int64_t cols, uint32_t seed) {
  host_matrix out(dtype::f32, rows, cols);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  float* o = static_cast<float*>(out.data());
  for (int64_t i = 0; i < rows * cols; ++i) o[i] = nd(rng);
  return out;
}

/** GPU against CPU: recall@k >= min_recall (ids) and distance at each rank within 1e-3 relative;
 *  `exact`: ids and distances identical. Every id valid, distances ascending. */
void compare(const knn_graph& gpu, const knn_graph& cpu, int64_t n, const std::string& what,
             bool exact, double min_recall = 0.999) {
  ASSERT_EQ(gpu.rows, cpu.rows) << what;
  ASSERT_EQ(gpu.k, cpu.k) << what;
  const uint32_t k = gpu.k;
  for (int64_t q = 0; q < gpu.rows; ++q)
    for (uint32_t j = 0; j < k; ++j) {
      const size_t i = size_t(q) * k + j;
      ASSERT_LT(gpu.ids[i], uint64_t(n)) << what << ": query " << q << " rank " << j;
      if (j) {
        ASSERT_LE(gpu.distances[i - 1], gpu.distances[i])
            << what << ": query " << q << " rank " << j;
      }
      const float d = cpu.distances[i];
      ASSERT_NEAR(gpu.distances[i], d, 1e-3f * std::fabs(d) + 1e-5f)
          << what << ": query " << q << " rank " << j;
      if (exact) {
        ASSERT_EQ(gpu.ids[i], cpu.ids[i]) << what << ": query " << q << " rank " << j;
        ASSERT_EQ(gpu.distances[i], d) << what << ": query " << q << " rank " << j;
      }
    }
  const double r = recall(gpu.view(), cpu.view(), k);
  std::printf("[bf] %-28s k=%-4u recall %.5f\n", what.c_str(), k, r);
  EXPECT_GE(r, min_recall) << what;
}

class CudaBruteForce : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    set_ = new real_set(bigann10k());
    f32_base_ = new host_matrix(to_f32(set_->base));
    f32_q_ = new host_matrix(to_f32(set_->queries));
  }
  static void TearDownTestSuite() {
    delete set_;
    delete f32_base_;
    delete f32_q_;
  }
  void SetUp() override {
    if (cuda::device_count() == 0) GTEST_FAIL() << "no CUDA device visible";
    cuda::testing::set_brute_force_tiles(0, 0);
  }
  void TearDown() override { cuda::testing::set_brute_force_tiles(0, 0); }
  static real_set* set_;
  static host_matrix* f32_base_;
  static host_matrix* f32_q_;
};
real_set* CudaBruteForce::set_ = nullptr;
host_matrix* CudaBruteForce::f32_base_ = nullptr;
host_matrix* CudaBruteForce::f32_q_ = nullptr;

TEST_F(CudaBruteForce, BytesExactL2AndIp) {
  for (metric m : {metric::l2, metric::inner_product})
    for (uint32_t k : {10u, 100u}) {
      knn_graph g = run(backend::cuda, m, set_->base, set_->queries, k);
      knn_graph c = run(backend::cpu, m, set_->base, set_->queries, k);
      compare(g, c, set_->base.rows(), std::string("u8 ") + to_string(m), true);
    }
  // The shipped ground truth (L2) agrees too.
  knn_graph g = run(backend::cuda, metric::l2, set_->base, set_->queries, 10);
  EXPECT_GE(recall(g.view(), set_->truth.as<const uint32_t>(), 10), 0.999);
}

TEST_F(CudaBruteForce, AllTypesAndMetrics) {
  const host_matrix f16_base = to_f16(*f32_base_);
  struct input {
    const char* name;
    const host_matrix* base;
    const host_matrix* q;
  } inputs[] = {
      {"u8", &set_->base, &set_->queries}, {"f32", f32_base_, f32_q_}, {"f16", &f16_base, f32_q_}};
  for (const input& in : inputs)
    for (metric m : {metric::l2, metric::inner_product, metric::cosine})
      for (uint32_t k : {10u, 100u}) {
        knn_graph g = run(backend::cuda, m, *in.base, *in.q, k);
        knn_graph c = run(backend::cpu, m, *in.base, *in.q, k);
        compare(g, c, in.base->rows(), std::string(in.name) + " " + to_string(m), false);
      }
}

TEST_F(CudaBruteForce, RandomFloats) {
  const host_matrix base = random_f32(6000, 96, 7), q = random_f32(300, 96, 8);
  for (metric m : {metric::l2, metric::inner_product, metric::cosine}) {
    knn_graph g = run(backend::cuda, m, base, q, 100);
    knn_graph c = run(backend::cpu, m, base, q, 100);
    compare(g, c, base.rows(), std::string("random f32 ") + to_string(m), false);
  }
}

TEST_F(CudaBruteForce, ExcludeSelf) {
  const host_matrix base = head(set_->base, 3000);
  knn_graph g = run(backend::cuda, metric::l2, base, base, 16, true);
  knn_graph c = run(backend::cpu, metric::l2, base, base, 16, true);
  for (int64_t i = 0; i < g.rows; ++i)
    for (uint32_t j = 0; j < g.k; ++j)
      ASSERT_NE(g.ids[size_t(i) * g.k + j], uint32_t(i)) << "row " << i;
  compare(g, c, base.rows(), "exclude_self u8 l2", true);
  const host_matrix fb = to_f32(base);
  compare(run(backend::cuda, metric::cosine, fb, fb, 16, true),
          run(backend::cpu, metric::cosine, fb, fb, 16, true), base.rows(),
          "exclude_self f32 cosine", false);
}

TEST_F(CudaBruteForce, KOneAndKThousand) {
  for (uint32_t k : {1u, 1000u}) {
    compare(run(backend::cuda, metric::l2, set_->base, set_->queries, k),
            run(backend::cpu, metric::l2, set_->base, set_->queries, k), set_->base.rows(), "u8 l2",
            true);
    compare(run(backend::cuda, metric::inner_product, *f32_base_, *f32_q_, k),
            run(backend::cpu, metric::inner_product, *f32_base_, *f32_q_, k), set_->base.rows(),
            "f32 ip", false);
  }
}

TEST_F(CudaBruteForce, ManyTiles) {
  // Small tiles: several query tiles and data tiles (the last ones partial), the running top-k
  // carried across data tiles, exclude_self across tiles.
  cuda::testing::set_brute_force_tiles(37, 1000);
  compare(run(backend::cuda, metric::l2, set_->base, set_->queries, 100),
          run(backend::cpu, metric::l2, set_->base, set_->queries, 100), set_->base.rows(),
          "tiled u8 l2", true);
  const host_matrix base = head(set_->base, 2500);
  compare(run(backend::cuda, metric::l2, base, base, 10, true),
          run(backend::cpu, metric::l2, base, base, 10, true), base.rows(), "tiled exclude_self",
          true);
  compare(run(backend::cuda, metric::cosine, *f32_base_, *f32_q_, 50),
          run(backend::cpu, metric::cosine, *f32_base_, *f32_q_, 50), set_->base.rows(),
          "tiled f32 cosine", false);
}

TEST_F(CudaBruteForce, TinyWithTies) {
  // 6 points in 2-d; rows 1, 2 and 4 are the same point, so their distances tie: order by id.
  const float pts[] = {0, 0, 1, 1, 1, 1, 5, 5, 1, 1, -2, 0};
  host_matrix base = host_matrix::copy_of(dataset_view{pts, dtype::f32, 6, 2});
  const float qv[] = {1, 1, 0, 0};
  host_matrix q = host_matrix::copy_of(dataset_view{qv, dtype::f32, 2, 2});
  knn_graph g = run(backend::cuda, metric::l2, base, q, 6);
  const uint32_t want0[] = {1, 2, 4, 0, 5, 3};
  const float dist0[] = {0, 0, 0, 2, 10, 32};
  for (int j = 0; j < 6; ++j) {
    EXPECT_EQ(g.ids[j], want0[j]) << "rank " << j;
    EXPECT_FLOAT_EQ(g.distances[j], dist0[j]) << "rank " << j;
  }
  compare(g, run(backend::cpu, metric::l2, base, q, 6), 6, "tiny l2", true);
  compare(run(backend::cuda, metric::inner_product, base, q, 3),
          run(backend::cpu, metric::inner_product, base, q, 3), 6, "tiny ip", true);
  // i8 vectors.
  const int8_t iv[] = {-128, 127, 3, -4, 0, 0, 127, -128, 5, 5};
  host_matrix ib = host_matrix::copy_of(dataset_view{iv, dtype::i8, 5, 2});
  for (metric m : {metric::l2, metric::inner_product})
    compare(run(backend::cuda, m, ib, ib, 4, true), run(backend::cpu, m, ib, ib, 4, true), 5,
            std::string("tiny i8 ") + to_string(m), true);
  // Errors: k larger than the rows, k above the GPU limit.
  EXPECT_THROW(run(backend::cuda, metric::l2, base, q, 7), cagra::error);
  EXPECT_THROW(run(backend::cuda, metric::l2, base, base, 6, true), cagra::error);
  EXPECT_THROW(
      run(backend::cuda, metric::l2, set_->base, set_->queries, cuda::brute_force_max_k() + 1),
      cagra::error);
}

}  // namespace
}  // namespace cagra::test
