/**
 * @file index.hpp
 * @brief The owning CAGRA index: stored vectors plus the fixed out-degree graph.
 *
 * Move-only. The vectors are kept in the index's storage dtype (the input's, or f32/f16 when
 * index_params::storage asks; cosine indexes keep unit-norm f32 rows). The graph is
 * `size() x graph_degree()` row-major uint32 ids, every id < size(), no self loops, no duplicates
 * within a row. A backend may attach state of its own (e.g. a device copy) that lives as long as
 * the index.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <cagra/types.hpp>

namespace cagra {

namespace detail {
struct backend_state;  // opaque per-backend cache (defined by the backend that uses it)
}

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

  /** Backend cache slot (used by backends; not for users). */
  std::shared_ptr<detail::backend_state>& backend_cache() const { return cache_; }

 private:
  cagra::metric metric_ = cagra::metric::l2;
  uint32_t graph_degree_ = 0;
  host_matrix vectors_;
  std::vector<uint32_t> graph_;
  mutable std::shared_ptr<detail::backend_state> cache_;
};

}  // namespace cagra
