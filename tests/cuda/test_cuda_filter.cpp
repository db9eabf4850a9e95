// Filtered search on the GPU (cagra/filter.hpp) against the CPU backend on the bigann10k u8
// index: the single-CTA kernel walks exactly as the CPU does and keeps the same allowed
// entries, so its filtered answers must equal the CPU's bit for bit; the multi-CTA kernel (and
// its host-merge path at small batches) must reach the CPU's recall and never return a
// disallowed row; the exact path (cuBLAS brute force over the allowed rows, or masked for
// per-query bitsets) must equal the CPU's exact answer. Needs a GPU: label `cuda`.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>

#include "bigann_fixture.hpp"
#include "core/convert.hpp"
#include "search_results.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

result run_on(backend target, const cagra::index& idx, const host_matrix& q, const row_filter& f,
              const search_params& p, uint32_t k = kK) {
  result r{std::vector<uint32_t>(size_t(q.rows()) * k, 12345u),
           std::vector<float>(size_t(q.rows()) * k, -1.f), q.rows(), k};
  resources res;
  res.target = target;
  search(res, p, idx, q, k, {r.ids.data(), q.rows(), k}, {r.dist.data(), q.rows(), k}, f);
  return r;
}

/** Allowed, distinct, sorted; empty slots (kInvalidId, +inf) only at the end. */
void expect_allowed(const result& r, const row_filter& f, const char* what) {
  for (int64_t q = 0; q < r.rows; ++q) {
    bool ended = false;
    for (uint32_t j = 0; j < r.k; ++j) {
      const uint32_t id = r.ids[q * r.k + j];
      if (id == kInvalidId) {
        ended = true;
        ASSERT_TRUE(std::isinf(r.dist[q * r.k + j])) << what << " query " << q;
        continue;
      }
      ASSERT_FALSE(ended) << what << ": query " << q << " has a result after an empty slot";
      ASSERT_LT(id, uint64_t(f.rows)) << what << ": query " << q << " slot " << j;
      ASSERT_TRUE(f.allows(q, id)) << what << ": query " << q << " got disallowed row " << id;
      if (j) {
        ASSERT_LE(r.dist[q * r.k + j - 1], r.dist[q * r.k + j]) << what;
      }
      for (uint32_t a = 0; a < j; ++a) ASSERT_NE(r.ids[q * r.k + a], id) << what;
    }
  }
}

/** Hits of `g` among the valid entries of `truth` (both [rows, k]). */
double recall_vs(const result& g, const result& truth) {
  int64_t hits = 0, wanted = 0;
  for (int64_t q = 0; q < g.rows; ++q)
    for (uint32_t j = 0; j < g.k; ++j) {
      const uint32_t t = truth.ids[q * g.k + j];
      if (t == kInvalidId) continue;
      ++wanted;
      const auto b = g.ids.begin() + q * g.k;
      hits += std::find(b, b + g.k, t) != b + g.k;
    }
  return wanted ? double(hits) / double(wanted) : 1.0;
}

class CudaFilter : public bigann_gpu_suite {};

TEST_F(CudaFilter, SingleCtaEqualsTheCpu) {
  const int64_t n = u8_->size();
  for (double share : {1.0, 0.5, 0.2, 0.1, 0.05}) {
    const row_bitset b = random_subset(n, share, 21);
    search_params p;
    p.filter = filter_algo::graph;
    p.algo = search_algo::single_cta;
    const result c = run_on(backend::cpu, *u8_, set_->queries, b.view(), p);
    const result g = run_on(backend::cuda, *u8_, set_->queries, b.view(), p);
    resources gpu;
    gpu.target = backend::cuda;
    std::printf("[ cuda     ] single-CTA filter %.2f: itopk %u\n", share,
                plan_search(gpu, p, *u8_, kK, 100, memory_space::host, b.view()).itopk);
    expect_allowed(g, b.view(), "single-CTA");
    EXPECT_EQ(g.ids, c.ids) << "share " << share;
    EXPECT_EQ(g.dist, c.dist) << "share " << share;
  }
}

TEST_F(CudaFilter, MultiCtaAndHostMergeReachTheCpuRecall) {
  const int64_t n = u8_->size();
  search_params exact;
  exact.filter = filter_algo::exact;
  for (double share : {0.9, 0.5, 0.2, 0.1}) {
    const row_bitset b = random_subset(n, share, 23);
    const result truth = run_on(backend::cpu, *u8_, set_->queries, b.view(), exact);
    search_params p;
    p.filter = filter_algo::graph;
    p.algo = search_algo::multi_cta;
    const result c = run_on(backend::cpu, *u8_, set_->queries, b.view(), p);
    const double rc = recall_vs(c, truth);
    // 100 queries in one call (the device merge), then one and 8 at a time (the host merge).
    for (int64_t batch : {int64_t{100}, int64_t{8}, int64_t{1}}) {
      result g{std::vector<uint32_t>(100 * kK), std::vector<float>(100 * kK), 100, kK};
      for (int64_t first = 0; first < 100; first += batch) {
        const int64_t rows = std::min<int64_t>(batch, 100 - first);
        const host_matrix q = head(set_->queries, first + rows);
        host_matrix part(q.type(), rows, q.cols());
        std::memcpy(part.data(), q.row_bytes(first), part.size_bytes());
        const result r = run_on(backend::cuda, *u8_, part, b.view(), p);
        std::copy(r.ids.begin(), r.ids.end(), g.ids.begin() + first * kK);
        std::copy(r.dist.begin(), r.dist.end(), g.dist.begin() + first * kK);
      }
      const double rg = recall_vs(g, truth);
      std::printf("[ cuda     ] multi-CTA filter %.2f batch %lld: recall cpu %.4f gpu %.4f\n",
                  share, (long long)batch, rc, rg);
      expect_allowed(g, b.view(), "multi-CTA");
      EXPECT_GE(rg, std::min(0.95, rc - 0.01)) << "share " << share << " batch " << batch;
    }
  }
}

TEST_F(CudaFilter, ExactPathEqualsTheCpu) {
  const int64_t n = u8_->size(), nq = 100, words = row_filter::words_for(n);
  search_params p;
  p.filter = filter_algo::exact;
  for (double share : {0.5, 0.01, 0.001, 0.0}) {
    const row_bitset b = random_subset(n, share, 29);
    const result c = run_on(backend::cpu, *u8_, set_->queries, b.view(), p);
    const result g = run_on(backend::cuda, *u8_, set_->queries, b.view(), p);
    expect_allowed(g, b.view(), "exact shared");
    EXPECT_EQ(g.ids, c.ids) << "share " << share;
    EXPECT_EQ(g.dist, c.dist) << "share " << share;
  }
  // Per-query bitsets, 90% down to 0.01% (fewer than k rows for the last queries).
  std::vector<uint32_t> bitmap(size_t(nq * words));
  for (int64_t i = 0; i < nq; ++i) {
    const double share = 0.9 * std::pow(0.0001 / 0.9, double(i) / double(nq - 1));
    const row_bitset b = random_subset(n, share, 300 + uint64_t(i));
    std::copy(b.words().begin(), b.words().end(), bitmap.begin() + i * words);
  }
  const row_filter f = row_filter::per_query(bitmap.data(), nq, n);
  for (filter_algo a : {filter_algo::exact, filter_algo::automatic}) {
    p.filter = a;
    const result c = run_on(backend::cpu, *u8_, set_->queries, f, p);
    const result g = run_on(backend::cuda, *u8_, set_->queries, f, p);
    expect_allowed(g, f, "per-query");
    if (a == filter_algo::exact) {
      EXPECT_EQ(g.ids, c.ids);
      EXPECT_EQ(g.dist, c.dist);
    } else {
      EXPECT_GE(recall_vs(g, c), 0.95);
    }
  }
}

// Up to 16 queries of k <= 32 take one kernel over the allowed rows (exact_rows.cu) instead of
// the brute force: the same answers as the CPU's exact search, bit for bit on byte rows, at
// batch 1, 7 and 16 and k 1, 10 and 32, down to fewer allowed rows than k; on f32 rows the same
// ids (within rounding of near-ties) and distances within rounding.
TEST_F(CudaFilter, ExactPathFewQueriesEqualsTheCpu) {
  const int64_t n = u8_->size();
  search_params p;
  p.filter = filter_algo::exact;
  for (double share : {0.5, 0.01, 0.0005}) {
    const row_bitset b = random_subset(n, share, 37);
    for (uint32_t k : {1u, 10u, 32u}) {
      const result c = run_on(backend::cpu, *u8_, set_->queries, b.view(), p, k);
      for (int64_t batch : {int64_t{1}, int64_t{7}, int64_t{16}}) {
        for (int64_t first = 0; first < 32; first += batch) {
          const int64_t rows = std::min<int64_t>(batch, 32 - first);
          const result g =
              run_on(backend::cuda, *u8_, slice(set_->queries, first, rows), b.view(), p, k);
          expect_allowed(g, b.view(), "exact few queries");
          for (int64_t q = 0; q < rows; ++q)
            for (uint32_t j = 0; j < k; ++j) {
              const size_t gi = size_t(q) * k + j, ci = size_t(first + q) * k + j;
              ASSERT_EQ(g.ids[gi], c.ids[ci]) << "share " << share << " k " << k << " batch "
                                              << batch << " query " << first + q;
              ASSERT_EQ(g.dist[gi], c.dist[ci]) << "share " << share << " k " << k;
            }
        }
      }
    }
  }
  // f32 rows: the same 10K rows as floats.
  const auto to_f32 = [](const host_matrix& m) {
    return core::to_storage(m.view(), metric::l2, storage_type::f32, 0);
  };
  const host_matrix base = to_f32(set_->base), queries = to_f32(set_->queries);
  index_params ip;
  ip.graph_degree = 32;
  const cagra::index f32 = build({}, ip, base);
  const row_bitset b = random_subset(n, 0.01, 41);
  const result c = run_on(backend::cpu, f32, head(queries, 16), b.view(), p);
  const result g = run_on(backend::cuda, f32, head(queries, 16), b.view(), p);
  expect_allowed(g, b.view(), "exact few f32 queries");
  EXPECT_GE(recall_vs(g, c), 0.99);
  for (size_t i = 0; i < g.dist.size(); ++i)
    EXPECT_NEAR(g.dist[i], c.dist[i], 1e-4f * std::fabs(c.dist[i]) + 1e-3f) << i;
}

TEST_F(CudaFilter, AutomaticKeepsRecallAtEverySelectivity) {
  const int64_t n = u8_->size();
  search_params exact;
  exact.filter = filter_algo::exact;
  for (double share : {0.9, 0.5, 0.1, 0.01, 0.001, 0.0001}) {
    const row_bitset b = random_subset(n, share, 31);
    const result truth = run_on(backend::cpu, *u8_, set_->queries, b.view(), exact);
    for (int64_t batch : {int64_t{100}, int64_t{1}}) {
      const host_matrix q = head(set_->queries, batch);
      const result g = run_on(backend::cuda, *u8_, q, b.view(), search_params{});
      result t = truth;
      t.rows = batch;
      t.ids.resize(size_t(batch) * kK);
      expect_allowed(g, b.view(), "automatic");
      EXPECT_GE(recall_vs(g, t), batch == 1 ? 0.9 : 0.95) << "share " << share;
    }
  }
}

TEST_F(CudaFilter, SanitizerCase) {
  // Small and quick, every filtered path once, for compute-sanitizer: single-CTA, multi-CTA
  // (device merge and host merge), per-query bitsets, the exact path (gathered and masked).
  const host_matrix q = head(set_->queries, 4);
  const row_bitset b = random_subset(u8_->size(), 0.2, 41);
  const int64_t words = row_filter::words_for(u8_->size());
  std::vector<uint32_t> bitmap;
  for (int i = 0; i < 4; ++i) bitmap.insert(bitmap.end(), b.words().begin(), b.words().end());
  const row_filter per_query = row_filter::per_query(bitmap.data(), 4, u8_->size());
  ASSERT_EQ(int64_t(bitmap.size()), 4 * words);
  for (search_algo algo : {search_algo::single_cta, search_algo::multi_cta}) {
    search_params p;
    p.filter = filter_algo::graph;
    p.algo = algo;
    p.max_iterations = 20;
    expect_allowed(run_on(backend::cuda, *u8_, q, b.view(), p), b.view(), "graph, shared");
    expect_allowed(run_on(backend::cuda, *u8_, head(q, 1), b.view(), p), b.view(), "graph, 1");
    expect_allowed(run_on(backend::cuda, *u8_, q, per_query, p), per_query, "graph, per query");
  }
  search_params ex;
  ex.filter = filter_algo::exact;
  expect_allowed(run_on(backend::cuda, *u8_, q, b.view(), ex), b.view(), "exact, shared");
  expect_allowed(run_on(backend::cuda, *u8_, q, per_query, ex), per_query, "exact, per query");
}

/** The resident batch-1 kernel under a shared filter: it reads the workspace's device copy of
 *  the bitset on every job, so a call with another bitset must stop it before the copy. One
 *  query at a time, the filters alternating between a half of the rows and its complement (a
 *  stale bitset would return only disallowed rows), then none, then one again; a per-query
 *  filter launches the kernel instead. Every answer allowed, recall near the exact one. */
TEST_F(CudaFilter, PersistentKernelServesOneSharedFilter) {
  const int64_t n = u8_->size();
  const row_bitset half = random_subset(n, 0.5, 37);
  row_bitset other(n);
  for (int64_t r = 0; r < n; ++r) other.set(r, !half.test(r));
  resources res;
  res.target = backend::cuda;
  const search_params p;  // the defaults: persistent, the automatic shape
  EXPECT_EQ(plan_search(res, p, *u8_, kK, 1, memory_space::host, half.view()).io,
            search_io::persistent);
  const row_filter per_query = row_filter::per_query(half.words().data(), 1, n);
  EXPECT_NE(plan_search(res, p, *u8_, kK, 1, memory_space::host, per_query).io,
            search_io::persistent);
  search_params exact;
  exact.filter = filter_algo::exact;
  const int64_t nq = 40;
  const host_matrix queries = head(set_->queries, nq);
  const result truth[3] = {run_on(backend::cpu, *u8_, queries, half.view(), exact),
                           run_on(backend::cpu, *u8_, queries, other.view(), exact),
                           run_on(backend::cpu, *u8_, queries, row_filter{}, exact)};
  int64_t hits[3] = {}, wanted[3] = {};
  for (int64_t q = 0; q < nq; ++q) {
    const host_matrix one = slice(queries, q, 1);
    // A few queries under one filter (the kernel stays), then its complement, then none.
    const int phase = int(q % 8), which = phase < 3 ? 0 : phase < 7 ? 1 : 2;
    const row_filter f = which == 0 ? half.view() : which == 1 ? other.view() : row_filter{};
    const result r = run_on(backend::cuda, *u8_, one, f, p);
    if (which < 2) expect_allowed(r, f, which == 0 ? "persistent, half" : "persistent, complement");
    for (uint32_t j = 0; j < kK; ++j) {
      const uint32_t t = truth[which].ids[q * kK + j];
      if (t == kInvalidId) continue;
      ++wanted[which];
      hits[which] += std::find(r.ids.begin(), r.ids.end(), t) != r.ids.end();
    }
    // The same query under a per-query filter (a launch) between the resident calls.
    if (phase == 1)
      expect_allowed(run_on(backend::cuda, *u8_, one, per_query, p), per_query, "per query");
  }
  for (int w = 0; w < 3; ++w) {
    ASSERT_GT(wanted[w], 0);
    EXPECT_GE(double(hits[w]) / double(wanted[w]), 0.9) << "filter " << w;
  }
}

/** A bitset allowing 95% of the rows at batch 1: the resident kernel walks unfiltered and the
 *  host drops the disallowed rows as it merges (search_plan::filter_in_merge). Every answer
 *  allowed, also right after the words change (each call's nearest answer is then disallowed)
 *  and between calls under a half filter (the kernel that reads a bitset); recall within 0.01 of
 *  the kernel's own filter (filter_algo::graph) over the same queries. */
TEST_F(CudaFilter, AFilterInTheMergeKeepsTheKernelsRecall) {
  const int64_t n = u8_->size();
  row_bitset most = random_subset(n, 0.95, 53);
  const row_bitset half = random_subset(n, 0.5, 59);
  resources res;
  res.target = backend::cuda;
  const search_params p;
  search_params graph;
  graph.filter = filter_algo::graph;
  EXPECT_TRUE(plan_search(res, p, *u8_, kK, 1, memory_space::host, most.view()).filter_in_merge);
  EXPECT_FALSE(
      plan_search(res, graph, *u8_, kK, 1, memory_space::host, most.view()).filter_in_merge);
  search_params exact;
  exact.filter = filter_algo::exact;
  const int64_t nq = 60;
  const host_matrix queries = head(set_->queries, nq);
  const result truth = run_on(backend::cpu, *u8_, queries, most.view(), exact);
  result merged{std::vector<uint32_t>(size_t(nq) * kK), {}, nq, kK};
  result in_kernel = merged;
  for (int64_t q = 0; q < nq; ++q) {
    const host_matrix one = slice(queries, q, 1);
    const result a = run_on(backend::cuda, *u8_, one, most.view(), p);
    expect_allowed(a, most.view(), "in the merge");
    std::copy(a.ids.begin(), a.ids.end(), merged.ids.begin() + q * kK);
    const result b = run_on(backend::cuda, *u8_, one, most.view(), graph);
    expect_allowed(b, most.view(), "in the kernel");
    std::copy(b.ids.begin(), b.ids.end(), in_kernel.ids.begin() + q * kK);
    if (q % 10 == 9) {  // the words change: the next call must not return this answer
      ASSERT_NE(a.ids[0], kInvalidId);
      most.set(a.ids[0], false);
      expect_allowed(run_on(backend::cuda, *u8_, one, most.view(), p), most.view(), "changed");
      most.set(a.ids[0], true);
    }
    if (q % 10 == 4)
      expect_allowed(run_on(backend::cuda, *u8_, one, half.view(), p), half.view(), "half");
  }
  const double r_merge = recall_vs(merged, truth), r_kernel = recall_vs(in_kernel, truth);
  std::printf("[ recall   ] 95%% allowed, batch 1: in the merge %.4f, in the kernel %.4f\n",
              r_merge, r_kernel);
  EXPECT_GE(r_merge, r_kernel - 0.01);
  EXPECT_GE(r_merge, 0.9);
}

/** A row_bitset changed between batch-1 calls (its stamp renewed by set()) is copied again:
 *  after each call the query's nearest answer is disallowed, and the next call never returns it. */
TEST_F(CudaFilter, ARowBitsetChangedBetweenCallsIsCopiedAgain) {
  row_bitset allowed = random_subset(u8_->size(), 0.5, 43);
  const search_params p;
  for (int64_t q = 0; q < 20; ++q) {
    const host_matrix one = slice(set_->queries, q, 1);
    const result r = run_on(backend::cuda, *u8_, one, allowed.view(), p);
    expect_allowed(r, allowed.view(), "before");
    ASSERT_NE(r.ids[0], kInvalidId);
    allowed.set(r.ids[0], false);
    expect_allowed(run_on(backend::cuda, *u8_, one, allowed.view(), p), allowed.view(), "after");
  }
}

/** A stale stamp (row_filter::stamp kept while the words change under it) must not return a
 *  disallowed row: the words alternate between a half of the rows and its complement under
 *  one stamp, so the device copy the stamp names is always the other half. Batch 1 (the
 *  resident kernel) and batch 4 (a launch), each answer checked and recall near the exact one. */
TEST_F(CudaFilter, AStaleStampNeverReturnsDisallowedRows) {
  const int64_t n = u8_->size();
  const row_bitset half = random_subset(n, 0.5, 47);
  std::vector<uint32_t> words = half.words(), complement(words.size());
  for (size_t i = 0; i < words.size(); ++i) complement[i] = ~words[i];
  if (n & 31) complement.back() &= (1u << (n & 31)) - 1u;
  const uint64_t stamp = row_filter::new_stamp();
  search_params exact;
  exact.filter = filter_algo::exact;
  const search_params p;
  const int64_t nq = 24;
  const host_matrix queries = head(set_->queries, nq);
  for (const int64_t batch : {int64_t{1}, int64_t{4}}) {
    int64_t hits = 0, wanted = 0;
    for (int64_t q = 0; q < nq; q += batch) {
      if (q) std::swap(words, complement);  // the same stamp over the other half
      const row_filter now = row_filter::shared(words.data(), n, -1, stamp);
      const host_matrix some = slice(queries, q, batch);
      const result r = run_on(backend::cuda, *u8_, some, now, p);
      expect_allowed(r, now, batch == 1 ? "stale stamp, batch 1" : "stale stamp, batch 4");
      const result truth = run_on(backend::cpu, *u8_, some, now, exact);
      hits += int64_t(recall_vs(r, truth) * double(batch * kK) + 0.5);
      wanted += batch * kK;
    }
    EXPECT_GE(double(hits) / double(wanted), 0.9) << "batch " << batch;
  }
}

}  // namespace
}  // namespace cagra::test
