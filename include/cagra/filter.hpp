/**
 * @file filter.hpp
 * @brief Filtered search: the rows a search may return.
 *
 * A filter is a bitset over the index's rows, one bit per row, set = the row may be returned.
 * Bits are packed into 32-bit words, least significant bit first: row i is bit (i % 32) of word
 * (i / 32), the layout of cuVS's bitset and of numpy's `packbits(..., bitorder="little")` viewed
 * as uint32. Two shapes:
 *  - a bitset shared by every query of the batch (`row_filter::shared`), ceil(n / 32) words;
 *  - one bitset per query (`row_filter::per_query`), a row-major [nq, ceil(n / 32)] word matrix.
 *
 * Semantics (both backends): a row outside the filter is never returned, but the search still
 * walks through it (the graph stays connected whatever the filter). When fewer than k rows are
 * allowed, the allowed ones come first and the remaining slots hold kInvalidId and +inf.
 * The search adapts to the filter's selectivity (share of rows allowed): it grows its internal
 * list as selectivity falls, and below a crossover computes the exact answer over the allowed
 * rows only (search_params::filter and cagra::plan_search say which path a call takes).
 *
 * @code
 *   cagra::row_bitset allowed = cagra::row_bitset::from_ids(ids.data(), ids.size(), idx.size());
 *   cagra::search({}, {}, idx, queries, 10, neighbors, distances, allowed.view());
 * @endcode
 */
#pragma once

#include <cstdint>
#include <vector>

#include <cagra/types.hpp>

namespace cagra {

/** Non-owning view of a filter (host memory). An empty view (words == nullptr) filters nothing. */
struct row_filter {
  const uint32_t* words = nullptr;
  /** Rows the bitsets cover: must be the index's size. */
  int64_t rows = 0;
  /** 0: one bitset shared by the batch; otherwise the number of per-query bitsets (the batch). */
  int64_t queries = 0;
  memory_space space = memory_space::host;
  /** How many rows a shared bitset allows, when the caller knows it (row_bitset::view() fills it
   *  in), so that the search's plan does not count them on every call (125 KB at 1M rows, ~5 us
   *  of a ~25 us filtered batch-1 call on the GPU); -1 (the default): counted. It must be the
   *  bitset's count: a wrong one misplans the search (its path and list length), though no
   *  disallowed row is ever returned. Ignored for per-query bitsets. */
  int64_t allowed_rows = -1;
  /** A name for a shared bitset's content, when the caller has one (row_bitset::view() and the
   *  index's deleted rows fill it in; new_stamp() makes one): two filters with the same non-zero
   *  stamp must hold the same bits. The CUDA backend keeps the last shared bitset on the device;
   *  a call whose stamp names it skips comparing the bitset with that copy (another 125 KB read
   *  at 1M rows). 0 (the default): compared. A stale stamp (the words changed under it) can
   *  only cost recall: the backend checks each answer against the words and, on a disallowed
   *  row, searches again with the bitset compared. Ignored for per-query bitsets. */
  uint64_t stamp = 0;

  bool empty() const { return words == nullptr; }
  /** 32-bit words of one bitset over `rows` rows. */
  static constexpr int64_t words_for(int64_t rows) { return (rows + 31) / 32; }
  /** Whether row `row` may be returned to query `query` (host memory only). */
  bool allows(int64_t query, int64_t row) const {
    const uint32_t* w = words + (queries ? query * words_for(rows) : 0);
    return (w[row >> 5] >> (row & 31)) & 1u;
  }
  /** One bitset for the whole batch (`allowed_rows`, `stamp`: its count and name if known, see
   *  above). */
  static row_filter shared(const uint32_t* words, int64_t rows, int64_t allowed_rows = -1,
                           uint64_t stamp = 0) {
    return {words, rows, 0, memory_space::host, allowed_rows, stamp};
  }
  /** One bitset per query: `words` is [queries, words_for(rows)], row-major. */
  static row_filter per_query(const uint32_t* words, int64_t queries, int64_t rows) {
    return {words, rows, queries, memory_space::host};
  }
  /** A stamp no call has made before (never 0; thread-safe). */
  static uint64_t new_stamp();
};

/** An owning bitset over the rows of an index (what the CLI and the helpers below build). */
class row_bitset {
 public:
  row_bitset() = default;
  /** `rows` bits, all set (`allow_all`) or all clear. */
  explicit row_bitset(int64_t rows, bool allow_all = false);
  /** The rows listed in `ids` (duplicates are fine); throws for an id outside [0, rows). */
  static row_bitset from_ids(const int64_t* ids, int64_t n, int64_t rows);
  static row_bitset from_ids(const uint32_t* ids, int64_t n, int64_t rows);
  /** The rows i with mask[i] != 0. */
  static row_bitset from_mask(const uint8_t* mask, int64_t rows);

  void set(int64_t row, bool allowed = true);
  bool test(int64_t row) const { return (words_[row >> 5] >> (row & 31)) & 1u; }
  int64_t rows() const { return rows_; }
  /** Number of rows allowed (kept up to date by set(): no count over the words). */
  int64_t count() const { return count_; }
  /** Names the bits (row_filter::stamp): a new value whenever set() changes one; a copy keeps
   *  it (the same bits). */
  uint64_t stamp() const { return stamp_; }
  const std::vector<uint32_t>& words() const { return words_; }
  /** The shared filter of these rows, with their count and stamp (row_filter::allowed_rows,
   *  row_filter::stamp). */
  row_filter view() const { return row_filter::shared(words_.data(), rows_, count_, stamp_); }

 private:
  /** set() without the check and the new stamp (the factories: no one has seen the bits yet);
   *  whether the bit changed. */
  bool assign(int64_t row, bool allowed);

  int64_t rows_ = 0;
  int64_t count_ = 0;
  uint64_t stamp_ = 0;
  std::vector<uint32_t> words_;
};

}  // namespace cagra
