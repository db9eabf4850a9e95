// Write access to an index's parts for the operations that change an index in place (extend,
// remove, compact) and for load. The public index class only reads; this friend is the one door
// to its members, kept out of the public headers.
#pragma once

#include <cstdint>
#include <vector>

#include <cagra/filter.hpp>
#include <cagra/index.hpp>

namespace cagra::detail {

struct index_editor {
  static host_matrix& vectors(index& i) { return i.vectors_; }
  static std::vector<uint32_t>& graph(index& i) { return i.graph_; }
  /** The labels, to change: their stamp (index::labels_stamp) is renewed here. */
  static std::vector<int64_t>& labels(index& i) {
    i.labels_stamp_ = row_filter::new_stamp();
    return i.labels_;
  }
  /** The live-row bitset, to change: its stamp (index::live_rows_stamp) is renewed here. */
  static std::vector<uint32_t>& live(index& i) {
    i.live_stamp_ = row_filter::new_stamp();
    return i.live_;
  }
  static int64_t& deleted(index& i) { return i.deleted_; }
  /** extend's in-degree cache (cagra/index.hpp): size() counts when valid, else empty. */
  static std::vector<uint32_t>& in_degree(index& i) { return i.in_degree_; }
  /** Rebuilds the label -> row lookup from labels_; throws (naming the label) on a duplicate. */
  static void index_labels(index& i);
  /** Appends labels for rows size() - n .. size() - 1 (already checked: unique, new, >= 0) and
   *  merges them into the lookup in O(size()). An index without labels first gets its row
   *  numbers as labels. */
  static void append_labels(index& i, const int64_t* labels, int64_t n);
  /** Makes room for `rows` labels, so that append_labels up to that many does not allocate (an
   *  index without labels gets its row numbers as labels here). */
  static void reserve_labels(index& i, int64_t rows);
  /** Forgets every backend's copy of the index (the next search uploads the new one). */
  static void drop_backend_state(index& i) { i.cache_.reset(); }
  /** Forgets the copies derived from the rows (the int8 traversal copy, remade on next use). */
  static void drop_derived(index& i) { i.derived_.reset(); }
  /** Marks every row live (an all-set bitset over size() rows), the start of a first deletion. */
  static void start_tombstones(index& i);
};

}  // namespace cagra::detail
