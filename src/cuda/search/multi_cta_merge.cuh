// The end of the multi-CTA search: the last of a query's CTAs to finish turns the n_ctas lists of
// 32 entries the CTAs left in global memory into the query's top k, inside the search kernel (a
// second kernel cost a launch and a few microseconds per call at batch 1).
//
// Thread mapping: the whole CTA loads the n_ctas * 32 entries into shared memory (padded to a
// power of two with (+inf, invalid)) and bitonic-sorts them by (distance, id) (bitonic.cuh,
// block_group); warp 0 then walks the sorted list 32 entries at a time, drops invalid entries
// and duplicates, and writes the first k survivors with a ballot compaction (fewer than k: the
// rest is padded with invalid ids). Why a sort and not a k-way merge of the sorted lists: at most
// 4096 entries (32 KB of shared memory), and it reuses the tested sort. The CTAs' lists are
// disjoint (a node belongs to the CTA that inserted it into the shared hash), so duplicates do
// not arise; the comparison with the left neighbor that would drop them costs nothing.
#pragma once

#include <cstdint>

#include "cuda/primitives/bitonic.cuh"

namespace cagra::cuda::dev {

/** Where the merge writes a query's k results: ids, and distances unless null. */
struct result_writer {
  uint32_t* ids;
  float* distances;

  __device__ __forceinline__ void put(uint32_t pos, uint32_t id, float d) const {
    ids[pos] = id;
    if (distances) distances[pos] = d;
  }
};

/** The whole CTA (>= 32 threads): `n` entries part_ids/part_dists (read past L1: other CTAs
 *  wrote them) sorted in d/id[0, np2) of shared memory, the first k distinct valid ids written
 *  to `out` (positions [0, k)). */
__device__ inline void merge_query_lists(const uint32_t* part_ids, const float* part_dists,
                                         uint32_t n, uint32_t np2, uint32_t k, float* d,
                                         uint32_t* id, const result_writer& out) {
  constexpr uint32_t kInvalid = 0xFFFFFFFFu;  // cagra::kInvalidId
  const float far = __int_as_float(0x7F800000);
  for (uint32_t i = threadIdx.x; i < np2; i += blockDim.x) {
    d[i] = i < n ? __ldcg(part_dists + i) : far;
    id[i] = i < n ? __ldcg(part_ids + i) : kInvalid;
  }
  __syncthreads();
  bitonic_sort(block_group{}, d, id, np2);  // ends with a barrier

  if (threadIdx.x >= 32) return;
  const uint32_t lane = threadIdx.x;
  uint32_t written = 0;  // same on every lane
  for (uint32_t base = 0; base < np2 && written < k; base += 32) {
    const uint32_t i = base + lane;  // np2 >= 32 is a multiple of 32
    const uint32_t x = id[i];
    const bool keep = x != kInvalid && !(i > 0 && id[i - 1] == x);
    const uint32_t ballot = __ballot_sync(0xFFFFFFFFu, keep);
    const uint32_t pos = written + __popc(ballot & ((1u << lane) - 1u));
    if (keep && pos < k) out.put(pos, x, d[i]);
    written += __popc(ballot);
  }
  for (uint32_t o = written + lane; o < k; o += 32) out.put(o, kInvalid, far);
}

/** Largest k that merge_query_heads takes (beyond it the sort of merge_query_lists is cheaper
 *  than k rounds). */
constexpr uint32_t kHeadMergeMaxK = 64;

/** Order-preserving 32-bit keys of floats (a < b iff key(a) < key(b), as unsigned), and back. */
__device__ __forceinline__ uint32_t float_key(float f) {
  const uint32_t b = __float_as_uint(f);
  return b ^ (b >> 31 ? 0xFFFFFFFFu : 0x80000000u);
}
__device__ __forceinline__ float key_float(uint32_t k) {
  return __uint_as_float(k ^ (k >> 31 ? 0x80000000u : 0xFFFFFFFFu));
}

/** The same result as merge_query_lists for k <= kHeadMergeMaxK and n_lists <= 128 sorted lists
 *  of 32 distinct-across-lists entries, faster: the lists go to shared memory (d/id[l * 32 + i])
 *  in one load, then warp 0 takes the k smallest in k rounds; each lane owns lists lane,
 *  lane + 32, ... and offers the smallest of their heads; two warp reductions (redux.sync: the
 *  smallest distance key, then the smallest id at that distance) name the winner, whose list
 *  moves on. A round is a handful of instructions (a shuffle tree took 15 dependent shuffles:
 *  10 rounds cost ~3 us of batch-1 latency). */
__device__ inline void merge_query_heads(const uint32_t* part_ids, const float* part_dists,
                                         uint32_t n_lists, uint32_t k, float* d, uint32_t* id,
                                         const result_writer& out) {
  constexpr uint32_t kInvalid = 0xFFFFFFFFu;
  const float far = __int_as_float(0x7F800000);
  const uint32_t n = n_lists * 32;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x) {
    d[i] = __ldcg(part_dists + i);
    id[i] = __ldcg(part_ids + i);
  }
  __syncthreads();
  if (threadIdx.x >= 32) return;
  const uint32_t lane = threadIdx.x;
  uint32_t head[4] = {0, 0, 0, 0};  // next entry of list lane + 32 s
  for (uint32_t r = 0; r < k; ++r) {
    float bd = far;
    uint32_t bi = kInvalid, bs = 0;
#pragma unroll
    for (uint32_t s = 0; s < 4; ++s) {
      const uint32_t l = lane + 32 * s;
      if (l < n_lists && head[s] < 32) {
        const float cd = d[l * 32 + head[s]];
        const uint32_t ci = id[l * 32 + head[s]];
        if (ci != kInvalid && key_less(cd, ci, bd, bi)) {
          bd = cd;
          bi = ci;
          bs = s;
        }
      }
    }
    const bool valid = bi != kInvalid;
    if (__ballot_sync(0xFFFFFFFFu, valid) == 0) {  // every list is used up: pad
      for (uint32_t o = r + lane; o < k; o += 32) out.put(o, kInvalid, far);
      return;
    }
    const uint32_t key = valid ? float_key(bd) : 0xFFFFFFFFu;
    const uint32_t kmin = __reduce_min_sync(0xFFFFFFFFu, valid ? key : 0xFFFFFFFFu);
    const bool tied = valid && key == kmin;
    const uint32_t imin = __reduce_min_sync(0xFFFFFFFFu, tied ? bi : 0xFFFFFFFFu);
    if (tied && bi == imin) {  // the winner (ids are distinct across the lists)
#pragma unroll
      for (uint32_t s = 0; s < 4; ++s) head[s] += s == bs ? 1u : 0u;
    }
    if (lane == 0) out.put(r, imin, key_float(kmin));
  }
}

}  // namespace cagra::cuda::dev
