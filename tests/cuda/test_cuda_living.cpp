// The living index on the GPU (docs/living_index.md): extend with the GPU finding the candidates
// (its search and its brute force), removed rows never returned by any GPU search path
// (single-CTA, multi-CTA, a persistent batch-1 plan), the single-CTA answers on a tombstoned
// index equal to the CPU's bit for bit (tombstones are a filter: the same walk, the same kept
// entries), and searches after extend / compact see the new index (the device copy is
// replaced). Needs a GPU: label `cuda`.
#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "bigann_fixture.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

resources on(backend b) {
  resources r;
  r.target = b;
  return r;
}

index_params params32() {
  index_params p;
  p.graph_degree = 32;
  p.intermediate_graph_degree = 64;
  return p;
}

std::vector<uint32_t> rows_found(backend b, const cagra::index& idx, const host_matrix& q,
                                 search_params p) {
  std::vector<uint32_t> ids(size_t(q.rows()) * kK);
  search(on(b), p, idx, q, kK, {ids.data(), q.rows(), kK}, {});
  return ids;
}

class CudaLiving : public bigann_gpu_suite {};

TEST_F(CudaLiving, ExtendOnTheGpuMatchesAFullBuild) {
  const host_matrix& base = set_->base;
  const int64_t n = base.rows(), half = n / 2;
  cagra::index grown = build(on(backend::cuda), params32(), slice(base, 0, half));
  extend_params ep;
  ep.chunk_size = 1000;
  extend(on(backend::cuda), ep, grown, slice(base, half, n - half));
  ASSERT_EQ(grown.size(), n);
  const graph_stats s = analyze(on(backend::cpu), grown.graph(), 64);
  EXPECT_EQ(s.invalid_edges + s.self_loops + s.duplicate_edges, 0);
  for (uint32_t itopk : {32u, 64u}) {
    search_params p;
    p.itopk_size = itopk;
    const std::vector<uint32_t> f = rows_found(backend::cuda, *u8_, set_->queries, p);
    const std::vector<uint32_t> g = rows_found(backend::cuda, grown, set_->queries, p);
    const int64_t nq = set_->queries.rows();
    const double rf = recall({f.data(), nq, kK}, truth(), kK);
    const double rg = recall({g.data(), nq, kK}, truth(), kK);
    std::printf("itopk %u: full build %.4f, half + GPU extend %.4f\n", itopk, rf, rg);
    EXPECT_GE(rg, rf - 0.01);
  }
}

TEST_F(CudaLiving, RemovedRowsAreNeverReturnedOnAnyPath) {
  cagra::index idx = build(on(backend::cuda), params32(), set_->base);
  std::vector<int64_t> order(static_cast<size_t>(idx.size()));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(5));
  order.resize(order.size() * 3 / 10);
  remove(on(backend::cuda), idx, order.data(), int64_t(order.size()));
  const std::set<int64_t> gone(order.begin(), order.end());
  auto check = [&](const std::vector<uint32_t>& ids, const char* what) {
    for (uint32_t id : ids) ASSERT_TRUE(id == kInvalidId || !gone.count(id)) << what << " " << id;
  };
  search_params single;
  single.algo = search_algo::single_cta;
  const std::vector<uint32_t> g = rows_found(backend::cuda, idx, set_->queries, single);
  check(g, "single-CTA");
  EXPECT_EQ(g, rows_found(backend::cpu, idx, set_->queries, single))
      << "single-CTA on a tombstoned index differs from the CPU";
  search_params multi;
  multi.algo = search_algo::multi_cta;
  multi.itopk_size = 128;
  check(rows_found(backend::cuda, idx, set_->queries, multi), "multi-CTA");
  search_params persistent;
  persistent.persistent = true;
  for (int64_t i = 0; i < 20; ++i)
    check(rows_found(backend::cuda, idx, slice(set_->queries, i, 1), persistent), "batch 1");
}

/** Batch-1 calls between removals, at the defaults (the resident kernel, which keeps the
 *  live-row bitset on the device while its stamp stays the same): each removal of a query's
 *  nearest row renews the stamp, so the next call copies the bitset again and never returns it. */
TEST_F(CudaLiving, RemovalsBetweenBatchOneCallsAreSeen) {
  cagra::index idx = build(on(backend::cuda), params32(), set_->base);
  const int64_t first = 4;
  remove(on(backend::cuda), idx, &first, 1);  // the bitset exists from the first call on
  for (int64_t i = 0; i < 20; ++i) {
    const host_matrix one = slice(set_->queries, i, 1);
    const std::vector<uint32_t> before = rows_found(backend::cuda, idx, one, {});
    ASSERT_NE(before[0], kInvalidId);
    const int64_t nearest = before[0];
    remove(on(backend::cuda), idx, &nearest, 1);
    for (const uint32_t id : rows_found(backend::cuda, idx, one, {}))
      ASSERT_TRUE(id != uint32_t(nearest) && id != uint32_t(first)) << "query " << i;
  }
}

/** The same under a row_bitset of the caller's (the AND with the live rows kept between calls,
 *  core::visible_rows): the query's nearest row is removed or filtered out in turn. */
TEST_F(CudaLiving, RemovalsAndFilterChangesBetweenBatchOneCallsAreSeen) {
  cagra::index idx = build(on(backend::cuda), params32(), set_->base);
  const int64_t first = 4;
  remove(on(backend::cuda), idx, &first, 1);
  row_bitset user = random_subset(idx.size(), 0.5, 53);
  for (int64_t i = 0; i < 20; ++i) {
    const host_matrix one = slice(set_->queries, i, 1);
    std::vector<uint32_t> ids(kK);
    search(on(backend::cuda), {}, idx, one, kK, {ids.data(), 1, kK}, {}, user.view());
    ASSERT_NE(ids[0], kInvalidId);
    for (const uint32_t id : ids)
      ASSERT_TRUE(id == kInvalidId || (user.test(id) && !idx.is_deleted(id)))
          << "query " << i << ": row " << id;
    const int64_t nearest = ids[0];
    if (i % 2)
      remove(on(backend::cuda), idx, &nearest, 1);
    else
      user.set(nearest, false);
    search(on(backend::cuda), {}, idx, one, kK, {ids.data(), 1, kK}, {}, user.view());
    for (const uint32_t id : ids)
      ASSERT_TRUE(id == kInvalidId || (user.test(id) && !idx.is_deleted(id)))
          << "query " << i << ", after: row " << id;
  }
}

/** The same under raw words whose stamp stays while they change (a stale stamp): the kept AND
 *  is then found by the stamp alone and is stale, and the answer it lets through (the row just
 *  filtered out) sends the call round again with the words compared (core::visible_rows). */
TEST_F(CudaLiving, AStaleStampOnAnIndexWithDeletionsNeverReturnsDisallowedRows) {
  cagra::index idx = build(on(backend::cuda), params32(), set_->base);
  const int64_t first = 4;
  remove(on(backend::cuda), idx, &first, 1);
  std::vector<uint32_t> words = random_subset(idx.size(), 0.5, 59).words();
  const uint64_t stamp = row_filter::new_stamp();
  const row_filter f = row_filter::shared(words.data(), idx.size(), -1, stamp);
  for (int64_t i = 0; i < 20; ++i) {
    const host_matrix one = slice(set_->queries, i, 1);
    std::vector<uint32_t> ids(kK);
    for (int call = 0; call < 2; ++call) {
      search(on(backend::cuda), {}, idx, one, kK, {ids.data(), 1, kK}, {}, f);
      ASSERT_NE(ids[0], kInvalidId);
      for (const uint32_t id : ids)
        ASSERT_TRUE(id == kInvalidId || (f.allows(0, id) && !idx.is_deleted(id)))
            << "query " << i << " call " << call << ": row " << id;
      words[ids[0] / 32] &= ~(1u << (ids[0] % 32));  // the nearest row out, the stamp kept
    }
  }
}

TEST_F(CudaLiving, SearchesSeeTheIndexAfterExtendAndCompact) {
  const host_matrix& base = set_->base;
  cagra::index idx = build(on(backend::cuda), params32(), slice(base, 0, 6000));
  search_params persistent;
  persistent.persistent = true;
  const host_matrix one = slice(base, 8000, 1);     // a stored row of the second part
  rows_found(backend::cuda, idx, one, persistent);  // the resident kernel runs on the old copy
  extend(on(backend::cuda), {}, idx, slice(base, 6000, 3900));
  EXPECT_EQ(rows_found(backend::cuda, idx, one, persistent)[0], 8000u);
  std::vector<int64_t> gone(3000);
  std::iota(gone.begin(), gone.end(), int64_t{0});
  remove(on(backend::cuda), idx, gone.data(), 3000);
  compact(on(backend::cuda), idx);
  ASSERT_EQ(idx.size(), 6900);
  const std::vector<uint32_t> after = rows_found(backend::cuda, idx, one, persistent);
  EXPECT_EQ(idx.label_of(after[0]), 8000);
  for (uint32_t id : rows_found(backend::cuda, idx, set_->queries, {})) ASSERT_LT(id, 6900u);
}

}  // namespace
}  // namespace cagra::test
