// Filtered search on the CPU backend (cagra/filter.hpp), against an independent oracle: the
// exact k nearest allowed rows of each bigann10k query, computed here in integer arithmetic
// (u8 vectors: exact distances, ties broken by id). Selectivities from 100% to 0.01%, shared and
// per-query bitsets, both paths (graph and exact), the edge cases (nothing allowed, exactly k,
// k - 1) and the errors a bad filter gets.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <cagra/plan.hpp>

#include "core/filter.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

/** The oracle: exact k nearest allowed rows (squared L2 on u8, ties by id), kInvalidId after. */
std::vector<uint32_t> filtered_truth(const host_matrix& base, const host_matrix& queries,
                                     const row_filter& f, uint32_t k) {
  const int64_t n = base.rows(), nq = queries.rows(), dim = base.cols();
  const uint8_t* x = static_cast<const uint8_t*>(base.data());
  const uint8_t* q = static_cast<const uint8_t*>(queries.data());
  std::vector<uint32_t> out(size_t(nq) * k, kInvalidId);
  std::vector<std::pair<int64_t, uint32_t>> all;
  for (int64_t i = 0; i < nq; ++i) {
    all.clear();
    for (int64_t r = 0; r < n; ++r) {
      if (!f.allows(i, r)) continue;
      int64_t d = 0;
      for (int64_t j = 0; j < dim; ++j) {
        const int64_t t = int64_t(q[i * dim + j]) - int64_t(x[r * dim + j]);
        d += t * t;
      }
      all.push_back({d, uint32_t(r)});
    }
    const size_t m = std::min<size_t>(k, all.size());
    std::partial_sort(all.begin(), all.begin() + m, all.end());
    for (size_t j = 0; j < m; ++j) out[i * k + j] = all[j].second;
  }
  return out;
}

/** Recall against a truth that may hold fewer than k rows (kInvalidId-padded): hits over the
 *  truth's valid entries. */
double filtered_recall(const std::vector<uint32_t>& found, const std::vector<uint32_t>& truth,
                       uint32_t k) {
  int64_t hits = 0, wanted = 0;
  for (size_t i = 0; i < truth.size() / k; ++i) {
    const uint32_t* t = truth.data() + i * k;
    const uint32_t* f = found.data() + i * k;
    for (uint32_t a = 0; a < k; ++a) {
      if (t[a] == kInvalidId) continue;
      ++wanted;
      if (std::find(f, f + k, t[a]) != f + k) ++hits;
    }
  }
  return wanted ? double(hits) / double(wanted) : 1.0;
}

struct result {
  std::vector<uint32_t> ids;
  std::vector<float> dist;
};

result run(const cagra::index& idx, const host_matrix& q, const row_filter& f, search_params p = {},
           uint32_t k = kK) {
  result r;
  r.ids.assign(size_t(q.rows()) * k, 0);
  r.dist.assign(size_t(q.rows()) * k, 0);
  search(cpu(), p, idx, q, k, {r.ids.data(), q.rows(), k}, {r.dist.data(), q.rows(), k}, f);
  return r;
}

/** Every returned id is allowed to its query, distinct, sorted by distance, and every slot
 *  after the first invalid one is invalid too (with +inf). */
void expect_valid(const result& r, const row_filter& f, int64_t nq, uint32_t k) {
  for (int64_t i = 0; i < nq; ++i) {
    bool ended = false;
    for (uint32_t j = 0; j < k; ++j) {
      const uint32_t id = r.ids[i * k + j];
      const float d = r.dist[i * k + j];
      if (id == kInvalidId) {
        ended = true;
        ASSERT_TRUE(std::isinf(d)) << "query " << i << " slot " << j;
        continue;
      }
      ASSERT_FALSE(ended) << "query " << i << ": a result after an empty slot";
      ASSERT_TRUE(f.allows(i, id)) << "query " << i << " got disallowed row " << id;
      if (j > 0) {
        ASSERT_LE(r.dist[i * k + j - 1], d);
      }
      for (uint32_t a = 0; a < j; ++a) ASSERT_NE(r.ids[i * k + a], id);
    }
  }
}

class Filter : public ::testing::Test {
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
  static real_set* set_;
  static cagra::index* idx_;
};
real_set* Filter::set_ = nullptr;
cagra::index* Filter::idx_ = nullptr;

TEST_F(Filter, ExactPathEqualsTheOracle) {
  const int64_t n = idx_->size();
  for (double share : {1.0, 0.5, 0.1, 0.01, 0.001, 0.0001}) {
    SCOPED_TRACE(share);
    const row_bitset b = random_subset(n, share, 7);
    search_params p;
    p.filter = filter_algo::exact;
    const result r = run(*idx_, set_->queries, b.view(), p);
    expect_valid(r, b.view(), 100, kK);
    EXPECT_EQ(r.ids, filtered_truth(set_->base, set_->queries, b.view(), kK));
  }
}

TEST_F(Filter, AutomaticKeepsRecallAtEverySelectivity) {
  const int64_t n = idx_->size();
  for (double share : {0.9, 0.5, 0.2, 0.1, 0.05, 0.01, 0.001, 0.0001}) {
    SCOPED_TRACE(share);
    const row_bitset b = random_subset(n, share, 11);
    const result r = run(*idx_, set_->queries, b.view());
    expect_valid(r, b.view(), 100, kK);
    EXPECT_GE(filtered_recall(r.ids, filtered_truth(set_->base, set_->queries, b.view(), kK), kK),
              0.95);
  }
}

TEST_F(Filter, GraphPathReturnsOnlyAllowedRowsAndGrowsItsList) {
  const int64_t n = idx_->size();
  uint32_t last_itopk = 0;
  for (double share : {0.9, 0.5, 0.2, 0.1, 0.05}) {
    SCOPED_TRACE(share);
    const row_bitset b = random_subset(n, share, 13);
    search_params p;
    p.filter = filter_algo::graph;
    const search_plan plan = plan_search(cpu(), p, *idx_, kK, 100, memory_space::host, b.view());
    EXPECT_EQ(plan.filter_path, filter_algo::graph);
    EXPECT_EQ(plan.filter, filter_kind::shared);
    EXPECT_EQ(plan.allowed_rows, b.count());
    EXPECT_GE(plan.itopk, last_itopk);  // the list grows as selectivity falls
    EXPECT_GE(double(plan.itopk) * double(b.count()) / double(n), 2.0 * kK - 32);
    last_itopk = plan.itopk;
    const result r = run(*idx_, set_->queries, b.view(), p);
    expect_valid(r, b.view(), 100, kK);
    EXPECT_GE(filtered_recall(r.ids, filtered_truth(set_->base, set_->queries, b.view(), kK), kK),
              0.95);
  }
  EXPECT_GT(last_itopk, 64u);
}

TEST_F(Filter, AllAllowedGivesTheUnfilteredResults) {
  const row_bitset all(idx_->size(), true);
  EXPECT_EQ(all.count(), idx_->size());
  search_params p;
  p.filter = filter_algo::graph;
  const result filtered = run(*idx_, set_->queries, all.view(), p);
  const result plain = run(*idx_, set_->queries, row_filter{}, p);
  EXPECT_EQ(filtered.ids, plain.ids);
  EXPECT_EQ(filtered.dist, plain.dist);
}

TEST_F(Filter, PerQueryBitsetsOnBothPaths) {
  const int64_t n = idx_->size(), nq = 100, words = row_filter::words_for(n);
  std::vector<uint32_t> bitmap(size_t(nq * words));
  for (int64_t i = 0; i < nq; ++i) {
    // Selectivities from 90% down to 0.1% across the batch.
    const double share = 0.9 * std::pow(0.001 / 0.9, double(i) / double(nq - 1));
    const row_bitset b = random_subset(n, share, 100 + uint64_t(i));
    std::copy(b.words().begin(), b.words().end(), bitmap.begin() + i * words);
  }
  const row_filter f = row_filter::per_query(bitmap.data(), nq, n);
  const std::vector<uint32_t> truth = filtered_truth(set_->base, set_->queries, f, kK);
  for (filter_algo a : {filter_algo::automatic, filter_algo::exact}) {
    SCOPED_TRACE(to_string(a));
    search_params p;
    p.filter = a;
    const result r = run(*idx_, set_->queries, f, p);
    expect_valid(r, f, nq, kK);
    if (a == filter_algo::exact) {
      EXPECT_EQ(r.ids, truth);
    } else {
      EXPECT_GE(filtered_recall(r.ids, truth, kK), 0.95);
    }
  }
  // A batch of the first 6 queries reads the first 6 bitsets.
  search_params exact;
  exact.filter = filter_algo::exact;
  const host_matrix q6 = head(set_->queries, 6);
  const row_filter f6 = row_filter::per_query(bitmap.data(), 6, n);
  const result r6 = run(*idx_, q6, f6, exact);
  EXPECT_EQ(std::vector<uint32_t>(r6.ids.begin() + 50, r6.ids.end()),
            std::vector<uint32_t>(truth.begin() + 50, truth.begin() + 60));
}

TEST_F(Filter, FewerAllowedRowsThanK) {
  const int64_t n = idx_->size();
  for (filter_algo a : {filter_algo::automatic, filter_algo::graph, filter_algo::exact}) {
    SCOPED_TRACE(to_string(a));
    search_params p;
    p.filter = a;
    // Nothing allowed: every slot empty.
    const row_bitset none(n);
    const result r0 = run(*idx_, set_->queries, none.view(), p);
    for (size_t i = 0; i < r0.ids.size(); ++i) {
      ASSERT_EQ(r0.ids[i], kInvalidId);
      ASSERT_TRUE(std::isinf(r0.dist[i]));
    }
    // Exactly k rows, and k - 1: the exact path returns all of them; the graph path returns
    // only allowed rows (which ones it finds depends on the walk).
    for (uint32_t count : {kK, kK - 1}) {
      std::vector<uint32_t> ids;
      for (uint32_t i = 0; i < count; ++i) ids.push_back(i * 977 % uint32_t(n));
      const row_bitset b = row_bitset::from_ids(ids.data(), int64_t(ids.size()), n);
      const result r = run(*idx_, set_->queries, b.view(), p);
      expect_valid(r, b.view(), 100, kK);
      if (a != filter_algo::graph) {
        EXPECT_EQ(r.ids, filtered_truth(set_->base, set_->queries, b.view(), kK));
      }
    }
  }
}

TEST_F(Filter, BadFiltersAreClearErrors) {
  const int64_t n = idx_->size();
  std::vector<uint32_t> ids(10), dummy(size_t(row_filter::words_for(n + 64)) * 100, ~0u);
  std::vector<float> dist(10);
  const host_matrix q1 = head(set_->queries, 1);
  const auto attempt = [&](const row_filter& f) {
    search(cpu(), {}, *idx_, q1, 10, {ids.data(), 1, 10}, {dist.data(), 1, 10}, f);
  };
  const auto expect_error = [](auto&& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const cagra::error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { attempt(row_filter::shared(dummy.data(), n - 1)); }, "covers 9899 rows");
  expect_error([&] { attempt(row_filter::shared(dummy.data(), n + 64)); }, "index has 9900");
  expect_error([&] { attempt(row_filter::per_query(dummy.data(), 3, n)); },
               "3 per-query bitsets but the batch has 1");
  row_filter dev = row_filter::shared(dummy.data(), n);
  dev.space = memory_space::device;
  expect_error([&] { attempt(dev); }, "device memory");
  const int64_t bad[] = {3, n};
  expect_error([&] { (void)row_bitset::from_ids(bad, 2, n); }, "allowed id 9900 (position 1)");
  const uint32_t bad32[] = {uint32_t(n) + 5};
  expect_error([&] { (void)row_bitset::from_ids(bad32, 1, n); }, "outside the index's rows");
  expect_error([&] { (void)row_bitset(-1); }, "covers 0..");
  search_params p;
  p.filter = static_cast<filter_algo>(7);
  expect_error(
      [&] {
        search(cpu(), p, *idx_, q1, 10, {ids.data(), 1, 10}, {}, {});
      },
      "unknown filter algorithm 7");
}

// row_filter::allowed_rows stands for the plan's count of a shared bitset. A wrong one misplans
// the search but never returns a disallowed row, and the exact path's row list (sized by its
// own count) is right whatever the caller said.
TEST_F(Filter, AWrongKnownCountNeverReturnsDisallowedRows) {
  const row_bitset b = random_subset(idx_->size(), 0.5, 7);
  const int64_t nq = 20;
  const host_matrix q = head(set_->queries, nq);
  search_params exact;
  exact.filter = filter_algo::exact;
  const result oracle = run(*idx_, q, b.view(), exact);
  for (int64_t said : {int64_t{0}, int64_t{3}, b.count() / 10, idx_->size(), int64_t{1} << 40}) {
    row_filter f = b.view();
    f.allowed_rows = said;
    const result auto_path = run(*idx_, q, f);
    expect_valid(auto_path, f, nq, kK);
    const result exact_path = run(*idx_, q, f, exact);
    EXPECT_EQ(exact_path.ids, oracle.ids) << "said " << said;
  }
}

TEST(FilterBitset, SetTestCountAndWords) {
  row_bitset b(70, true);
  EXPECT_EQ(b.count(), 70);
  EXPECT_EQ(b.words().size(), 3u);
  EXPECT_EQ(b.words()[2], 0x3Fu);  // no bits past row 69
  b.set(33, false);
  EXPECT_FALSE(b.test(33));
  EXPECT_TRUE(b.view().allows(0, 34));
  EXPECT_EQ(b.count(), 69);
  const uint8_t mask[5] = {0, 1, 0, 1, 1};
  const row_bitset m = row_bitset::from_mask(mask, 5);
  EXPECT_EQ(m.words()[0], 0x1Au);
  // The plan's count (of a bitset without a known count) reads 8 words at a time: sizes around
  // those blocks, against a row-by-row count; the bitset's own count follows every set().
  for (int64_t n : {1, 31, 32, 255, 256, 257, 288, 1000, 4099}) {
    row_bitset r(n);
    int64_t expected = 0;
    for (int64_t i = 0; i < n; ++i)
      if ((i * 2654435761u) % 7 < 3) {
        r.set(i);
        ++expected;
      }
    EXPECT_EQ(core::allowed_count(row_filter::shared(r.words().data(), n), 0), expected) << n;
    EXPECT_EQ(r.count(), expected) << n;
    EXPECT_EQ(r.view().allowed_rows, expected) << n;
    EXPECT_EQ(row_bitset(n, true).count(), n) << n;
  }
  // Setting a set bit or clearing a clear one changes nothing.
  row_bitset c(40);
  c.set(5);
  c.set(5);
  c.set(6, false);
  c.set(39);
  c.set(39, false);
  c.set(39, false);
  EXPECT_EQ(c.count(), 1);
  EXPECT_EQ(row_bitset::from_mask(mask, 5).count(), 3);
  const int64_t ids[4] = {2, 2, 7, 0};
  EXPECT_EQ(row_bitset::from_ids(ids, 4, 10).count(), 3);
  EXPECT_EQ(row_filter::shared(c.words().data(), 40).allowed_rows, -1) << "unknown: counted";
}

// The stamp names a bitset's bits (row_filter::stamp): the CUDA backend skips comparing a
// shared bitset with its device copy when the stamp is the one copied, so any change must
// renew it, and distinct bitsets must never share one.
TEST(FilterBitset, StampNamesTheBits) {
  row_bitset a(100), b(100);
  EXPECT_NE(a.stamp(), 0u);
  EXPECT_NE(a.stamp(), b.stamp());
  EXPECT_EQ(a.view().stamp, a.stamp());
  const uint64_t first = a.stamp();
  a.set(3, false);  // already clear: the same bits, the same stamp
  EXPECT_EQ(a.stamp(), first);
  a.set(3);
  EXPECT_NE(a.stamp(), first);
  const row_bitset copy = a;  // the same bits
  EXPECT_EQ(copy.stamp(), a.stamp());
  const uint64_t before = a.stamp();
  a.set(3, false);
  EXPECT_NE(a.stamp(), before);
  EXPECT_EQ(copy.stamp(), before);
  EXPECT_NE(a.stamp(), copy.stamp());
  const int64_t ids[2] = {1, 2};
  EXPECT_NE(row_bitset::from_ids(ids, 2, 10).stamp(), row_bitset::from_ids(ids, 2, 10).stamp());
  EXPECT_NE(row_filter::new_stamp(), row_filter::new_stamp());
  EXPECT_EQ(row_filter::shared(a.words().data(), 100).stamp, 0u) << "raw words: none";
}

// allowed_ids (the exact path's row list) reads two words at a time and masks the last one:
// sizes around those boundaries, with bits set past the last row (a caller's raw words may have
// them), against a row-by-row scan.
TEST(FilterBitset, AllowedIdsMatchARowByRowScan) {
  for (int64_t n : {1, 31, 32, 33, 63, 64, 65, 95, 96, 97, 1000, 100003}) {
    std::vector<uint32_t> words(size_t(row_filter::words_for(n)), 0u);
    for (int64_t i = 0; i < int64_t(words.size()) * 32; ++i)
      if ((i * 2654435761u) % 5 < 2) words[size_t(i / 32)] |= 1u << (i % 32);
    const row_filter f = row_filter::shared(words.data(), n);
    std::vector<uint32_t> expected;
    for (int64_t i = 0; i < n; ++i)
      if (f.allows(0, i)) expected.push_back(uint32_t(i));
    EXPECT_EQ(core::allowed_ids(f), expected) << n;
  }
}

}  // namespace
}  // namespace cagra::test
