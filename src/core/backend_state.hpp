// The base of what an index keeps beside its own members (cagra/index.hpp only forward-declares
// it): the CUDA backend's device copies (index::backend_cache) and the copies derived from the
// rows, such as the int8 traversal copy (index::derived_cache).
#pragma once

namespace cagra::detail {
struct backend_state {
  virtual ~backend_state() = default;
  /** Lets go of any pin on the index's rows in host memory (the CUDA backend's copies that read
   *  them in place), before an operation that may move them (extend). */
  virtual void release_host_rows() {}
};
}  // namespace cagra::detail
