// Filters (cagra/filter.hpp): the owning row_bitset, and the checks and counts the plan and the
// backends share (core/filter.hpp).
#include "core/filter.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>

namespace cagra {

namespace {
void check_rows(int64_t rows) {
  CAGRA_EXPECTS(rows >= 0 && rows <= kMaxRows, "a row bitset covers 0..%lld rows (got %lld)",
                (long long)kMaxRows, (long long)rows);
}
}  // namespace

uint64_t row_filter::new_stamp() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

row_bitset::row_bitset(int64_t rows, bool allow_all)
    : rows_(rows), count_(allow_all ? rows : 0), stamp_(row_filter::new_stamp()) {
  check_rows(rows);
  words_.assign(static_cast<size_t>(row_filter::words_for(rows)), allow_all ? ~0u : 0u);
  if (allow_all && (rows & 31)) words_.back() = (1u << (rows & 31)) - 1u;  // no bits past rows
}

row_bitset row_bitset::from_ids(const int64_t* ids, int64_t n, int64_t rows) {
  row_bitset b(rows);
  for (int64_t i = 0; i < n; ++i) {
    CAGRA_EXPECTS(ids[i] >= 0 && ids[i] < rows,
                  "allowed id %lld (position %lld) is outside the index's rows [0, %lld)",
                  (long long)ids[i], (long long)i, (long long)rows);
    b.assign(ids[i], true);
  }
  return b;
}

row_bitset row_bitset::from_ids(const uint32_t* ids, int64_t n, int64_t rows) {
  row_bitset b(rows);
  for (int64_t i = 0; i < n; ++i) {
    CAGRA_EXPECTS(int64_t{ids[i]} < rows,
                  "allowed id %u (position %lld) is outside the index's rows [0, %lld)", ids[i],
                  (long long)i, (long long)rows);
    b.assign(ids[i], true);
  }
  return b;
}

row_bitset row_bitset::from_mask(const uint8_t* mask, int64_t rows) {
  row_bitset b(rows);
  for (int64_t i = 0; i < rows; ++i)
    if (mask[i]) b.assign(i, true);
  return b;
}

void row_bitset::set(int64_t row, bool allowed) {
  CAGRA_EXPECTS(row >= 0 && row < rows_, "row %lld is outside the bitset's rows [0, %lld)",
                (long long)row, (long long)rows_);
  if (assign(row, allowed)) stamp_ = row_filter::new_stamp();
}

bool row_bitset::assign(int64_t row, bool allowed) {
  const uint32_t bit = 1u << (row & 31);
  uint32_t& w = words_[static_cast<size_t>(row >> 5)];
  if (((w & bit) != 0) == allowed) return false;
  count_ += allowed ? 1 : -1;
  w ^= bit;
  return true;
}

}  // namespace cagra

namespace cagra::core {

namespace {

/** Set bits of words[0, n). The plan counts a filter on every search call: with the popcnt
 *  instruction (chosen at run time: the library is built without -march) a 1M-row bitset takes
 *  a few microseconds, the portable bit-twiddling ~10x longer (most of a batch-1 call). Eight
 *  bytes a popcnt and four independent sums: row_bitset::count() of 1M rows took 9.5-10.9 us with
 *  one popcnt of 4 bytes at a time into one sum, 5.8-6.6 us so (the 2-core AMD EPYC development
 *  machine, bench/filter_timing.cpp built at both commits). */
inline __attribute__((always_inline)) int64_t count_words_by8(const uint32_t* w, int64_t n) {
  int64_t c0 = 0, c1 = 0, c2 = 0, c3 = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x[4];
    std::memcpy(x, w + i, sizeof x);
    c0 += __builtin_popcountll(x[0]);
    c1 += __builtin_popcountll(x[1]);
    c2 += __builtin_popcountll(x[2]);
    c3 += __builtin_popcountll(x[3]);
  }
  for (; i < n; ++i) c0 += __builtin_popcount(w[i]);
  return c0 + c1 + c2 + c3;
}
int64_t count_words_portable(const uint32_t* w, int64_t n) { return count_words_by8(w, n); }
#if defined(__x86_64__) && defined(__GNUC__)
// Inlined here, the builtins become popcnt instructions.
__attribute__((target("popcnt"))) int64_t count_words_popcnt(const uint32_t* w, int64_t n) {
  return count_words_by8(w, n);
}
#endif
int64_t count_words(const uint32_t* w, int64_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool has_popcnt = __builtin_cpu_supports("popcnt");
  if (has_popcnt) return count_words_popcnt(w, n);
#endif
  return count_words_portable(w, n);
}

/** Allowed rows of one bitset of `rows` bits (bits past `rows` in the last word are ignored). */
int64_t count_bits(const uint32_t* w, int64_t rows) {
  const int64_t full = rows / 32;
  int64_t c = count_words(w, full);
  if (rows & 31) c += __builtin_popcount(w[full] & ((1u << (rows & 31)) - 1u));
  return c;
}

}  // namespace

void check_filter(const row_filter& f, int64_t rows, int64_t batch) {
  CAGRA_EXPECTS(f.space == memory_space::host,
                "the filter is in device memory: filters are read from host memory (pass a host "
                "bitset; the CUDA backend copies it)");
  CAGRA_EXPECTS(f.rows == rows,
                "the filter covers %lld rows but the index has %lld: a filter has one bit per "
                "index row",
                (long long)f.rows, (long long)rows);
  CAGRA_EXPECTS(f.queries == 0 || f.queries == batch,
                "the filter holds %lld per-query bitsets but the batch has %lld queries (use 0 "
                "for one bitset shared by the batch)",
                (long long)f.queries, (long long)batch);
}

filter_kind kind_of(const row_filter& f) {
  if (f.empty()) return filter_kind::none;
  return f.queries ? filter_kind::per_query : filter_kind::shared;
}

int64_t allowed_count(const row_filter& f, int64_t q) {
  return count_bits(f.words + (f.queries ? q * row_filter::words_for(f.rows) : 0), f.rows);
}

std::vector<uint32_t> allowed_ids(const row_filter& f) {
  // Sized by the count, filled through a pointer, two bitset words at a time: the exact filtered
  // path builds this list on every call, and a 1M-row bitset at 1% or 0.1% took 51-83 us row by
  // row with push_back against 15-22 us so (build/filter_timing, 2-core development machine;
  // bench/results/logs/allowed-ids-dev-2core.txt). Bits past `rows` are masked off the last word.
  std::vector<uint32_t> ids(static_cast<size_t>(allowed_count(f, 0)));
  uint32_t* out = ids.data();
  const auto emit = [&out](uint64_t w, uint64_t base) {
    for (; w; w &= w - 1) *out++ = static_cast<uint32_t>(base + __builtin_ctzll(w));
  };
  const int64_t full = f.rows / 32, pairs = full / 2;
  for (int64_t i = 0; i < pairs; ++i) {
    uint64_t w;
    std::memcpy(&w, f.words + 2 * i, sizeof w);
    if (w) emit(w, uint64_t(i) * 64);
  }
  if (full & 1) emit(f.words[full - 1], uint64_t(full - 1) * 32);
  if (f.rows & 31) emit(f.words[full] & ((1u << (f.rows & 31)) - 1u), uint64_t(full) * 32);
  return ids;
}

namespace {

/** A shared bitset ANDed with an index's live rows, with its count and a stamp of its own. */
struct kept_and {
  uint64_t live_stamp = 0;
  uint64_t user_stamp = 0;     // the caller's stamp of the words it was made from
  std::vector<uint32_t> user;  // those words
  std::vector<uint32_t> words;
  int64_t count = 0;
  uint64_t stamp = 0;
};

/** The AND of the stamped shared bitset `user` and `idx`'s live rows: one of the last two made
 *  when its live rows are the same (their stamp) and so are the words (compared, or with
 *  `by_stamp` named by the caller's stamp alone), else made and kept in place of one made under
 *  the same stamps (whose words then changed under the caller's stamp) or of the older one. A
 *  batch-1 stream under one filter on an index with deletions then neither ANDs nor counts a
 *  call, and the CUDA backend finds the AND's stamp. `found_by_stamp`: the words not compared. */
std::shared_ptr<const kept_and> and_with_live(const index& idx, const row_filter& user,
                                              bool by_stamp, bool& found_by_stamp) {
  static std::mutex mutex;
  static std::shared_ptr<const kept_and> kept[2];
  static unsigned next = 0;
  const std::vector<uint32_t>& live = idx.live_rows();
  const size_t n = live.size();
  const uint64_t live_stamp = idx.live_rows_stamp();
  std::shared_ptr<const kept_and> candidates[2];
  {
    std::lock_guard<std::mutex> lock(mutex);
    candidates[0] = kept[0];
    candidates[1] = kept[1];
  }
  found_by_stamp = false;
  for (const auto& c : candidates) {
    if (!c || c->live_stamp != live_stamp || c->user.size() != n) continue;
    if (by_stamp && c->user_stamp == user.stamp) {
      found_by_stamp = true;
      return c;
    }
    if (!by_stamp && std::memcmp(c->user.data(), user.words, n * sizeof(uint32_t)) == 0) return c;
  }
  auto made = std::make_shared<kept_and>();
  made->live_stamp = live_stamp;
  made->user_stamp = user.stamp;
  made->user.assign(user.words, user.words + n);
  made->words.resize(n);
  for (size_t w = 0; w < n; ++w) made->words[w] = user.words[w] & live[w];
  made->count = count_bits(made->words.data(), idx.size());
  made->stamp = row_filter::new_stamp();
  std::lock_guard<std::mutex> lock(mutex);
  for (auto& k : kept)
    if (k && k->live_stamp == live_stamp && k->user_stamp == user.stamp) {
      k = made;
      return made;
    }
  kept[next++ % 2] = made;
  return made;
}

}  // namespace

row_filter visible_rows(const index& idx, const row_filter& user, int64_t batch,
                        visible_storage& storage, stamp_trust trust) {
  storage.by_stamp = false;
  if (idx.deleted_count() == 0) return user;
  const std::vector<uint32_t>& live = idx.live_rows();
  // The index's own bitset comes with its count and stamp (no count, no comparison a call).
  if (user.empty())
    return row_filter::shared(live.data(), idx.size(), idx.live_size(), idx.live_rows_stamp());
  if (!user.queries && user.stamp) {
    std::shared_ptr<const kept_and> a =
        and_with_live(idx, user, trust == stamp_trust::answers_checked, storage.by_stamp);
    const row_filter f = row_filter::shared(a->words.data(), idx.size(), a->count, a->stamp);
    storage.held = std::move(a);
    return f;
  }
  const size_t words = live.size();
  const int64_t sets = user.queries ? batch : 1;
  storage.words.resize(size_t(sets) * words);
  for (int64_t q = 0; q < sets; ++q)
    for (size_t w = 0; w < words; ++w)
      storage.words[size_t(q) * words + w] = user.words[size_t(q) * words + w] & live[w];
  return user.queries ? row_filter::per_query(storage.words.data(), batch, idx.size())
                      : row_filter::shared(storage.words.data(), idx.size());
}

bool answers_allowed(const row_filter& f, const uint32_t* ids, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (ids[i] != kInvalidId && (int64_t{ids[i]} >= f.rows || !f.allows(0, ids[i]))) return false;
  return true;
}

int64_t fewest_allowed(const row_filter& f, int64_t batch) {
  // The caller's count of a shared bitset stands for the plan's (row_filter::allowed_rows);
  // lists sized by a count (allowed_ids) count for themselves.
  if (!f.queries)
    return f.allowed_rows >= 0 ? std::min(f.allowed_rows, f.rows) : allowed_count(f, 0);
  int64_t fewest = f.rows;
  for (int64_t q = 0; q < batch; ++q) fewest = std::min(fewest, allowed_count(f, q));
  return fewest;
}

}  // namespace cagra::core
