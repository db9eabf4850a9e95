// The visited set of one query in shared memory (paper §IV-B3): open addressing, linear probing,
// 2^bits slots of node ids, empty = all ones. Inserted with atomicCAS, so all threads of the CTA
// may insert at once; of two threads inserting the same id exactly one succeeds. "Forgettable"
// management (clearing it and re-inserting the top-M ids) is done by the kernel, which also
// keeps the fill below one half (the hash function is the CPU backend's).
#pragma once

#include <cstdint>

namespace cagra::cuda::dev {

constexpr uint32_t kEmptySlot = 0xFFFFFFFFu;

/** Inserts `id`; true if it was not there. The table must never be full (the caller's sizing). */
__device__ __forceinline__ bool hash_insert(uint32_t* table, uint32_t bits, uint32_t id) {
  const uint32_t mask = (1u << bits) - 1u;
  uint32_t h = (id * 0x9E3779B1u) >> (32 - bits);
  for (;;) {
    const uint32_t old = atomicCAS(table + h, kEmptySlot, id);
    if (old == kEmptySlot) return true;
    if (old == id) return false;
    h = (h + 1) & mask;
  }
}

/** Empties the table (the calling group strides over it; the caller synchronizes). */
__device__ __forceinline__ void hash_clear(uint32_t* table, uint32_t bits, uint32_t rank, uint32_t size) {
  for (uint32_t i = rank; i < (1u << bits); i += size) table[i] = kEmptySlot;
}

}  // namespace cagra::cuda::dev
