// A sorted list of 32 (distance, id) entries held in registers by one warp, lane i holding
// entry i: the multi-CTA kernel's per-CTA top list. merge_list merges a batch of candidates into
// it with shuffles only (a register bitonic sort, the reversed-minimum step, a 5-stage bitonic
// merge); pick_parent names the entry the merged list will expand next without waiting for the
// merge (two warp reductions), so the parent's row can load while the warp merges; merge_head is
// the multi-CTA kernel's last merge, which keeps exact only the entries that leave the CTA.
#pragma once

#include <cstdint>

#include "core/bits.hpp"
#include "cuda/primitives/bitonic.cuh"
#include "cuda/search/multi_cta_merge.cuh"  // float_key
#include "cuda/search/search_common.cuh"

namespace cagra::cuda::dev {

constexpr uint32_t kFullWarp = 0xFFFFFFFFu;

/** Warp 0: the sorted candidates (cd, ci: lane i the i-th nearest, (far, kNoId) after them)
 *  merged into the list: the reversed minimum min(list[i], cand[31 - i]) keeps the 32 smallest
 *  of both as a bitonic sequence, which five half-cleaner stages sort. */
__device__ __forceinline__ void merge_sorted(float& ld, uint32_t& li, float cd, uint32_t ci) {
  const uint32_t lane = threadIdx.x & 31u;
  const float rd = __shfl_sync(kFullWarp, cd, 31 - lane);
  const uint32_t ri = __shfl_sync(kFullWarp, ci, 31 - lane);
  if (key_less(rd, ri, ld, li)) {
    ld = rd;
    li = ri;
  }
#pragma unroll
  for (uint32_t j = 16; j > 0; j >>= 1) {
    const float od = __shfl_xor_sync(kFullWarp, ld, j);
    const uint32_t oi = __shfl_xor_sync(kFullWarp, li, j);
    if ((lane & j) == 0 ? key_less(od, oi, ld, li) : key_less(ld, li, od, oi)) {
      ld = od;
      li = oi;
    }
  }
}

/** Candidate i of cand_d/cand_i[0, n) into (cd, ci), or (far, kNoId) past n. */
__device__ __forceinline__ void lane_candidate(const float* cand_d, const uint32_t* cand_i,
                                               uint32_t i, uint32_t n, float far, float& cd,
                                               uint32_t& ci) {
  cd = far;
  ci = kNoId;
  if (i < n) {
    cd = cand_d[i];
    ci = cand_i[i];
  }
}

/** Warp 0: merges the candidates (cd/ci[0, n), distinct nodes not in the list; kNoId entries
 *  are skipped) into the list (ld, li: lane i holds entry i), 32 per round. Candidates not
 *  nearer than the 32nd entry are dropped (the CPU's rule); the others are sorted across the
 *  lanes and merged (merge_sorted). With `allowed` (a filter's bitset, search/filter.cuh) only
 *  the candidates whose row it allows are merged: a filtered search's list of results. */
__device__ __forceinline__ void merge_list(float& ld, uint32_t& li, const float* cand_d,
                                           const uint32_t* cand_i, uint32_t n, float far,
                                           const uint32_t* allowed = nullptr) {
  const uint32_t lane = threadIdx.x & 31u;
  for (uint32_t base = 0; base < n; base += 32) {
    const float worst = __shfl_sync(kFullWarp, ld, 31);
    const uint32_t i = base + lane;
    float cd;
    uint32_t ci;
    lane_candidate(cand_d, cand_i, i, n, far, cd, ci);
    const bool keep = i < n && ci != kNoId && (worst == far || cd < worst) &&
                      (allowed == nullptr ||
                       ((__ldg(allowed + ((ci & kIdMask) >> 5)) >> ((ci & kIdMask) & 31)) & 1u));
    if (__ballot_sync(kFullWarp, keep) == 0) continue;
    if (!keep) {
      cd = far;
      ci = kNoId;
    }
    sort_lanes(cd, ci, 32);
    merge_sorted(ld, li, cd, ci);
  }
}

/** Warp 0, the multi-CTA kernel's last merge where only the list's first `head` entries leave
 *  the CTA (the host merges the CTAs' lists): merge_list's result in those entries; the list
 *  stays sorted, but its later entries may lack candidates that merge_list would keep. Only
 *  the candidates nearer than entry head - 1 can enter the head (on SIFT-wall-1M ~6.5 of ~14
 *  at head 10); they are compacted into the first lanes (a ballot and shared memory) and
 *  sorted only as wide as their count (2 to 32 lanes, each width unrolled): ~12 dependent
 *  shuffle stages instead of merge_list's 21 for the usual 5-8 candidates. */
__device__ __forceinline__ void merge_head(float& ld, uint32_t& li, const float* cand_d,
                                           const uint32_t* cand_i, uint32_t n, float far,
                                           uint32_t head) {
  __shared__ float s_d[32];
  __shared__ uint32_t s_i[32];
  const uint32_t lane = threadIdx.x & 31u;
  for (uint32_t base = 0; base < n; base += 32) {
    const float td = __shfl_sync(kFullWarp, ld, head - 1);
    const uint32_t ti = __shfl_sync(kFullWarp, li, head - 1);
    const uint32_t i = base + lane;
    float cd;
    uint32_t ci;
    lane_candidate(cand_d, cand_i, i, n, far, cd, ci);
    const bool keep = i < n && ci != kNoId && cd < far && key_less(cd, ci, td, ti);
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
    if (count <= 2)
      sort_lanes(cd, ci, 2);
    else if (count <= 4)
      sort_lanes(cd, ci, 4);
    else if (count <= 8)
      sort_lanes(cd, ci, 8);
    else if (count <= 16)
      sort_lanes(cd, ci, 16);
    else
      sort_lanes(cd, ci, 32);
    merge_sorted(ld, li, cd, ci);
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
