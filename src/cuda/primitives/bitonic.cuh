// Sorted-list maintenance of the search (paper §IV-B2): the candidates are bitonic-sorted, then
// merged into the already sorted top-M list with the "reversed minimum" step of a bitonic merge:
// top[i] = min(top[i], cand[Mp-1-i]) keeps the Mp smallest keys of both lists as one bitonic
// sequence, which log2(Mp) half-cleaner stages sort. Cost: Cp log^2 Cp / 4 + Mp log Mp / 2
// compare-exchanges instead of a full sort of Mp + Cp entries.
//
// Lists live in shared memory as two arrays (distance, id), lengths powers of two, padded with
// (+inf, invalid). Keys compare by distance, then by id without the parent flag (MSB), a total
// order over distinct nodes, so the result does not depend on thread timing.
//
// The same code runs on one warp (warp_group: __syncwarp between stages, the paper's choice for
// lists of <= 512 entries, the other warps are free) or on the whole CTA (block_group:
// __syncthreads, for longer lists). Sizes are run-time values: no template per list length.
// When at most 32 candidates survive (most iterations), one warp merges them by rank instead:
// a register bitonic sort of the candidates, a binary search each, a scatter (rank_merge_warp).
#pragma once

#include "core/bits.hpp"

#include <cstdint>
#include <type_traits>

namespace cagra::cuda::dev {

constexpr uint32_t kIdMask = 0x7FFFFFFFu;  // id without the parent flag

__device__ __forceinline__ bool key_less(float da, uint32_t ia, float db, uint32_t ib) {
  return da < db || (da == db && (ia & kIdMask) < (ib & kIdMask));
}

/** Warp 0 of the CTA (lanes 0..31). */
struct warp_group {
  __device__ uint32_t rank() const { return threadIdx.x & 31u; }
  __device__ uint32_t size() const { return 32; }
  __device__ void sync() const { __syncwarp(); }
};
/** All threads of the CTA. */
struct block_group {
  __device__ uint32_t rank() const { return threadIdx.x; }
  __device__ uint32_t size() const { return blockDim.x; }
  __device__ void sync() const { __syncthreads(); }
};

/** One compare-exchange stage over n entries: pairs (a, a + j), ascending where (a & k) == 0. */
template <class G>
__device__ __forceinline__ void bitonic_stage(G g, float* d, uint32_t* id, uint32_t n, uint32_t k,
                                              uint32_t j) {
  for (uint32_t t = g.rank(); t < n / 2; t += g.size()) {
    const uint32_t a = ((t & ~(j - 1)) << 1) | (t & (j - 1));
    const uint32_t b = a + j;
    const bool up = (a & k) == 0;
    const float da = d[a], db = d[b];
    const uint32_t ia = id[a], ib = id[b];
    if (up ? key_less(db, ib, da, ia) : key_less(da, ia, db, ib)) {
      d[a] = db;
      d[b] = da;
      id[a] = ib;
      id[b] = ia;
    }
  }
  g.sync();
}

/** Sorts n (a power of two) entries ascending. */
template <class G>
__device__ void bitonic_sort(G g, float* d, uint32_t* id, uint32_t n) {
  for (uint32_t k = 2; k <= n; k <<= 1)
    for (uint32_t j = k >> 1; j > 0; j >>= 1) bitonic_stage(g, d, id, n, k, j);
}

using bits::next_pow2;

/** One warp: a register bitonic sort of (d, id) across lanes [0, width) (a power of two, at most
 *  32), ascending; lanes beyond hold groups of `width` sorted the other way, so callers leave
 *  them (far, invalid). A constant width unrolls it (warp_list.cuh's sort_lanes<W>). */
__device__ __forceinline__ void sort_lanes(float& d, uint32_t& id, uint32_t width) {
  const uint32_t lane = threadIdx.x & 31u;
  for (uint32_t k = 2; k <= width; k <<= 1)
    for (uint32_t j = k >> 1; j > 0; j >>= 1) {
      const float od = __shfl_xor_sync(0xFFFFFFFFu, d, j);
      const uint32_t oi = __shfl_xor_sync(0xFFFFFFFFu, id, j);
      const bool up = (lane & k) == 0, lower = (lane & j) == 0;
      if (lower == up ? key_less(od, oi, d, id) : key_less(d, id, od, oi)) {
        d = od;
        id = oi;
      }
    }
}

/** Warp 0, 1 <= s <= 32 candidates in cd/ci[0, s): merges them into the sorted top list (m
 *  entries) without a bitonic merge of the whole list. The candidates are bitonic-sorted in
 *  registers (one per lane, shuffles); each finds its rank among the top entries by binary search,
 *  so its output position is lane + rank; a bitmask (mask, >= ceil(m/32) words of shared memory)
 *  marks those positions, and every other output position o takes the top entry o - (number of
 *  candidates before o). Rounds of 32 positions run from the last to the first, so each entry is
 *  read before it is overwritten (an entry only moves to a higher position). */
__device__ __forceinline__ void rank_merge_warp(float* td, uint32_t* ti, uint32_t m,
                                                const float* cd, const uint32_t* ci, uint32_t s,
                                                uint32_t* mask, float far, uint32_t invalid) {
  constexpr uint32_t kFull = 0xFFFFFFFFu;
  const uint32_t lane = threadIdx.x & 31u;
  float d = lane < s ? cd[lane] : far;
  uint32_t id = lane < s ? ci[lane] : invalid;
  sort_lanes(d, id, next_pow2(s));
  uint32_t lo = 0, hi = m;  // number of top entries before this candidate
  while (lo < hi) {
    const uint32_t mid = (lo + hi) >> 1;
    if (key_less(td[mid], ti[mid], d, id))
      lo = mid + 1;
    else
      hi = mid;
  }
  const uint32_t pos = lane + lo;
  const uint32_t words = (m + 31) / 32;
  if (lane < words) mask[lane] = 0;
  __syncwarp();
  if (lane < s && pos < m) atomicOr(mask + (pos >> 5), 1u << (pos & 31));
  __syncwarp();
  const uint32_t count = lane < words ? __popc(mask[lane]) : 0;
  uint32_t incl = count;  // candidates in words [0, lane]
  for (uint32_t off = 1; off < 32; off <<= 1) {
    const uint32_t t = __shfl_up_sync(kFull, incl, off);
    if (lane >= off) incl += t;
  }
  const uint32_t excl = incl - count;
  for (int r = static_cast<int>(words) - 1; r >= 0; --r) {
    const uint32_t w = mask[r];
    const uint32_t o = static_cast<uint32_t>(r) * 32 + lane;
    const uint32_t b = __shfl_sync(kFull, excl, r) + __popc(w & ((1u << lane) - 1u));
    const float c_d = __shfl_sync(kFull, d, b & 31);
    const uint32_t c_i = __shfl_sync(kFull, id, b & 31);
    float nd = far;
    uint32_t ni = invalid;
    if (o < m) {
      if ((w >> lane) & 1u) {
        nd = c_d;
        ni = c_i;
      } else {
        nd = td[o - b];
        ni = ti[o - b];
      }
    }
    __syncwarp();  // this round's reads before its writes (they may overlap)
    if (o < m) {
      td[o] = nd;
      ti[o] = ni;
    }
  }
  __syncwarp();
}

/** Merges n candidates (cd/ci[0, n), unsorted, valid ids) into the sorted top list (td/ti, m
 *  real entries padded to mp, a power of two). Candidates not nearer than the current m-th entry
 *  are dropped first (the CPU backend's rule, so both backends break distance ties alike). On one
 *  warp the survivors are compacted with ballots (late iterations, where few candidates are new
 *  and fewer still are near, merge a handful of entries or skip the merge) and, when at most 32
 *  survive, merged by rank (rank_merge_warp); otherwise they are bitonic-sorted and merged with
 *  the reversed-minimum step. The candidate arrays (capacity >= next_pow2(n)) are clobbered. */
template <class G>
__device__ void merge_into_top(G g, float* td, uint32_t* ti, uint32_t m, uint32_t mp, float* cd,
                               uint32_t* ci, uint32_t n, uint32_t* mask, float far,
                               uint32_t invalid) {
  const float worst = td[m - 1];
  uint32_t s = 0;  // survivors, now in cd/ci[0, s) (the CTA path keeps dropped ones as far)
  if constexpr (std::is_same_v<G, warp_group>) {
    const uint32_t lane = g.rank();
    for (uint32_t base = 0; base < n; base += 32) {
      const uint32_t i = base + lane;
      float d = far;
      uint32_t id = invalid;
      if (i < n) {
        d = cd[i];
        id = ci[i];
      }
      const bool keep = i < n && (worst == far || d < worst);
      const uint32_t ballot = __ballot_sync(0xFFFFFFFFu, keep);
      __syncwarp();  // every lane's reads of this round before any write (a write may hit them)
      if (keep) {
        const uint32_t pos = s + __popc(ballot & ((1u << lane) - 1u));  // <= i: never unread data
        cd[pos] = d;
        ci[pos] = id;
      }
      s += __popc(ballot);
    }
    __syncwarp();
  } else {
    if (worst != far)
      for (uint32_t i = g.rank(); i < n; i += g.size())
        if (!(cd[i] < worst)) {
          cd[i] = far;
          ci[i] = invalid;
        }
    s = n;
  }
  if (s == 0) return;
  if constexpr (std::is_same_v<G, warp_group>) {
    if (s <= 32) return rank_merge_warp(td, ti, m, cd, ci, s, mask, far, invalid);
  }
  const uint32_t sp = next_pow2(s);
  for (uint32_t i = s + g.rank(); i < sp; i += g.size()) {
    cd[i] = far;
    ci[i] = invalid;
  }
  g.sync();
  bitonic_sort(g, cd, ci, sp);
  for (uint32_t i = g.rank(); i < mp; i += g.size()) {
    const uint32_t j = mp - 1 - i;
    if (j < sp && key_less(cd[j], ci[j], td[i], ti[i])) {
      td[i] = cd[j];
      ti[i] = ci[j];
    }
  }
  g.sync();
  for (uint32_t j = mp >> 1; j > 0; j >>= 1) bitonic_stage(g, td, ti, mp, mp, j);
  for (uint32_t i = m + g.rank(); i < mp; i += g.size()) {
    td[i] = far;
    ti[i] = invalid;
  }
  g.sync();
}

/** One compare-exchange stage of block_sort_u64 over the 64 keys a warp holds in registers: x0 is
 *  key i0 = (64-aligned base) + lane, x1 key i0 + 32. Stride 32 pairs x0 with x1 of the same lane;
 *  strides <= 16 pair lanes by shuffle. Same result as the shared-memory stage: with up =
 *  (i & size) == 0 the lower index of each pair keeps the smaller key. */
__device__ __forceinline__ void sort_stage_64(unsigned long long& x0, unsigned long long& x1,
                                              uint32_t i0, uint32_t size, uint32_t stride) {
  constexpr uint32_t kFull = 0xFFFFFFFFu;
  if (stride == 32) {
    const bool up = (i0 & size) == 0;
    const unsigned long long lo = x0 < x1 ? x0 : x1, hi = x0 < x1 ? x1 : x0;
    x0 = up ? lo : hi;
    x1 = up ? hi : lo;
    return;
  }
  const unsigned long long p0 = __shfl_xor_sync(kFull, x0, stride);
  const unsigned long long p1 = __shfl_xor_sync(kFull, x1, stride);
  const bool lower = (i0 & stride) == 0;  // i0 + 32 has the same bit below 32
  const bool min0 = lower == ((i0 & size) == 0), min1 = lower == (((i0 + 32) & size) == 0);
  x0 = min0 == (p0 < x0) ? p0 : x0;
  x1 = min1 == (p1 < x1) ? p1 : x1;
}

/** The whole CTA: ascending bitonic sort of n (a power of two) 64-bit keys in shared memory
 *  (key = orderable distance bits << 32 | id: one unsigned compare orders by (distance, id)).
 *  Used by the brute force's running top-k, the NN-descent update and the optimize's prune.
 *  Stages of stride >= 64 go through shared memory; the strides below, and every stage of the
 *  first 64-key runs, in registers, a warp per 64 keys (one shared-memory pass and one
 *  __syncthreads per size instead of one per stage: the update kernel was bound by them).
 *  blockDim.x must be a multiple of 32. */
__device__ inline void block_sort_u64(unsigned long long* a, uint32_t n) {
  const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  // sizes 2..64: runs of 64 sorted in alternating directions (n < 64: one run, padded with ~0)
  for (uint32_t base = warp * 64; base < max(n, 64u); base += warps * 64) {
    const uint32_t i0 = base + lane;
    unsigned long long x0 = i0 < n ? a[i0] : ~0ull, x1 = i0 + 32 < n ? a[i0 + 32] : ~0ull;
    for (uint32_t size = 2; size <= 64; size <<= 1)
      for (uint32_t stride = size >> 1; stride > 0; stride >>= 1)
        sort_stage_64(x0, x1, i0, size, stride);
    if (i0 < n) a[i0] = x0;
    if (i0 + 32 < n) a[i0 + 32] = x1;
  }
  __syncthreads();
  for (uint32_t size = 128; size <= n; size <<= 1) {
    for (uint32_t stride = size >> 1; stride >= 64; stride >>= 1) {
      for (uint32_t t = threadIdx.x; t < n / 2; t += blockDim.x) {
        // 2 stride (t / stride) + t % stride, stride a power of two (no integer division)
        const uint32_t i = ((t & ~(stride - 1)) << 1) | (t & (stride - 1)), j = i + stride;
        const bool up = (i & size) == 0;
        const unsigned long long x = a[i], y = a[j];
        if ((x > y) == up) {
          a[i] = y;
          a[j] = x;
        }
      }
      __syncthreads();
    }
    for (uint32_t base = warp * 64; base < n; base += warps * 64) {
      const uint32_t i0 = base + lane;
      unsigned long long x0 = a[i0], x1 = a[i0 + 32];
      for (uint32_t stride = 32; stride > 0; stride >>= 1) sort_stage_64(x0, x1, i0, size, stride);
      a[i0] = x0;
      a[i0 + 32] = x1;
    }
    __syncthreads();
  }
}

}  // namespace cagra::cuda::dev
