/**
 * @file index.hpp
 * @brief The owning CAGRA index: stored vectors plus the fixed out-degree graph.
 *
 * Move-only. The vectors are kept in the index's storage dtype (the input's, or f32/f16 when
 * index_params::storage asks; cosine indexes keep unit-norm f32 rows). The graph is
 * `size() x graph_degree()` row-major uint32 ids, every id < size(), no self loops, no duplicates
 * within a row. A backend may attach state of its own (e.g. a device copy) that lives as long as
 * the index.
 *
 * A living index (docs/living_index.md) also carries:
 *  - optional user labels, one unique int64 per row (like hnswlib's labels or faiss's
 *    IndexIDMap): search can return them instead of row numbers; without labels a row's label is
 *    its row number;
 *  - tombstones: rows removed by cagra::remove. They are never returned by a search but stay in
 *    the graph (the walk goes through them) until cagra::compact drops them and renumbers rows.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <cagra/types.hpp>

namespace cagra {

namespace detail {
struct backend_state;  // opaque per-backend cache (defined by the backend that uses it)
struct index_editor;   // the library's write access for extend / remove / compact (src/core)
}  // namespace detail

class index {
 public:
  index() = default;
  /** Assembles an index from its parts (checks shapes and graph ids). */
  index(cagra::metric m, host_matrix vectors, std::vector<uint32_t> graph, uint32_t graph_degree);
  ~index();
  index(index&&) noexcept;
  index& operator=(index&&) noexcept;
  index(const index&) = delete;
  index& operator=(const index&) = delete;

  /** Number of vectors (graph nodes). */
  int64_t size() const { return vectors_.rows(); }
  /** Vector dimension. */
  uint32_t dim() const { return static_cast<uint32_t>(vectors_.cols()); }
  /** Out-degree d of every node. */
  uint32_t graph_degree() const { return graph_degree_; }
  cagra::metric metric() const { return metric_; }
  /** Element type of the stored vectors. */
  dtype storage_dtype() const { return vectors_.type(); }

  /** The stored vectors, `size() x dim()`. */
  const host_matrix& vectors() const { return vectors_; }
  /** The graph, `size() x graph_degree()`. */
  matrix_view<const uint32_t> graph() const {
    return {graph_.data(), size(), static_cast<int64_t>(graph_degree_)};
  }

  /** Whether the rows carry user labels (set_labels, extend with labels, or a compaction). */
  bool has_labels() const { return !labels_.empty(); }
  /** The labels, `size()` values (empty when has_labels() is false). */
  const std::vector<int64_t>& labels() const { return labels_; }
  /** Label of `row`: the user label, or the row number when the index has none. */
  int64_t label_of(int64_t row) const { return labels_.empty() ? row : labels_[size_t(row)]; }
  /** Row holding `label`, or -1 when no row (deleted or not) has it. */
  int64_t row_of(int64_t label) const;
  /** Gives every row a label (`size()` values, all different and >= 0: -1 marks an empty result
   *  slot; throws otherwise, and the index keeps what it had). */
  void set_labels(std::vector<int64_t> labels);
  /** Names the content of labels() (as live_rows_stamp() names live_rows()): a new value
   *  whenever the labels change (a backend's device copy of them is then made again). */
  uint64_t labels_stamp() const { return labels_stamp_; }

  /** Rows removed by cagra::remove and not yet compacted away. */
  int64_t deleted_count() const { return deleted_; }
  /** Rows a search can return: size() - deleted_count(). */
  int64_t live_size() const { return size() - deleted_; }
  bool is_deleted(int64_t row) const {
    return deleted_ > 0 && !((live_[size_t(row >> 5)] >> (row & 31)) & 1u);
  }
  /** The rows not deleted as a bitset (cagra/filter.hpp layout: set = live), or an empty vector
   *  when nothing is deleted. Search honours it on top of any user filter. */
  const std::vector<uint32_t>& live_rows() const { return live_; }
  /** Names the content of live_rows() (cagra/filter.hpp, row_filter::stamp): a new value
   *  whenever it changes. */
  uint64_t live_rows_stamp() const { return live_stamp_; }

  /** Backend cache slot (used by backends; not for users). */
  std::shared_ptr<detail::backend_state>& backend_cache() const { return cache_; }
  /** Copies derived from the stored rows (the int8 traversal copy; used by the library, not for
   *  users). */
  std::shared_ptr<detail::backend_state>& derived_cache() const { return derived_; }

 private:
  friend struct detail::index_editor;
  cagra::metric metric_ = cagra::metric::l2;
  uint32_t graph_degree_ = 0;
  host_matrix vectors_;
  std::vector<uint32_t> graph_;
  std::vector<int64_t> labels_;  // empty: labels are row numbers
  uint64_t labels_stamp_ = 0;    // labels_stamp(): renewed by every change of labels_
  /** (label, row) sorted by label, for row_of; empty when labels_ is. */
  std::vector<std::pair<int64_t, uint32_t>> label_rows_;
  std::vector<uint32_t> live_;  // bitset of live rows; empty when deleted_ == 0
  uint64_t live_stamp_ = 0;     // live_rows_stamp(): renewed by every write access to live_
  int64_t deleted_ = 0;
  /** In-degree of every row, kept by extend between calls (derived from graph_; empty = not
   *  computed, or stale after another change). */
  std::vector<uint32_t> in_degree_;
  mutable std::shared_ptr<detail::backend_state> cache_;
  mutable std::shared_ptr<detail::backend_state> derived_;
};

}  // namespace cagra
