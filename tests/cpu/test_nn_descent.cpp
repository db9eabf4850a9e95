// NN-descent: recall against the exact kNN graph on real data, list invariants, determinism
// (same seed, same graph for any thread count; another seed, another graph), and the build's
// two stages in one backend call.
#include <gtest/gtest.h>

#include "core/backend.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

index_params nnd_params(uint32_t k, uint64_t seed = 0) {
  index_params p;
  p.intermediate_graph_degree = k;
  p.graph_degree = k / 2;
  p.knn.algo = knn_algo::nn_descent;
  p.seed = seed;
  return p;
}

void expect_valid_knn(const knn_graph& g) {
  for (int64_t i = 0; i < g.rows; ++i) {
    std::vector<uint32_t> row(g.ids.begin() + i * g.k, g.ids.begin() + (i + 1) * g.k);
    for (uint32_t j = 0; j < g.k; ++j) {
      ASSERT_LT(row[j], g.rows);
      ASSERT_NE(row[j], uint32_t(i)) << "self loop in row " << i;
      if (j) {
        ASSERT_LE(g.distances[i * g.k + j - 1], g.distances[i * g.k + j])
            << "row " << i << " unsorted";
      }
    }
    std::sort(row.begin(), row.end());
    ASSERT_EQ(std::unique(row.begin(), row.end()), row.end()) << "duplicate in row " << i;
  }
}

TEST(NnDescent, RecallOnBigann10k) {
  real_set s = bigann10k();
  knn_graph approx = build_knn_graph({}, nnd_params(32), s.base);
  knn_graph exact = brute_force_knn({}, metric::l2, s.base, s.base, 32, true);
  expect_valid_knn(approx);
  EXPECT_GE(recall(approx.view(), exact.view(), 32), 0.95);
}

TEST(NnDescent, RecallOnSift5kAndFashionSubset) {
  host_matrix sift = io::read_matrix(shared_data_dir() + "/sift5k/base.u8bin");
  knn_graph a = build_knn_graph({}, nnd_params(32), sift);
  EXPECT_GE(recall(a.view(), brute_force_knn({}, metric::l2, sift, sift, 32, true).view(), 32),
            0.95);
  real_set f = fashion(8000, 1);
  knn_graph b = build_knn_graph({}, nnd_params(32), f.base);
  expect_valid_knn(b);
  EXPECT_GE(recall(b.view(), brute_force_knn({}, metric::l2, f.base, f.base, 32, true).view(), 32),
            0.95);
}

TEST(NnDescent, DeterministicForSeedAndThreadCount) {
  host_matrix base = head(bigann10k().base, 3000);
  resources one, two;  // the CPU backend: deterministic (the GPU NN-descent is not)
  one.target = two.target = backend::cpu;
  one.num_threads = 1;
  two.num_threads = 2;
  knn_graph a = build_knn_graph(one, nnd_params(16, 42), base);
  knn_graph b = build_knn_graph(two, nnd_params(16, 42), base);
  EXPECT_EQ(a.ids, b.ids);
  EXPECT_EQ(a.distances, b.distances);
  index_params few = nnd_params(16, 43);
  few.knn.max_iterations = 1;  // stop before convergence so the seed shows
  index_params few42 = nnd_params(16, 42);
  few42.knn.max_iterations = 1;
  EXPECT_NE(build_knn_graph(one, few, base).ids, build_knn_graph(one, few42, base).ids);
}

// backend_ops::nn_descent_graph, the build's two stages in one call (the CUDA backend keeps the
// lists on the device in between): the default, which the CPU backend takes, equals nn_descent
// then optimize, and reports both stages.
TEST(NnDescent, BothStagesInOneCallEqualTheTwoCalls) {
  host_matrix base = head(bigann10k().base, 3000);
  resources r;
  r.target = backend::cpu;
  r.num_threads = 2;
  const knn_graph_params kp;
  const knn_graph knn = core::cpu_backend().nn_descent(base, metric::l2, 32, kp, 7, r, nullptr);
  for (reorder_kind kind : {reorder_kind::rank, reorder_kind::distance}) {
    core::graph_stage_times times;
    const std::vector<uint32_t> graph =
        core::cpu_backend().nn_descent_graph(base, metric::l2, 32, kp, 7, 16, kind, r, &times);
    EXPECT_EQ(graph, core::cpu_backend().optimize(knn, 16, kind, {}, r)) << to_string(kind);
    EXPECT_GE(times.iterations, 1u);
    EXPECT_LE(times.iterations, kp.max_iterations);
    EXPECT_GT(times.knn_seconds, 0.0);
    EXPECT_GT(times.optimize_seconds, 0.0);
  }
}

TEST(NnDescent, InnerProductAndCosine) {
  host_matrix base = head(bigann10k().base, 2000);
  for (metric m : {metric::inner_product, metric::cosine}) {
    index_params p = nnd_params(16);
    p.metric = m;
    knn_graph approx = build_knn_graph({}, p, base);
    expect_valid_knn(approx);
    EXPECT_GE(recall(approx.view(), brute_force_knn({}, m, base, base, 16, true).view(), 16), 0.9)
        << to_string(m);
  }
}

}  // namespace
}  // namespace cagra::test
