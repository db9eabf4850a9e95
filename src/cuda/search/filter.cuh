// Filtered search in the GPU kernels (cagra/filter.hpp). The kernels walk the graph exactly as
// without a filter (disallowed rows stay navigable, so the graph does not fall apart at low
// selectivity) and return only the rows the filter allows: the single-CTA kernel writes out the
// allowed entries of its top-M list; each multi-CTA CTA keeps, beside its 32-entry list, the 32
// nearest allowed rows it has found (merge_list with a bitset, warp_list.cuh) and publishes
// those for the merge. The plan has grown the list as the filter's selectivity fell
// (core/plan.cpp), so that the walk explores about k / selectivity nearest rows. The filter is
// a bitset per query (stride = words per bitset) or one for the whole batch (stride 0), in device
// memory; bit (row % 32) of word (row / 32), set = allowed.
#pragma once

#include <cstdint>

#include "cuda/search/search_common.cuh"

namespace cagra::cuda::dev {

/** Whether `row` is set in the bitset `words`. */
__device__ __forceinline__ bool row_allowed(const uint32_t* words, uint32_t row) {
  return (__ldg(words + (row >> 5)) >> (row & 31)) & 1u;
}

/** One warp: the allowed entries of the sorted list (d, id)[0, n) (ids may carry the parent
 *  flag; kNoId entries are empty) written in list order to positions [0, k) of ids_out /
 *  dists_out (dists_out may be null), the rest padded with kNoId and +inf. */
__device__ inline void write_allowed(const float* d, const uint32_t* id, uint32_t n, uint32_t k,
                                     const uint32_t* words, uint32_t* ids_out, float* dists_out) {
  const uint32_t lane = threadIdx.x & 31;
  uint32_t written = 0;  // the same on every lane
  for (uint32_t base = 0; base < n && written < k; base += 32) {
    const uint32_t i = base + lane;
    const uint32_t x = i < n ? id[i] : kNoId;
    const bool keep = x != kNoId && row_allowed(words, x & kIdMask);
    const uint32_t ballot = __ballot_sync(0xFFFFFFFFu, keep);
    const uint32_t pos = written + __popc(ballot & ((1u << lane) - 1u));
    if (keep && pos < k) {
      ids_out[pos] = x & kIdMask;
      if (dists_out) dists_out[pos] = d[i];
    }
    written += __popc(ballot);
  }
  for (uint32_t o = written + lane; o < k; o += 32) {
    ids_out[o] = kNoId;
    if (dists_out) dists_out[o] = __int_as_float(0x7F800000);
  }
}

}  // namespace cagra::cuda::dev
