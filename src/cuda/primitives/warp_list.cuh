// A sorted list of 32 (distance, id) entries held in registers by one warp, lane i holding
// entry i: the multi-CTA kernel's per-CTA top list. merge_list merges a batch of candidates into
// it with shuffles only (a register bitonic sort, the reversed-minimum step, a 5-stage bitonic
// merge); pick_parent names the entry the merged list will expand next without waiting for the
// merge (two warp reductions), so the parent's row can load while the warp merges.
#pragma once

#include <cstdint>

#include "core/bits.hpp"
#include "cuda/primitives/bitonic.cuh"
#include "cuda/search/multi_cta_merge.cuh"  // float_key
#include "cuda/search/search_common.cuh"

namespace cagra::cuda::dev {

constexpr uint32_t kFullWarp = 0xFFFFFFFFu;

/** True where candidate (cd, ci) may enter the list: a real node, allowed by the filter's bitset
 *  where there is one (search/filter.cuh). */
__device__ __forceinline__ bool candidate_allowed(uint32_t ci, const uint32_t* allowed) {
  return ci != kNoId && (allowed == nullptr ||
                         ((__ldg(allowed + ((ci & kIdMask) >> 5)) >> ((ci & kIdMask) & 31)) & 1u));
}

/** Warp 0, one round of merge_list: the lanes' candidates (cd, ci; (far, kNoId) where none) into
 *  the list, the 32 smallest of both kept. The candidates are bitonic-sorted across the lanes,
 *  and the reversed minimum min(list[i], cand[31 - i]) keeps the 32 smallest of both as a bitonic
 *  sequence, which five half-cleaner stages sort: 21 dependent shuffle stages (~1,500 SM clocks
 *  on an H200). `width` (a power of two): the candidates are in lanes [0, width) and the lanes
 *  after them hold none, so only the sort's stages up to that width run (the lanes after stay
 *  empty, and the candidates are then sorted over all 32 lanes). */
__device__ __forceinline__ void merge_round(float& ld, uint32_t& li, float cd, uint32_t ci,
                                            uint32_t width = 32) {
  const uint32_t lane = threadIdx.x & 31u;
  for (uint32_t k = 2; k <= width; k <<= 1)
    for (uint32_t j = k >> 1; j > 0; j >>= 1) {
      const float od = __shfl_xor_sync(kFullWarp, cd, j);
      const uint32_t oi = __shfl_xor_sync(kFullWarp, ci, j);
      const bool up = (lane & k) == 0, lower = (lane & j) == 0;
      if (lower == up ? key_less(od, oi, cd, ci) : key_less(cd, ci, od, oi)) {
        cd = od;
        ci = oi;
      }
    }
  const float rd = __shfl_sync(kFullWarp, cd, 31 - lane);
  const uint32_t ri = __shfl_sync(kFullWarp, ci, 31 - lane);
  if (key_less(rd, ri, ld, li)) {
    ld = rd;
    li = ri;
  }
  for (uint32_t j = 16; j > 0; j >>= 1) {
    const float od = __shfl_xor_sync(kFullWarp, ld, j);
    const uint32_t oi = __shfl_xor_sync(kFullWarp, li, j);
    if ((lane & j) == 0 ? key_less(od, oi, ld, li) : key_less(ld, li, od, oi)) {
      ld = od;
      li = oi;
    }
  }
}

/** Warp 0: merges the candidates (cd/ci[0, n), distinct nodes not in the list; kNoId entries
 *  are skipped) into the list (ld, li: lane i holds entry i), 32 per round (merge_round).
 *  Candidates not nearer than the 32nd entry are dropped (the CPU's rule). With `allowed` (a
 *  filter's bitset, search/filter.cuh) only the candidates whose row it allows are merged: a
 *  filtered search's list of results. */
__device__ __forceinline__ void merge_list(float& ld, uint32_t& li, const float* cand_d,
                                           const uint32_t* cand_i, uint32_t n, float far,
                                           const uint32_t* allowed = nullptr) {
  const uint32_t lane = threadIdx.x & 31u;
  for (uint32_t base = 0; base < n; base += 32) {
    const float worst = __shfl_sync(kFullWarp, ld, 31);
    const uint32_t i = base + lane;
    float cd = far;
    uint32_t ci = kNoId;
    if (i < n) {
      cd = cand_d[i];
      ci = cand_i[i];
    }
    const bool keep = i < n && (worst == far || cd < worst) && candidate_allowed(ci, allowed);
    if (__ballot_sync(kFullWarp, keep) == 0) continue;
    if (!keep) {
      cd = far;
      ci = kNoId;
    }
    merge_round(ld, li, cd, ci);
  }
}

/** Warp 0, the last merge of a CTA's list, whose first `head` entries (head <= 32) are all that
 *  leave the CTA (the host merges the CTAs' best min(k, 32)): as merge_list, but only those
 *  entries are exact afterwards (entries head.. may be stale). Only the candidates nearer than
 *  entry head - 1 can enter; they are moved to the first lanes (through shared memory) and
 *  merge_round sorts only as wide as their count rounded up to a power of two. At the last
 *  iteration of a batch-1 search on SIFT-wall-1M ~14 candidates arrive and ~6.5 of them are
 *  nearer than entry 9 (k = 10): a sort of 8 lanes, 6 stages instead of 15. (Inserting them one
 *  at a time, or ranking them against each other, was no faster on an H200: each step is a
 *  dependent shuffle or shared-memory round trip either way; docs/cuda.md.) */
__device__ __forceinline__ void merge_head(float& ld, uint32_t& li, const float* cand_d,
                                           const uint32_t* cand_i, uint32_t n, float far,
                                           uint32_t head, const uint32_t* allowed = nullptr) {
  __shared__ float s_d[32];
  __shared__ uint32_t s_i[32];
  const uint32_t lane = threadIdx.x & 31u;
  for (uint32_t base = 0; base < n; base += 32) {
    const float td = __shfl_sync(kFullWarp, ld, head - 1);
    const uint32_t ti = __shfl_sync(kFullWarp, li, head - 1);
    const uint32_t i = base + lane;
    float cd = far;
    uint32_t ci = kNoId;
    if (i < n) {
      cd = cand_d[i];
      ci = cand_i[i];
    }
    const bool keep =
        i < n && cd < far && key_less(cd, ci, td, ti) && candidate_allowed(ci, allowed);
    const uint32_t mask = __ballot_sync(kFullWarp, keep);
    if (mask == 0) continue;
    const uint32_t count = __popc(mask);
    if (keep) {
      const uint32_t to = __popc(mask & ((1u << lane) - 1u));
      s_d[to] = cd;
      s_i[to] = ci;
    }
    __syncwarp();
    cd = lane < count ? s_d[lane] : far;
    ci = lane < count ? s_i[lane] : kNoId;
    __syncwarp();
    merge_round(ld, li, cd, ci, count <= 1 ? 1u : 1u << (32 - __clz(count - 1)));
  }
}

/** Warp 0, before merge_list merges the candidates cd/ci[0, n) into the list: the entry that
 *  will be the merged list's first one not yet a parent (the CPU's choice: list order), found
 *  without the merge, so that the parent's neighbors load while warp 0 merges. That is the
 *  smallest (distance, id) among the list's entries that are not parents and the candidates
 *  the merge keeps (list not full, or nearer than its 32nd entry: merge_list's rule); it is
 *  flagged where it is (in the list, or in ci so that the merge carries the flag). kNoId when
 *  there is none (empty entries count as parents: kNoId has the flag bit). */
__device__ __forceinline__ uint32_t pick_parent(float ld, uint32_t& li, const float* cd,
                                                uint32_t* ci, uint32_t n, float far) {
  const uint32_t lane = threadIdx.x & 31u;
  const float worst = __shfl_sync(kFullWarp, ld, 31);
  float bd = far;
  uint32_t bi = kNoId, src = kNoId;  // src: candidate index, or kNoId for the lane's list entry
  if ((li & kParentFlag) == 0) {
    bd = ld;
    bi = li;
  }
  for (uint32_t s = lane; s < n; s += 32) {
    const float d = cd[s];
    const uint32_t i = ci[s];
    if (i != kNoId && (worst == far || d < worst) && key_less(d, i, bd, bi)) {
      bd = d;
      bi = i;
      src = s;
    }
  }
  const uint32_t key = float_key(bd);
  const uint32_t kmin = __reduce_min_sync(kFullWarp, key);
  const uint32_t parent = __reduce_min_sync(kFullWarp, key == kmin ? bi : kNoId);
  if (parent != kNoId && bi == parent) {  // the owner (ids are distinct: candidates are new nodes)
    if (src == kNoId)
      li |= kParentFlag;
    else
      ci[src] = parent | kParentFlag;
  }
  return parent;
}

}  // namespace cagra::cuda::dev
