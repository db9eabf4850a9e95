// Filtered search, the backend-neutral part (cagra/filter.hpp): checking a filter against the
// call, counting its allowed rows (what the plan adapts to), listing them (the exact path of a
// shared bitset). Both backends use these; the rule that picks the path is in core/plan.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <cagra/filter.hpp>
#include <cagra/index.hpp>
#include <cagra/plan.hpp>

namespace cagra::core {

/** Throws cagra::error unless `f` (non-empty) fits an index of `rows` rows and a batch of
 *  `batch` queries: host memory, `rows` bits per bitset, 0 or `batch` bitsets. */
void check_filter(const row_filter& f, int64_t rows, int64_t batch);

/** The filter's shape: none for an empty view. */
filter_kind kind_of(const row_filter& f);

/** Rows allowed to query `q` (a shared bitset: q is ignored). */
int64_t allowed_count(const row_filter& f, int64_t q);

/** The rows a shared bitset allows, ascending. */
std::vector<uint32_t> allowed_ids(const row_filter& f);

/** What visible_rows hands out: words it wrote, or a kept AND it shares (held while used).
 *  `by_stamp`: the kept AND was found by the caller's stamp alone (visible_rows' `trust`), so the
 *  caller checks the answers against its own words (answers_allowed). */
struct visible_storage {
  std::vector<uint32_t> words;
  std::shared_ptr<const void> held;
  bool by_stamp = false;
};

/** Whether to find a kept AND by the caller's stamp alone: `compare` the words (a plan, answers
 *  in device memory, large batches), or trust the stamp when the caller then checks the answers
 *  (`answers_checked`). */
enum class stamp_trust { compare, answers_checked };

/** Whether checking `answers` answers against a shared bitset of `rows` rows (answers_allowed)
 *  reads fewer words than comparing the bitset: at 1M rows, batches up to ~780 queries of 10. */
inline bool answer_check_pays(size_t answers, int64_t rows) {
  return answers * 4 <= size_t(row_filter::words_for(rows));
}

/** The rows a search of `idx` under the (checked) filter `user` may return: `user` itself when
 *  no row is deleted, the index's live rows when `user` is empty, otherwise their AND (one
 *  bitset, or one per query of `batch` for a per-query filter). The AND of a shared bitset that
 *  has a stamp is kept for the next calls with the same live rows and the same words, with its
 *  count and a stamp of its own: found by comparing the words, or, with `answers_checked`, by
 *  the caller's stamp alone (then `storage.by_stamp`; a stale stamp can only cost recall once the
 *  caller has checked the answers). Others are written into `storage` and counted by the plan.
 *  Deleted rows are the same thing to the search as rows a filter leaves out (DESIGN.md §8). */
row_filter visible_rows(const index& idx, const row_filter& user, int64_t batch,
                        visible_storage& storage, stamp_trust trust = stamp_trust::compare);

/** Whether every answer (kInvalidId slots aside) is a row the shared bitset `f` allows. */
bool answers_allowed(const row_filter& f, const uint32_t* ids, size_t n);

/** The fewest rows any query of the batch is allowed (`batch` queries). */
int64_t fewest_allowed(const row_filter& f, int64_t batch);

}  // namespace cagra::core
