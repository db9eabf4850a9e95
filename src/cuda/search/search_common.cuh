// Device definitions both search kernels use: the empty-id value, the query element type of
// each storage type, and the CTA-wide copy of the query's bytes. The arithmetic they share with
// the CPU (random streams, parent flag, metric formulas) is core/bits.hpp's.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>

#include "core/bits.hpp"

namespace cagra::cuda::dev {

using bits::kParentFlag;
constexpr uint32_t kNoId = 0xFFFFFFFFu;  // cagra::kInvalidId

/** Query element type for storage T: float for float/half, the same type for bytes. */
template <typename T>
struct query_elem {
  using type = T;
};
template <>
struct query_elem<__half> {
  using type = float;
};

/** Copies n bytes from global to shared memory (the whole CTA; 4-byte words when n allows). */
__device__ __forceinline__ void copy_bytes(uint8_t* dst, const uint8_t* src, uint32_t n) {
  if (n % 4 == 0) {  // src is then 4-aligned too (rows of n bytes in a cudaMalloc'd buffer)
    for (uint32_t w = threadIdx.x; w < n / 4; w += blockDim.x)
      reinterpret_cast<uint32_t*>(dst)[w] = reinterpret_cast<const uint32_t*>(src)[w];
  } else {
    for (uint32_t b = threadIdx.x; b < n; b += blockDim.x) dst[b] = src[b];
  }
}

}  // namespace cagra::cuda::dev
