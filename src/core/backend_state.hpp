// The base of what an index keeps beside its own members (cagra/index.hpp only forward-declares
// it): the CUDA backend's device copies (index::backend_cache) and the copies derived from the
// rows, such as the int8 traversal copy (index::derived_cache).
#pragma once

namespace cagra::detail {
struct backend_state {
  virtual ~backend_state() = default;
};
}  // namespace cagra::detail
