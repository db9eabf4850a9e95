// Tests of cagra::analyze: hand-made graphs with known answers, deep graphs that would overflow
// a recursive traversal, the edge-hygiene counters, and a brute-force cross-check (reachability
// by BFS from every node) on many small random graphs with invalid ids and self loops mixed in.
#include <algorithm>
#include <cmath>
#include <queue>
#include <random>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/cagra.hpp>

namespace {

using graph = std::vector<uint32_t>;

cagra::graph_stats stats(const graph& g, int64_t n, int64_t degree, int64_t samples = 0,
                         int threads = 0) {
  cagra::resources res;
  res.num_threads = threads;
  return cagra::analyze(res, {g.data(), n, degree}, samples);
}

// Node i points to i+1, ..., i+degree (mod n): a circulant graph.
graph circulant(int64_t n, int64_t degree) {
  graph g(size_t(n * degree));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < degree; ++j) g[size_t(i * degree + j)] = uint32_t((i + j + 1) % n);
  return g;
}

graph random_graph(int64_t n, int64_t degree, uint32_t seed, bool with_junk) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<uint32_t> pick(0, uint32_t(n - 1));
  graph g(size_t(n * degree));
  for (size_t i = 0; i < g.size(); ++i) {
    g[i] = pick(rng);
    if (with_junk && rng() % 10 == 0) g[i] = uint32_t(n) + rng() % 3;  // invalid id
  }
  return g;
}

// Brute force: reachability sets by BFS (invalid ids ignored), then the definitions verbatim.
struct reference {
  double two_hop = 0;
  int64_t scc = 0, wcc = 0;
};
reference brute_force(const graph& g, int64_t n, int64_t d) {
  auto out = [&](int64_t v) {
    std::vector<int64_t> r;
    for (int64_t j = 0; j < d; ++j)
      if (g[size_t(v * d + j)] < n) r.push_back(g[size_t(v * d + j)]);
    return r;
  };
  reference ref;
  std::vector<std::vector<bool>> reach(size_t(n), std::vector<bool>(size_t(n), false));
  std::vector<std::vector<int64_t>> undirected(static_cast<size_t>(n));
  for (int64_t v = 0; v < n; ++v) {
    std::set<int64_t> two;
    for (int64_t u : out(v)) {
      two.insert(u);
      for (int64_t w : out(u)) two.insert(w);
      undirected[size_t(v)].push_back(u);
      undirected[size_t(u)].push_back(v);
    }
    two.erase(v);
    ref.two_hop += double(two.size()) / double(n);
    std::queue<int64_t> q;
    q.push(v);
    reach[size_t(v)][size_t(v)] = true;
    while (!q.empty()) {
      int64_t x = q.front();
      q.pop();
      for (int64_t y : out(x))
        if (!reach[size_t(v)][size_t(y)]) reach[size_t(v)][size_t(y)] = true, q.push(y);
    }
  }
  // A node is the representative of its strong component when it is the smallest mutually
  // reachable node; the same for weak components on the undirected graph.
  for (int64_t v = 0; v < n; ++v) {
    bool first = true;
    for (int64_t u = 0; u < v && first; ++u)
      first = !(reach[size_t(v)][size_t(u)] && reach[size_t(u)][size_t(v)]);
    ref.scc += first;
  }
  std::vector<int64_t> label(size_t(n), -1);
  for (int64_t s = 0; s < n; ++s) {
    if (label[size_t(s)] >= 0) continue;
    ++ref.wcc;
    std::queue<int64_t> q;
    q.push(s);
    label[size_t(s)] = s;
    while (!q.empty()) {
      int64_t x = q.front();
      q.pop();
      for (int64_t y : undirected[size_t(x)])
        if (label[size_t(y)] < 0) label[size_t(y)] = s, q.push(y);
    }
  }
  return ref;
}

}  // namespace

TEST(GraphStats, DirectedCycle) {
  const int64_t n = 10;
  cagra::graph_stats s = stats(circulant(n, 1), n, 1);
  EXPECT_EQ(s.nodes, n);
  EXPECT_EQ(s.degree, 1u);
  EXPECT_EQ(s.strong_components, 1);
  EXPECT_EQ(s.weak_components, 1);
  EXPECT_DOUBLE_EQ(s.avg_two_hop, 2.0);
  EXPECT_EQ(s.two_hop_samples, n);
  EXPECT_EQ(s.invalid_edges + s.self_loops + s.duplicate_edges, 0);
}

TEST(GraphStats, TwoDisjointCycles) {
  // 0 -> 1 -> ... -> 4 -> 0 and 5 -> 6 -> ... -> 11 -> 5.
  graph g(12);
  for (uint32_t i = 0; i < 5; ++i) g[i] = (i + 1) % 5;
  for (uint32_t i = 5; i < 12; ++i) g[i] = i == 11 ? 5 : i + 1;
  cagra::graph_stats s = stats(g, 12, 1);
  EXPECT_EQ(s.strong_components, 2);
  EXPECT_EQ(s.weak_components, 2);
  EXPECT_DOUBLE_EQ(s.avg_two_hop, 2.0);
}

TEST(GraphStats, PathHasOneComponentPerNode) {
  // 0 -> 1 -> ... -> 9; the last node points to itself (a self loop, not a new component).
  const int64_t n = 10;
  graph g(n);
  for (uint32_t i = 0; i < n; ++i) g[i] = std::min<uint32_t>(i + 1, n - 1);
  cagra::graph_stats s = stats(g, n, 1);
  EXPECT_EQ(s.strong_components, n);
  EXPECT_EQ(s.weak_components, 1);
  EXPECT_EQ(s.self_loops, 1);
  // Nodes 0..7 reach 2 others, node 8 reaches 1 (node 9), node 9 none.
  EXPECT_DOUBLE_EQ(s.avg_two_hop, (8 * 2 + 1) / 10.0);
}

TEST(GraphStats, CompleteGraph) {
  const int64_t n = 9;
  cagra::graph_stats s = stats(circulant(n, n - 1), n, n - 1);
  EXPECT_DOUBLE_EQ(s.avg_two_hop, double(n - 1));
  EXPECT_EQ(s.strong_components, 1);
  EXPECT_EQ(s.weak_components, 1);
  EXPECT_EQ(s.self_loops + s.duplicate_edges + s.invalid_edges, 0);
}

TEST(GraphStats, TwoHopUpperBoundOnTreeLikeGraph) {
  // Node i -> 3i+1, 3i+2, 3i+3 (a ternary tree, leaves point out of range: invalid).
  const int64_t n = 40, d = 3;
  graph g(size_t(n * d));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) g[size_t(i * d + j)] = uint32_t(3 * i + j + 1);
  cagra::graph_stats s = stats(g, n, d, 1);  // one sample: node 0 reaches 3 + 9 = d + d^2
  EXPECT_EQ(s.two_hop_samples, 1);
  EXPECT_DOUBLE_EQ(s.avg_two_hop, 12.0);
  EXPECT_EQ(s.invalid_edges, 3 * n - (n - 1));  // ids n .. 3n each appear once
  EXPECT_EQ(s.strong_components, n);
  EXPECT_EQ(s.weak_components, 1);
}

TEST(GraphStats, DeepPathAndCycleDoNotOverflowTheStack) {
  const int64_t n = 300000;
  graph path(n), back(n);
  for (int64_t i = 0; i < n; ++i) {
    path[size_t(i)] = i + 1 < n ? uint32_t(i + 1) : cagra::kInvalidId;
    back[size_t(i)] = i > 0 ? uint32_t(i - 1) : cagra::kInvalidId;  // DFS from 0 stops at once
  }
  cagra::graph_stats s = stats(path, n, 1);
  EXPECT_EQ(s.strong_components, n);
  EXPECT_EQ(s.weak_components, 1);
  EXPECT_EQ(s.invalid_edges, 1);
  s = stats(back, n, 1);
  EXPECT_EQ(s.strong_components, n);
  EXPECT_EQ(s.weak_components, 1);
  s = stats(circulant(n, 1), n, 1, 1000);
  EXPECT_EQ(s.strong_components, 1);
  EXPECT_EQ(s.weak_components, 1);
  EXPECT_DOUBLE_EQ(s.avg_two_hop, 2.0);
}

TEST(GraphStats, InvalidSelfAndDuplicateCounts) {
  const uint32_t bad = cagra::kInvalidId;
  // 4 nodes, degree 5.
  graph g = {
      1, 1, 1,   2,   0,  // row 0: two duplicates of 1, a self loop
      5, 5, bad, bad, 2,  // row 1: 4 invalid ids, 5 and bad repeated (2 duplicates)
      2, 2, 3,   7,   3,  // row 2: self loop twice (1 duplicate), 3 twice (1 duplicate)
      0, 1, 2,   bad, 6,  // row 3: 2 invalid ids
  };
  cagra::graph_stats s = stats(g, 4, 5);
  EXPECT_EQ(s.invalid_edges, 7);
  EXPECT_EQ(s.self_loops, 3);
  EXPECT_EQ(s.duplicate_edges, 2 + 2 + 2);
  EXPECT_EQ(s.strong_components, 1);  // 0->1->2->3->0
  EXPECT_EQ(s.weak_components, 1);
}

TEST(GraphStats, MatchesBruteForceOnRandomGraphs) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const int64_t n = 5 + seed * 3, d = 1 + seed % 3;  // sparse: many components
    graph g = random_graph(n, d, seed, seed % 2 == 0);
    reference ref = brute_force(g, n, d);
    cagra::graph_stats s = stats(g, n, d);
    ASSERT_EQ(s.strong_components, ref.scc) << "seed " << seed;
    ASSERT_EQ(s.weak_components, ref.wcc) << "seed " << seed;
    ASSERT_NEAR(s.avg_two_hop, ref.two_hop, 1e-9) << "seed " << seed;
  }
}

TEST(GraphStats, SampledTwoHopAgreesWithFull) {
  const int64_t n = 20000, d = 8;
  graph g = random_graph(n, d, 123, false);
  cagra::graph_stats full = stats(g, n, d);
  cagra::graph_stats sampled = stats(g, n, d, 500);
  EXPECT_EQ(full.two_hop_samples, n);
  EXPECT_EQ(sampled.two_hop_samples, 500);
  EXPECT_GT(full.avg_two_hop, 60.0);  // close to d + d^2 = 72 on a random graph
  EXPECT_LE(full.avg_two_hop, 72.0);
  EXPECT_NEAR(sampled.avg_two_hop, full.avg_two_hop, 0.03 * full.avg_two_hop);
  EXPECT_EQ(stats(g, n, d, n * 10).two_hop_samples, n);  // more samples than nodes: all
}

TEST(GraphStats, ThreadCountDoesNotChangeResults) {
  const int64_t n = 30000, d = 8;  // large enough that analyze does start threads
  graph g = random_graph(n, d, 9, true);
  cagra::graph_stats a = stats(g, n, d, 0, 1), b = stats(g, n, d, 0, 3);
  EXPECT_EQ(a.avg_two_hop, b.avg_two_hop);
  EXPECT_EQ(a.strong_components, b.strong_components);
  EXPECT_EQ(a.weak_components, b.weak_components);
  EXPECT_EQ(a.invalid_edges, b.invalid_edges);
  EXPECT_EQ(a.self_loops, b.self_loops);
  EXPECT_EQ(a.duplicate_edges, b.duplicate_edges);
}

TEST(GraphStats, EdgeCasesAndBadArguments) {
  cagra::graph_stats s = stats({}, 0, 4);
  EXPECT_EQ(s.nodes, 0);
  EXPECT_EQ(s.strong_components, 0);
  s = stats({}, 7, 0);  // no edges: every node alone
  EXPECT_EQ(s.strong_components, 7);
  EXPECT_EQ(s.weak_components, 7);
  EXPECT_EQ(s.avg_two_hop, 0.0);

  graph g = circulant(10, 2);
  EXPECT_THROW(stats(g, 10, 2, -1), cagra::error);
  EXPECT_THROW(cagra::analyze({}, {nullptr, 10, 2}), cagra::error);
  cagra::matrix_view<const uint32_t> dev{g.data(), 10, 2, cagra::memory_space::device};
  EXPECT_THROW(cagra::analyze({}, dev), cagra::error);
}

TEST(GraphStats, ProgressIsReported) {
  graph g = circulant(100, 4);
  cagra::resources res;
  double last = -1;
  res.progress = [&](const char*, double f) { last = f; };
  cagra::analyze(res, {g.data(), 100, 4});
  EXPECT_EQ(last, 1.0);
}
