// Graph optimization: a hand-computed example (detour counts, pruning, reverse order, merge),
// invariants and determinism on real data, and the paper's effect (§III-A, Q-A1): the optimized
// graph reaches more nodes in two hops and has fewer strongly connected components than the kNN
// graph cut to the same degree.
#include <gtest/gtest.h>

#include "test_data.hpp"

namespace cagra::test {
namespace {

knn_graph hand_graph() {
  knn_graph g;
  g.rows = 4;
  g.k = 3;
  g.ids = {1, 2, 3, 2, 0, 3, 3, 0, 1, 0, 1, 2};
  g.distances = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3};
  return g;
}

TEST(Optimize, HandComputedExample) {
  // Detour counts (rank-based): node 0 -> [0,1,1] keeps [1,2]; node 1 -> [0,0,1] keeps [2,0];
  // node 2 -> [0,1,2] keeps [3,0]; node 3 -> [0,1,2] keeps [0,1]. Reverse lists by (rank, source):
  // 0:[3,1] 1:[0,3] 2:[1,0] 3:[2]. Interleaved merge with d/2 = 1 reverse edge per node:
  std::vector<uint32_t> expected = {1, 3, 2, 0, 3, 1, 0, 2};
  EXPECT_EQ(optimize({}, hand_graph(), 2), expected);
}

void expect_valid_graph(const std::vector<uint32_t>& g, int64_t n, uint32_t d) {
  ASSERT_EQ(g.size(), size_t(n) * d);
  graph_stats st = analyze({}, {g.data(), n, int64_t(d)}, 100);
  EXPECT_EQ(st.invalid_edges, 0);
  EXPECT_EQ(st.self_loops, 0);
  EXPECT_EQ(st.duplicate_edges, 0);
}

TEST(Optimize, InvariantsAndDeterminism) {
  host_matrix base = bigann10k().base;
  knn_graph knn = brute_force_knn({}, metric::l2, base, base, 48, true);
  resources one, two;
  one.num_threads = 1;
  two.num_threads = 2;
  for (reorder_kind kind : {reorder_kind::rank, reorder_kind::distance}) {
    std::vector<uint32_t> a = optimize(one, knn, 24, kind);
    std::vector<uint32_t> b = optimize(two, knn, 24, kind);
    expect_valid_graph(a, knn.rows, 24);
    EXPECT_EQ(a, b) << "optimize must not depend on the thread count";
  }
  EXPECT_NE(optimize({}, knn, 24, reorder_kind::rank),
            optimize({}, knn, 24, reorder_kind::distance));
}

TEST(Optimize, DistanceReorderWithoutStoredDistancesUsesVectors) {
  host_matrix base = head(bigann10k().base, 1000);
  knn_graph knn = brute_force_knn({}, metric::l2, base, base, 16, true);
  std::vector<uint32_t> with = optimize({}, knn, 8, reorder_kind::distance);
  knn.distances.clear();
  EXPECT_THROW(optimize({}, knn, 8, reorder_kind::distance), cagra::error);  // no vectors given
  EXPECT_EQ(optimize({}, knn, 8, reorder_kind::distance, base), with);
}

TEST(Optimize, PaperEffectOnFashionMnist) {
  real_set f = fashion(10000, 1);
  const uint32_t d = 32;
  knn_graph knn = brute_force_knn({}, metric::l2, f.base, f.base, 2 * d, true);
  std::vector<uint32_t> cut(size_t(knn.rows) * d);
  for (int64_t i = 0; i < knn.rows; ++i)
    std::copy_n(knn.ids.begin() + i * knn.k, d, cut.begin() + i * d);
  graph_stats before = analyze({}, {cut.data(), knn.rows, d});
  std::vector<uint32_t> opt = optimize({}, knn, d);
  graph_stats after = analyze({}, {opt.data(), knn.rows, d});
  EXPECT_GT(after.avg_two_hop, 1.2 * before.avg_two_hop);
  EXPECT_LT(after.strong_components, before.strong_components);
}

TEST(Optimize, RejectsBadGraphs) {
  knn_graph g = hand_graph();
  EXPECT_THROW(optimize({}, g, 0), cagra::error);
  EXPECT_THROW(optimize({}, g, 4), cagra::error);  // degree > k
  g.ids[0] = 0;                                    // self loop
  EXPECT_THROW(optimize({}, g, 2), cagra::error);
  g = hand_graph();
  g.ids[1] = 1;  // duplicate in row 0
  EXPECT_THROW(optimize({}, g, 2), cagra::error);
  g = hand_graph();
  g.ids[2] = 9;  // out of range
  EXPECT_THROW(optimize({}, g, 2), cagra::error);
}

}  // namespace
}  // namespace cagra::test
