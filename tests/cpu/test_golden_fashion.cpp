// Golden hashes of the CPU backend on a Fashion-MNIST subset: optimized graphs and search results
// pinned bit for bit, as for bigann10k (test_golden.cpp explains the scheme, how to regenerate
// the table, and why the cosine cases are compared on one float profile only).
#include <gtest/gtest.h>

#include <string>

#include "golden.hpp"
#include "test_data.hpp"

namespace cagra::test::golden {
namespace {

// ---- Fashion-MNIST: the first 4,000 training images (784-d u8), the first 100 test images -----
// u8 vectors: integer distances, exact. Cosine (normalized f32 rows): float sums of 784 terms,
// inexact (compared on kGoldenProfile only). f16 storage is pinned on bigann10k (where it is
// exact).

class GoldenFashion : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { set_ = new real_set(fashion(4000, 100)); }
  static void TearDownTestSuite() {
    delete set_;
    set_ = nullptr;
  }
  static real_set* set_;
};
real_set* GoldenFashion::set_ = nullptr;

TEST_F(GoldenFashion, BruteForceRankL2) {
  const std::string n = "fashion4k.u8.l2.bf.rank.d32";
  cagra::index idx =
      build_checked(n, params_of(metric::l2, knn_algo::brute_force), set_->base, true);
  search_sweep(n + ".search.", idx, set_->queries, true);
  search_checked(n + ".search.itopk16.k40", idx, set_->queries, 40, sp(16), true);  // k > itopk
}

TEST_F(GoldenFashion, NNDescentDistanceReorderInnerProduct) {
  const std::string n = "fashion4k.u8.ip.nnd.distance.d32";
  cagra::index idx = build_checked(
      n, params_of(metric::inner_product, knn_algo::nn_descent, reorder_kind::distance), set_->base,
      true);
  search_both(n + ".search.defaults", idx, set_->queries, search_params{}, true);
  search_both(n + ".search.itopk32", idx, set_->queries, sp(32), true);
}

TEST_F(GoldenFashion, Cosine) {
  const std::string n = "fashion4k.f32.cosine.bf.rank.d32";
  cagra::index idx =
      build_checked(n, params_of(metric::cosine, knn_algo::brute_force), set_->base, false,
                    vec::inexact);  // normalized rows
  EXPECT_EQ(idx.storage_dtype(), dtype::f32);
  search_both(n + ".search.defaults", idx, set_->queries, search_params{}, false);
  search_both(n + ".search.itopk32", idx, set_->queries, sp(32), false);
  search_params p = sp(32);
  p.search_width = 4;
  search_both(n + ".search.itopk32.width4", idx, set_->queries, p, false);
}

}  // namespace
}  // namespace cagra::test::golden
