// The CPU's latency path (search_params::algo = multi_cta on the CPU backend): the plan's walker
// count and iteration split, recall on real data (bigann10k) close to the single walk's with
// one thread (deterministic, batch-independent) and with several, filters (shared and per
// query) through the same path, the int8 traversal, the work counters, and the itopk limit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <cagra/plan.hpp>

#include "core/bench_hooks.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

struct result {
  std::vector<uint32_t> ids;
  std::vector<float> dist;
  matrix_view<const uint32_t> view(int64_t rows) const { return {ids.data(), rows, kK}; }
};

resources threads(int n) {
  resources r = cpu();
  r.num_threads = n;
  return r;
}

search_params walkers(uint32_t itopk = 64, uint32_t width = 1) {
  search_params p;
  p.itopk_size = itopk;
  p.search_width = width;
  p.algo = search_algo::multi_cta;
  return p;
}

result run(const resources& res, const cagra::index& idx, const host_matrix& q, search_params p,
           const row_filter& f = {}) {
  result r;
  r.ids.assign(size_t(q.rows()) * kK, 0);
  r.dist.assign(size_t(q.rows()) * kK, 0);
  search(res, p, idx, q, kK, {r.ids.data(), q.rows(), kK}, {r.dist.data(), q.rows(), kK}, f);
  return r;
}

/** Every id valid, allowed by `f`, distinct in its row; distances ascending; an empty slot
 *  (kInvalidId, +inf) only after the found ones. */
void expect_valid(const result& r, int64_t n, const row_filter& f = {}) {
  for (size_t i = 0; i < r.ids.size() / kK; ++i) {
    bool ended = false;
    for (uint32_t j = 0; j < kK; ++j) {
      const uint32_t id = r.ids[i * kK + j];
      if (id == kInvalidId) {
        ended = true;
        ASSERT_TRUE(std::isinf(r.dist[i * kK + j]));
        continue;
      }
      ASSERT_FALSE(ended) << "query " << i << ": a result after an empty slot";
      ASSERT_LT(id, uint64_t(n));
      if (!f.empty()) {
        ASSERT_TRUE(f.allows(int64_t(i), id)) << "query " << i << " row " << id;
      }
      if (j > 0) {
        ASSERT_LE(r.dist[i * kK + j - 1], r.dist[i * kK + j]);
      }
      for (uint32_t a = 0; a < j; ++a) ASSERT_NE(r.ids[i * kK + a], id) << "query " << i;
    }
  }
}

class ParallelWalk : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    set_ = new real_set(bigann10k());
    index_params p;
    p.graph_degree = 32;
    p.intermediate_graph_degree = 64;
    idx_ = new cagra::index(build(cpu(), p, set_->base));
  }
  static void TearDownTestSuite() {
    delete idx_;
    delete set_;
  }
  double recall_of(const result& r) const {
    return recall(r.view(set_->queries.rows()), set_->truth.as<uint32_t>(), kK);
  }
  static real_set* set_;
  static cagra::index* idx_;
};
real_set* ParallelWalk::set_ = nullptr;
cagra::index* ParallelWalk::idx_ = nullptr;

TEST_F(ParallelWalk, PlanGivesAWalkerPerThreadAndSharesTheIterations) {
  const search_plan single = plan_search(threads(8), walkers(64), *idx_, kK, 1);
  search_params plain;
  plain.itopk_size = 64;
  const search_plan one = plan_search(threads(8), plain, *idx_, kK, 1);
  EXPECT_EQ(one.algo, search_algo::automatic) << "the single walk unless multi_cta is asked for";
  EXPECT_EQ(single.algo, search_algo::multi_cta);
  EXPECT_EQ(single.ctas_per_query, 8u);
  EXPECT_EQ(single.search_width, 8u);
  EXPECT_EQ(single.initial_nodes, idx_->graph_degree());
  EXPECT_EQ(single.max_iterations, std::max(4u, (one.max_iterations + 7) / 8));
  EXPECT_EQ(single.hash_reset_interval, 0u);
  EXPECT_GE(single.hash_bits, 10u);
  EXPECT_LE(single.hash_bits, 22u);
  EXPECT_NE(to_string(single).find("algo=multi_cta"), std::string::npos) << to_string(single);
  EXPECT_NE(to_string(single).find("ctas_per_query=8"), std::string::npos);

  const search_plan few = plan_search(threads(16), walkers(10), *idx_, kK, 1);
  EXPECT_EQ(few.ctas_per_query, 5u) << "40 iterations (10 + 16 + log2 9900): 8 each at least";
  EXPECT_EQ(few.max_iterations, 8u);
  EXPECT_EQ(plan_search(threads(8), walkers(64, 12), *idx_, kK, 1).ctas_per_query, 12u)
      << "search_width above 1 sets the walkers";
  EXPECT_EQ(plan_search(threads(1), walkers(256), *idx_, kK, 1).ctas_per_query, 8u)
      << "at least the 32-entry lists itopk needs";
  EXPECT_EQ(plan_search(threads(1), walkers(4096, 128), *idx_, kK, 1).ctas_per_query, 128u);
  search_params capped = walkers(64);
  capped.max_iterations = 3;
  EXPECT_EQ(plan_search(threads(8), capped, *idx_, kK, 1).max_iterations, 3u)
      << "an explicit cap is each walker's";
  search_params twice = walkers(64);
  twice.num_random_samplings = 2;
  EXPECT_EQ(plan_search(threads(8), twice, *idx_, kK, 1).initial_nodes, 2 * idx_->graph_degree());
}

TEST_F(ParallelWalk, RecallNearTheSingleWalksOnOneThreadAndMany) {
  search_params plain;
  plain.itopk_size = 64;
  const double single = recall_of(run(threads(1), *idx_, set_->queries, plain));
  for (int t : {1, 4}) {
    for (uint32_t itopk : {32u, 64u, 128u}) {
      const result r = run(threads(t), *idx_, set_->queries, walkers(itopk));
      expect_valid(r, idx_->size());
      const double got = recall_of(r);
      EXPECT_GE(got, itopk >= 64 ? single - 0.01 : 0.9) << t << " threads, itopk " << itopk;
    }
  }
  // More walkers than threads, and more than the list needs: still the answer.
  EXPECT_GE(recall_of(run(threads(2), *idx_, set_->queries, walkers(64, 16))), single - 0.01);
}

TEST_F(ParallelWalk, OneThreadIsDeterministicInAnyBatch) {
  const result all = run(threads(1), *idx_, set_->queries, walkers(64, 4));
  const result again = run(threads(1), *idx_, set_->queries, walkers(64, 4));
  EXPECT_EQ(all.ids, again.ids);
  EXPECT_EQ(all.dist, again.dist);
  for (int64_t i : {0, 37, 99}) {
    const result one = run(threads(1), *idx_, slice(set_->queries, i, 1), walkers(64, 4));
    for (uint32_t j = 0; j < kK; ++j) {
      EXPECT_EQ(one.ids[j], all.ids[size_t(i) * kK + j]) << "query " << i;
      EXPECT_EQ(one.dist[j], all.dist[size_t(i) * kK + j]) << "query " << i;
    }
  }
}

TEST_F(ParallelWalk, FiltersReturnOnlyAllowedRows) {
  const int64_t n = idx_->size(), nq = set_->queries.rows();
  search_params exact;
  exact.filter = filter_algo::exact;
  search_params graph = walkers(64);
  graph.filter = filter_algo::graph;  // where the automatic choice would compute exact distances
  for (double share : {0.5, 0.3, 0.1}) {
    const row_bitset b = random_subset(n, share, 21);
    const row_filter f = b.view();
    const result r = run(threads(4), *idx_, set_->queries, graph, f);
    expect_valid(r, n, f);
    const result truth = run(threads(4), *idx_, set_->queries, exact, f);
    EXPECT_GE(recall(r.view(nq), truth.view(nq), kK), 0.97) << "share " << share;
  }
  const int64_t words = row_filter::words_for(n);
  std::vector<uint32_t> bitmap(size_t(nq * words));
  for (int64_t i = 0; i < nq; ++i) {
    const row_bitset b = random_subset(n, 0.3, 200 + uint64_t(i));
    std::copy(b.words().begin(), b.words().end(), bitmap.begin() + i * words);
  }
  const row_filter f = row_filter::per_query(bitmap.data(), nq, n);
  const result r = run(threads(4), *idx_, set_->queries, graph, f);
  expect_valid(r, n, f);
  const result truth = run(threads(4), *idx_, set_->queries, exact, f);
  EXPECT_GE(recall(r.view(nq), truth.view(nq), kK), 0.97);
}

TEST_F(ParallelWalk, Int8TraversalWalksTheCodes) {
  index_params p;
  p.graph_degree = 32;
  p.storage = storage_type::f32;
  const cagra::index f32 = build(cpu(), p, set_->base);
  search_params sp = walkers(64);
  sp.traversal = traversal_type::int8;
  const result r = run(threads(4), f32, set_->queries, sp);
  expect_valid(r, f32.size());
  EXPECT_GE(recall_of(r), 0.95);
}

TEST_F(ParallelWalk, CountsEveryWalkersWork) {
  const search_params sp = walkers(64, 4);
  bench_hooks::search_stats st;
  std::vector<uint32_t> ids(size_t(set_->queries.rows()) * kK);
  bench_hooks::cpu_search_with_stats(threads(2), sp, *idx_, set_->queries, kK, ids.data(), &st);
  EXPECT_EQ(st.queries, uint64_t(set_->queries.rows()));
  EXPECT_EQ(st.parents, st.iterations);
  const search_plan plan = plan_search(threads(2), sp, *idx_, kK, set_->queries.rows());
  EXPECT_GT(st.iterations, st.queries * plan.ctas_per_query) << "each walker expands parents";
  EXPECT_LE(st.iterations, st.queries * plan.ctas_per_query * plan.max_iterations);
  EXPECT_GE(st.distances, st.queries * plan.ctas_per_query) << "each walker measures rows";
}

TEST_F(ParallelWalk, RefusesAnItopkBeyondTheLists) {
  std::vector<uint32_t> ids(kK);
  EXPECT_THROW(search(threads(2), walkers(5000), *idx_, slice(set_->queries, 0, 1), kK,
                      {ids.data(), 1, kK}, {}),
               cagra::error);
}

}  // namespace
}  // namespace cagra::test
