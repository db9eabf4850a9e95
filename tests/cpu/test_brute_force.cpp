// Exact k-NN: agreement with the shipped ground truth, metrics against a double-precision
// reference, self exclusion, and independence from the thread count.
#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include "test_data.hpp"

namespace cagra::test {
namespace {

TEST(BruteForce, MatchesShippedGroundTruthOnBigann10k) {
  real_set s = bigann10k();
  knn_graph gt = brute_force_knn({}, metric::l2, s.base, s.queries, 100);
  ASSERT_EQ(gt.rows, 100);
  EXPECT_EQ(recall(gt.view(), s.truth.as<uint32_t>(), 10), 1.0);
  EXPECT_GE(recall(gt.view(), s.truth.as<uint32_t>(), 100), 0.999);  // ties may swap deep ranks
  auto dist = io::read_neighbors(shared_data_dir() + "/bigann10k/groundtruth.ibin").distances;
  ASSERT_FALSE(dist.empty());
  for (int r = 0; r < 10; ++r) EXPECT_FLOAT_EQ(gt.distances[r], dist.as<float>().row(0)[r]);
}

TEST(BruteForce, MetricsAgreeWithDoubleReference) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  const int n = 300, nq = 20, dim = 24;
  host_matrix base(dtype::f32, n, dim), q(dtype::f32, nq, dim);
  for (auto* m : {&base, &q})
    for (int64_t i = 0; i < m->rows() * dim; ++i) m->as<float>().data[i] = nd(rng);
  for (metric m : {metric::l2, metric::inner_product, metric::cosine}) {
    knn_graph g = brute_force_knn({}, m, base, q, 5);
    for (int i = 0; i < nq; ++i) {
      std::vector<std::pair<double, uint32_t>> ref;
      const float* a = q.as<float>().row(i);
      for (int j = 0; j < n; ++j) {
        const float* b = base.as<float>().row(j);
        double l2 = 0, dot = 0, na = 0, nb = 0;
        for (int t = 0; t < dim; ++t) {
          l2 += (a[t] - b[t]) * double(a[t] - b[t]);
          dot += double(a[t]) * b[t];
          na += double(a[t]) * a[t];
          nb += double(b[t]) * b[t];
        }
        double d = m == metric::l2              ? l2
                   : m == metric::inner_product ? -dot
                                                : 1 - dot / std::sqrt(na * nb);
        ref.push_back({d, uint32_t(j)});
      }
      std::sort(ref.begin(), ref.end());
      for (int r = 0; r < 5; ++r) {
        EXPECT_EQ(g.ids[i * 5 + r], ref[r].second)
            << to_string(m) << " query " << i << " rank " << r;
        EXPECT_NEAR(g.distances[i * 5 + r], ref[r].first, 1e-3 * (1 + std::abs(ref[r].first)));
      }
    }
  }
}

TEST(BruteForce, ExcludeSelfAndThreadIndependence) {
  real_set s = bigann10k();
  host_matrix small = head(s.base, 2000);
  resources one, two;
  one.num_threads = 1;
  two.num_threads = 2;
  knn_graph a = brute_force_knn(one, metric::l2, small, small, 16, true);
  knn_graph b = brute_force_knn(two, metric::l2, small, small, 16, true);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.distances, b.distances);
  for (int64_t i = 0; i < a.rows; ++i)
    for (uint32_t j = 0; j < a.k; ++j) {
      EXPECT_NE(a.ids[i * a.k + j], uint32_t(i));
      if (j) {
        EXPECT_LE(a.distances[i * a.k + j - 1], a.distances[i * a.k + j]);
      }
    }
}

TEST(BruteForce, RejectsBadArguments) {
  real_set s = bigann10k();
  host_matrix small = head(s.base, 50);
  EXPECT_THROW(brute_force_knn({}, metric::l2, small, small, 0), cagra::error);
  EXPECT_THROW(brute_force_knn({}, metric::l2, small, small, 51), cagra::error);
  EXPECT_THROW(brute_force_knn({}, metric::l2, small, small, 50, true), cagra::error);
  host_matrix wrong_dim(dtype::u8, 3, 64);
  EXPECT_THROW(brute_force_knn({}, metric::l2, small, wrong_dim, 5), cagra::error);
}

}  // namespace
}  // namespace cagra::test
