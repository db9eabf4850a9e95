// Device memory for a test: `n` bytes on device 0, freed with the owner; copies in and out.
#pragma once

#include <cstddef>
#include <vector>

#include "cuda/testing.hpp"

namespace cagra::test {

struct device_bytes {
  explicit device_bytes(size_t n) : p(cuda::testing::device_alloc(n, 0)) {}
  ~device_bytes() { cuda::testing::device_free(p); }
  device_bytes(const device_bytes&) = delete;
  device_bytes& operator=(const device_bytes&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p);
  }
  /** The first n elements, copied to the host (cuda::testing::copy_memory waits for them). */
  template <typename T>
  std::vector<T> to_host(size_t n) const {
    std::vector<T> v(n);
    cuda::testing::copy_memory(v.data(), p, n * sizeof(T));
    return v;
  }
  void* p;
};

}  // namespace cagra::test
