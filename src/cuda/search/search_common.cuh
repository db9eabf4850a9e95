// Device definitions both search kernels use: the empty-id value, the query element type of
// each storage type, the CTA-wide copy of the query's bytes and the warp's hash of them, the
// global timer (kernel traces). The
// arithmetic they share with the CPU (random streams, parent flag, metric formulas) is
// core/bits.hpp's.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>

#include "core/bits.hpp"

namespace cagra::cuda::dev {

using bits::kParentFlag;
constexpr uint32_t kNoId = 0xFFFFFFFFu;  // cagra::kInvalidId

/** Nanoseconds of the GPU's global timer (the same clock on every SM). */
__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

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

/** Warp 0 (or any one warp): the hash of the query's n bytes (p 8-aligned) that seeds its random
 *  initial nodes, computed by 32 lanes: each 8-byte word is mixed with its index and the results
 *  summed (core/bits.hpp's query_seed_state terms), so the value depends only on the bytes, not
 *  on the batch, and equals what the host and the CPU backend compute. */
__device__ __forceinline__ uint64_t query_hash_warp(const uint8_t* p, uint32_t n) {
  const uint32_t lane = threadIdx.x & 31u;
  uint64_t h = 0;
  for (uint32_t w = lane; w < n / 8; w += 32)
    h += bits::query_word_term(bits::load_word(p + 8 * w), w);
  if (lane == 0)
    for (uint32_t i = n & ~7u; i < n; ++i) h += bits::query_tail_term(p[i], i);
  for (uint32_t off = 16; off > 0; off >>= 1) h += __shfl_xor_sync(0xFFFFFFFFu, h, off);
  return bits::query_hash_finish(h, n);
}

}  // namespace cagra::cuda::dev
