// Filters on an index with deleted rows (core::visible_rows, docs/filter.md "Stamps"): the
// live rows reach the search with their count and stamp, a stamped shared filter's AND with them
// is kept, and found by the stamp where the answers are checked; a removal, a changed filter or a
// stale stamp never lets a call return a deleted or disallowed row. CPU backend.
#include <gtest/gtest.h>

#include <cagra/plan.hpp>

#include "core/filter.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

/** The ids of a CPU search of `q` under `f` ([q.rows(), k]). */
std::vector<uint32_t> search_ids(const cagra::index& idx, const host_matrix& q, const row_filter& f,
                                 uint32_t k = kK) {
  std::vector<uint32_t> ids(size_t(q.rows()) * k);
  search(cpu(), {}, idx, q, k, {ids.data(), q.rows(), k}, {}, f);
  return ids;
}

// One-query calls under a stamped shared filter on an index with deleted rows find the filter's
// AND with the live rows by the stamp alone, since their answers are checked. Words changed
// under the same stamp leave that AND stale: each step filters out the row the last call found
// nearest, keeping the stamp, and the stale AND's answer sends the call round again with the
// words compared, so no call returns a row its words disallow.
TEST(FilterDeletedRows, AStaleStampNeverReturnsDisallowedRows) {
  const real_set set = bigann10k();
  index_params p;
  p.graph_degree = 16;
  p.intermediate_graph_degree = 32;
  cagra::index idx = build(cpu(), p, head(set.base, 2000));
  const int64_t gone = 11;
  remove(cpu(), idx, &gone, 1);
  row_bitset user(idx.size(), true);
  std::vector<uint32_t> words = user.words();
  const uint64_t stamp = user.stamp();
  const host_matrix q = slice(set.queries, 0, 1);
  uint32_t last = kInvalidId;
  for (int step = 0; step < 6; ++step) {
    const row_filter f = row_filter::shared(words.data(), idx.size(), -1, stamp);
    const std::vector<uint32_t> ids = search_ids(idx, q, f);
    for (const uint32_t id : ids) {
      ASSERT_NE(id, kInvalidId) << "step " << step;
      ASSERT_TRUE(f.allows(0, id)) << "step " << step << ": row " << id << " filtered out";
      ASSERT_FALSE(idx.is_deleted(id)) << "step " << step << ": row " << id << " deleted";
    }
    last = ids[0];
    words[last / 32] &= ~(1u << (last % 32));
  }
  const row_filter f = row_filter::shared(words.data(), idx.size(), -1, stamp);
  core::visible_storage s;
  const row_filter trusted = core::visible_rows(idx, f, 1, s, core::stamp_trust::answers_checked);
  EXPECT_TRUE(s.by_stamp);
  EXPECT_TRUE(trusted.allows(0, last)) << "the AND of the words before the last change";
  const row_filter compared = core::visible_rows(idx, f, 1, s);
  EXPECT_FALSE(s.by_stamp);
  EXPECT_FALSE(compared.allows(0, last));
  EXPECT_FALSE(compared.allows(0, gone));
  uint32_t allowed = 0;
  while (!compared.allows(0, allowed)) ++allowed;
  const uint32_t ids[4] = {allowed, kInvalidId, last, uint32_t(idx.size())};
  EXPECT_TRUE(core::answers_allowed(compared, ids, 2)) << "empty slots are skipped";
  EXPECT_FALSE(core::answers_allowed(compared, ids, 3));
  EXPECT_FALSE(core::answers_allowed(compared, ids + 3, 1)) << "a row past the index";
}

// The index's deleted rows reach the search as its live-row bitset with the count and a stamp
// that every removal renews. A stamped shared filter's AND with them is kept with its count and a
// stamp of its own while both stay the same (the words compared); other filters are ANDed and
// counted each call.
TEST(FilterDeletedRows, ComeWithTheirCountAndStamp) {
  cagra::index idx = ring_index();
  core::visible_storage storage;
  EXPECT_TRUE(core::visible_rows(idx, {}, 1, storage).empty());
  const int64_t gone[2] = {4, 9};
  remove(cpu(), idx, gone, 1);
  const row_filter live = core::visible_rows(idx, {}, 1, storage);
  EXPECT_EQ(live.allowed_rows, idx.size() - 1);
  EXPECT_EQ(live.stamp, idx.live_rows_stamp());
  EXPECT_NE(live.stamp, 0u);
  remove(cpu(), idx, gone + 1, 1);
  const row_filter after = core::visible_rows(idx, {}, 1, storage);
  EXPECT_EQ(after.allowed_rows, idx.size() - 2);
  EXPECT_NE(after.stamp, live.stamp);
  EXPECT_FALSE(after.allows(0, 9));
  row_bitset user(idx.size(), true);
  user.set(0, false);
  const row_filter both = core::visible_rows(idx, user.view(), 1, storage);
  EXPECT_NE(both.stamp, 0u);
  EXPECT_EQ(both.allowed_rows, idx.size() - 3);
  EXPECT_FALSE(both.allows(0, 0));
  EXPECT_FALSE(both.allows(0, 4));
  EXPECT_TRUE(both.allows(0, 5));
  core::visible_storage again;
  const row_filter kept = core::visible_rows(idx, user.view(), 1, again);
  EXPECT_EQ(kept.stamp, both.stamp) << "the same words and live rows: the kept AND";
  EXPECT_EQ(kept.words, both.words);
  // Raw words under the same stamp but changed: their own AND, never the kept one.
  std::vector<uint32_t> raw = user.words();
  raw[0] |= 1u;  // row 0 allowed again
  row_filter stale = row_filter::shared(raw.data(), idx.size(), -1, user.stamp());
  const row_filter fresh = core::visible_rows(idx, stale, 1, again);
  EXPECT_NE(fresh.stamp, both.stamp);
  EXPECT_TRUE(fresh.allows(0, 0));
  EXPECT_EQ(fresh.allowed_rows, idx.size() - 2);
  // Another removal: a new AND.
  const int64_t more = 7;
  remove(cpu(), idx, &more, 1);
  const row_filter after_remove = core::visible_rows(idx, user.view(), 1, again);
  EXPECT_NE(after_remove.stamp, both.stamp);
  EXPECT_FALSE(after_remove.allows(0, 7));
  EXPECT_EQ(after_remove.allowed_rows, idx.size() - 4);
  // Without a stamp: ANDed into the storage, counted by the plan.
  const row_filter plain =
      core::visible_rows(idx, row_filter::shared(raw.data(), idx.size()), 1, storage);
  EXPECT_EQ(plain.stamp, 0u);
  EXPECT_EQ(plain.allowed_rows, -1);
  EXPECT_EQ(plain.words, storage.words.data());
  EXPECT_FALSE(plain.allows(0, 4));
}

// A stream of one-query searches under a row_bitset on an index with deleted rows (the kept
// AND of visible_rows): each call's nearest row is then removed or filtered out in turn, and the
// next call never returns it.
TEST(FilterDeletedRows, AKeptAndFollowsRemovalsAndFilterChanges) {
  cagra::index idx = ring_index();
  const int64_t first = 3;
  remove(cpu(), idx, &first, 1);
  row_bitset user(idx.size(), true);
  const host_matrix q = slice(idx.vectors(), 5, 1);
  for (int step = 0; step < 8; ++step) {
    const std::vector<uint32_t> ids = search_ids(idx, q, user.view(), 3);
    for (const uint32_t id : ids) {
      ASSERT_NE(id, kInvalidId) << "step " << step;
      ASSERT_TRUE(user.test(id)) << "step " << step << ": row " << id << " filtered out";
      ASSERT_FALSE(idx.is_deleted(id)) << "step " << step << ": row " << id << " deleted";
    }
    const int64_t nearest = ids[0];
    if (step % 2)
      remove(cpu(), idx, &nearest, 1);
    else
      user.set(nearest, false);
  }
  EXPECT_EQ(idx.deleted_count(), 5);
  EXPECT_EQ(user.count(), idx.size() - 4);
}

}  // namespace
}  // namespace cagra::test
