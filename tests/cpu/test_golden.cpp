// Golden hashes of the CPU backend: optimized graphs (cagra::build, build_knn_graph + optimize)
// and search results (ids and distance bytes) on bigann10k and a Fashion-MNIST subset, pinned
// bit for bit at commit 1c2698a. They guard refactors: a refactor must leave every hash unchanged.
//
// A mismatch means the CPU backend's behaviour changed (a graph's bytes, or search ids/distances).
// If that change is intended, regenerate the table from the new code:
//   CAGRA_GOLDEN_PRINT=1 build/tests/cagra_cpu_tests --gtest_filter='Golden*'
// and paste the printed kGoldenProfile line and `{"name", "hex"},` lines over the ones in
// golden_table() (tests/cpu/golden_table.cpp). Say in the commit why the behaviour changed.
//
// Everything runs on the CPU backend (res.target = cpu) through the public API only, so src/ can
// be rewritten freely; the one internal call is cpu::kernel_profile(), which kernels run. The
// hashes do not depend on the thread count (the CPU backend promises that): CAGRA_GOLDEN_THREADS=N
// runs every build and search on N threads instead of 2, and no hash may move.
//
// Portability. Cases whose arithmetic is exact give the same bytes on every machine: u8 vectors
// (integer distances), and bigann10k in f32/f16 (every partial sum is an integer below 2^24).
// Cases with inexact float arithmetic (cosine's normalized rows and their 784-d f32 dot products)
// depend on the reduction order of the SIMD kernel the library dispatches to at run time
// (AVX-512 / AVX2 / baseline, src/cpu/distance.cpp) and on the compiler: they are compared only
// where float_profile() equals the profile the table was generated on (kGoldenProfile) or one
// of float_tables()' profiles (the AVX2-widest machines CI runs on), and elsewhere printed as
// "not compared" with both hashes (a new profile's table is those lines' names and hashes).
//
// Search knobs: the forgettable-hash knobs (hash_bits, hash_reset_interval) and min_iterations
// leave the CPU results unchanged today (a node the hash forgot can come back, but never re-enter
// the top-M list it already lost its place in), so their cases pin exactly that. max_iterations,
// seed and num_random_samplings show in the whole top-M list (".kfull"), itopk and search_width
// in both.
//
// The files: this one (the scheme, and the bigann10k cases), test_golden_fashion.cpp (the
// Fashion-MNIST cases), golden.hpp and golden_build_and_search.cpp (building, searching and
// hashing on the CPU backend), golden_table.cpp (the table, and check(), which compares a case
// with it or prints it).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "golden.hpp"
#include "test_data.hpp"

namespace cagra::test::golden {
namespace {

// ---- bigann10k: 9,900 x 128 u8, 100 queries ---------------------------------------------------
// Every bigann10k distance is exact in float too (128 * 255^2 < 2^24), so every case is exact.

class GoldenBigann : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { set_ = new real_set(bigann10k()); }
  static void TearDownTestSuite() {
    delete set_;
    set_ = nullptr;
  }
  static real_set* set_;
};
real_set* GoldenBigann::set_ = nullptr;

TEST_F(GoldenBigann, BruteForceRankL2AndSearchParams) {
  const std::string n = "bigann.u8.l2.bf.rank.d32";
  cagra::index idx =
      build_checked(n, params_of(metric::l2, knn_algo::brute_force), set_->base, true);
  search_sweep(n + ".search.", idx, set_->queries, true);
  const host_matrix& q = set_->queries;
  const std::string s = n + ".search.";
  search_checked(s + "itopk16.k1", idx, q, 1, sp(16), true);
  search_checked(s + "itopk16.k100", idx, q, 100, sp(16),
                 true);  // k > itopk: itopk raised to k today
  search_checked(s + "itopk16.k10.queries1", idx, head(q, 1), 10, sp(16),
                 true);  // one query: one thread
}

TEST_F(GoldenBigann, NNDescentRankL2) {
  const std::string n = "bigann.u8.l2.nnd.rank.d32";
  cagra::index idx =
      build_checked(n, params_of(metric::l2, knn_algo::nn_descent), set_->base, true);
  search_both(n + ".search.defaults", idx, set_->queries, search_params{}, true);
  search_both(n + ".search.itopk32", idx, set_->queries, sp(32), true);
  search_params p = sp(32);
  p.search_width = 4;
  search_both(n + ".search.itopk32.width4", idx, set_->queries, p, true);
}

TEST_F(GoldenBigann, HalfStorage) {
  const std::string n = "bigann.f16.l2.bf.rank.d32";
  cagra::index idx = build_checked(
      n, params_of(metric::l2, knn_algo::brute_force, reorder_kind::rank, storage_type::f16),
      set_->base, true, vec::exact);
  EXPECT_EQ(idx.storage_dtype(), dtype::f16);
  search_both(n + ".search.defaults", idx, set_->queries, search_params{}, true);
  search_both(n + ".search.itopk32", idx, set_->queries, sp(32), true);
  search_both(n + ".search.itopk128", idx, set_->queries, sp(128), true);
}

TEST_F(GoldenBigann, InnerProduct) {
  const std::string n = "bigann.u8.ip.bf.rank.d32";
  cagra::index idx =
      build_checked(n, params_of(metric::inner_product, knn_algo::brute_force), set_->base, true);
  search_both(n + ".search.defaults", idx, set_->queries, search_params{}, true);
  search_both(n + ".search.itopk32", idx, set_->queries, sp(32), true);
}

TEST_F(GoldenBigann, KnnGraphThenOptimize) {
  // The brute-force kNN graph, then optimize (rank and distance reordering, two degrees). The
  // NN-descent graph is pinned through build (NNDescentRankL2), so it is not built twice here.
  const std::string n = "bigann.u8.l2.bf";
  knn_graph knn =
      build_knn_graph(cpu_res(), params_of(metric::l2, knn_algo::brute_force), set_->base);
  ASSERT_EQ(knn.k, 64u);
  check(n + ".knn64.ids", hash_vec(knn.ids), true);
  check(n + ".knn64.dist", hash_vec(knn.distances), true);
  const std::vector<uint32_t> rank32 = optimize(cpu_res(), knn, 32, reorder_kind::rank);
  check(n + ".knn64.optimize.rank.d32", hash_vec(rank32), true);
  check(n + ".knn64.optimize.rank.d16", hash_vec(optimize(cpu_res(), knn, 16, reorder_kind::rank)),
        true);
  std::vector<uint32_t> dist32 = optimize(cpu_res(), knn, 32, reorder_kind::distance);
  check(n + ".knn64.optimize.distance.d32", hash_vec(dist32), true);
  // Distances left out: optimize recomputes them from the vectors (in f32; exact on bigann10k).
  knn_graph bare = knn;
  bare.distances.clear();
  check(n + ".knn64.nodist.optimize.distance.d32",
        hash_vec(optimize(cpu_res(), bare, 32, reorder_kind::distance, set_->base, metric::l2)),
        true);
  // Today build == build_knn_graph + optimize, so the rank graph is bigann.u8.l2.bf.rank.d32.graph.
  // Search the distance-reordered graph through an index assembled from its parts.
  cagra::index idx(metric::l2, host_matrix::copy_of(set_->base), std::move(dist32), 32);
  search_both(n + ".knn64.optimize.distance.d32.search.defaults", idx, set_->queries,
              search_params{}, true);
  search_both(n + ".knn64.optimize.distance.d32.search.itopk32", idx, set_->queries, sp(32), true);
}

}  // namespace
}  // namespace cagra::test::golden
