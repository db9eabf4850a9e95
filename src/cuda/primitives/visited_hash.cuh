// The visited set of one query (paper §IV-B3): open addressing, linear probing from
// bits::hash_home (the CPU backend's hash function), 2^bits slots of node ids, empty = all ones.
// Inserted with atomicCAS, so every thread may insert at once; of two threads inserting the same
// id exactly one succeeds. Two homes: shared memory (the single-CTA kernel's table; "forgettable"
// management, clearing it and re-inserting the top-M ids, is the kernel's, which also keeps the
// fill below one half) and device memory (the multi-CTA kernel's table, shared by the query's
// CTAs, never reset during a search; an insertion gives up after kDeviceHashMaxProbe probes).
#pragma once

#include <cstdint>

#include "core/bits.hpp"

namespace cagra::cuda::dev {

constexpr uint32_t kEmptySlot = 0xFFFFFFFFu;

/** Inserts `id`; true if it was not there. The plan sizes the table so that it is never full
 *  (core/plan.cpp, min_hash_bits, with a reset at half fill), so the probe loop ends. It is not
 *  bounded by a counter: this is the single-CTA kernel's hottest loop, and the counter cost 2-7%
 *  of batch-10K QPS on SIFT-wall-1M (H100, same run; bench/results/logs). */
__device__ __forceinline__ bool hash_insert(uint32_t* table, uint32_t bits, uint32_t id) {
  const uint32_t mask = (1u << bits) - 1u;
  uint32_t h = bits::hash_home(id, bits);
  for (;;) {
    const uint32_t old = atomicCAS(table + h, kEmptySlot, id);
    if (old == kEmptySlot) return true;
    if (old == id) return false;
    h = (h + 1) & mask;
  }
}

/** Empties the table (the calling group strides over it; the caller synchronizes). */
__device__ __forceinline__ void hash_clear(uint32_t* table, uint32_t bits, uint32_t rank,
                                           uint32_t size) {
  for (uint32_t i = rank; i < (1u << bits); i += size) table[i] = kEmptySlot;
}

/** Device-memory table: slots probed at most by one insertion; a node that finds no free slot
 *  in this many is skipped (the table is sized to stay under half full, so this only bounds the
 *  loop of a table too small, e.g. an explicit tiny hash_bits). */
constexpr uint32_t kDeviceHashMaxProbe = 128;

using bits::hash_home;

/** The rest of an insertion whose probe at slot h returned `old`: true when this call inserted
 *  `id` (the node is the caller's), false when it was there already or no free slot was found
 *  within kDeviceHashMaxProbe probes (then the node is skipped). */
__device__ __forceinline__ bool device_hash_finish(uint32_t* keys, uint32_t bits, uint32_t id,
                                                   uint32_t h, uint32_t old) {
  const uint32_t mask = (1u << bits) - 1u;
  for (uint32_t p = 1;; ++p) {
    if (old == kEmptySlot) return true;
    if (old == id || p == kDeviceHashMaxProbe) return false;
    h = (h + 1) & mask;
    old = atomicCAS(keys + h, kEmptySlot, id);
  }
}

/** Inserts `id` into the query's device hash (device_hash_finish says what it returns). One
 *  atomicCAS per probe and no read before it: an atomic costs one L2 round trip like a load, and
 *  a read first made the common case (a new node) two round trips, on the critical path of every
 *  iteration. */
__device__ __forceinline__ bool device_hash_insert(uint32_t* keys, uint32_t bits, uint32_t id) {
  const uint32_t h = hash_home(id, bits);
  return device_hash_finish(keys, bits, id, h, atomicCAS(keys + h, kEmptySlot, id));
}

}  // namespace cagra::cuda::dev
