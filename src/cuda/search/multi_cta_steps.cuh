// The steps of the multi-CTA search (multi_cta.cuh says how they fit together): the query's
// seed hash (one warp), the CTAs' random initial nodes (disjoint strata, claimed while their rows
// load) or the scan of their slices of the initial-node pool (core/initial_pool.hpp), the
// query's conversion to its distance layout, and the candidates' distances (one team per row,
// every load of a row in flight at once: the kernel is latency-bound).
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_fp16.h>
#include <cuda_pipeline.h>

#include "core/bits.hpp"
#include "cuda/primitives/team_distance.cuh"
#include "cuda/primitives/visited_hash.cuh"
#include "cuda/primitives/warp_list.cuh"  // kFullWarp
#include "cuda/search/multi_cta.hpp"
#include "cuda/search/search_common.cuh"

namespace cagra::cuda::dev {

using bits::initial_node;

/** The whole CTA: the query (rq, dim elements) into its distance layout q (as the single-CTA
 *  kernel: float rows as float, swizzled; byte rows as bytes plus |q|^2 into *qq, which is 0). */
template <typename T, typename Q>
__device__ void convert_query_mc(uint32_t dim, uint32_t n_chunks, const Q* rq, uint8_t* q,
                                 int* qq) {
  constexpr uint32_t V = elem_traits<T>::V;
  if constexpr (elem_traits<T>::is_byte) {
    int sum = 0;
    for (uint32_t e = threadIdx.x; e < n_chunks * V; e += blockDim.x) {
      const T v = e < dim ? rq[e] : T{0};
      reinterpret_cast<T*>(q)[e] = v;
      sum += int{v} * int{v};
    }
    for (uint32_t off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(kFullWarp, sum, off);
    if ((threadIdx.x & 31u) == 0) atomicAdd(qq, sum);
  } else {
    for (uint32_t e = threadIdx.x; e < n_chunks * V; e += blockDim.x)
      reinterpret_cast<float*>(q)[query_index<T>(e)] = e < dim ? rq[e] : 0.0f;
  }
}

/** Row `id` of the dataset as 16-byte chunks. */
__device__ __forceinline__ const uint4* dataset_row(const multi_cta_args& a, uint32_t id) {
  return reinterpret_cast<const uint4*>(a.d_dataset + uint64_t{id} * a.row_stride);
}

/** Issues L2 prefetches of the lines of row `id` of the dataset (up to 8 lines): a claiming
 *  thread sends them with its claim, so the distance that follows finds the row in L2 (SIFT-1M,
 *  H200: 2.33 -> 2.14 us an iteration; prefetching into L1 instead measured the same). */
__device__ __forceinline__ void prefetch_row(const multi_cta_args& a, uint32_t id) {
  const uint8_t* row = a.d_dataset + uint64_t{id} * a.row_stride;
  const uint32_t lines = min((a.row_stride + 127u) / 128u, 8u);
  for (uint32_t l = 0; l < lines; ++l)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(row + 128 * l));
}

/** Issues L2 prefetches of node `id`'s graph row (degree x 4 bytes, up to 4 lines), on the
 *  latency path only (graph_prefetch): a node whose distance is being computed may be the next
 *  iteration's parent, whose graph row is then read from L2 instead of DRAM. On larger batches
 *  the extra lines would compete with the rows for bandwidth. */
__device__ __forceinline__ void prefetch_graph_row(const multi_cta_args& a, uint32_t id) {
  const uint32_t* row = a.d_graph + uint64_t{id} * a.degree;
  const uint32_t lines = min((a.degree * 4u + 127u) / 128u, 4u);
  for (uint32_t l = 0; l < lines; ++l)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(reinterpret_cast<const uint8_t*>(row) + 128 * l));
}

/** True on the latency path (the host merges the CTAs' lists: small batches, the persistent
 *  kernel), where the kernel prefetches graph rows (prefetch_graph_row). */
__device__ __forceinline__ bool graph_prefetch(const multi_cta_args& a) {
  return a.h_lists != nullptr;
}

/** The distance of `row` to the query, computed by the calling team (all kTeam lanes) from the
 *  head of the row the lanes already loaded (team_load_head: every load of a row of up to
 *  4 x kTeam chunks in flight at once, one memory round trip: this kernel is latency-bound). */
template <typename T, uint32_t kTeam>
__device__ __forceinline__ float team_distance(const multi_cta_args& a, const void* q, int qq,
                                               const row_head& h, const uint4* row, uint32_t lane) {
  if constexpr (elem_traits<T>::is_byte) {
    const uint4* q16 = static_cast<const uint4*>(q);
    if (a.metric == metric::l2)
      return __int2float_rn(qq +
                            team_sum_bytes_head<T, kTeam, false>(h, row, q16, a.n_chunks, lane));
    const float dot =
        __int2float_rn(team_sum_bytes_head<T, kTeam, true>(h, row, q16, a.n_chunks, lane));
    return bits::distance_from_dot(a.metric, dot);
  } else {
    const float4* q4 = static_cast<const float4*>(q);
    if (a.metric == metric::l2) return team_sum_head<T, kTeam, false>(h, row, q4, a.n_chunks, lane);
    const float dot = team_sum_head<T, kTeam, true>(h, row, q4, a.n_chunks, lane);
    return bits::distance_from_dot(a.metric, dot);
  }
}

/** The whole CTA: distances of the candidates ids[0, n), one team each, into dists. */
template <typename T, uint32_t kTeam>
__device__ void compute_candidates(const multi_cta_args& a, const void* q, int qq,
                                   const uint32_t* ids, float* dists, uint32_t n) {
  const uint32_t team = threadIdx.x / kTeam, lane = threadIdx.x % kTeam,
                 n_teams = blockDim.x / kTeam;
  const bool graph = graph_prefetch(a);
  for (uint32_t s = team; s < n; s += n_teams) {
    const uint32_t id = ids[s];
    const uint4* row = dataset_row(a, id);
    const row_head h = team_load_head<kTeam>(row, a.n_chunks, lane);
    if (graph && lane == 0) prefetch_graph_row(a, id);
    const float d = team_distance<T, kTeam>(a, q, qq, h, row, lane);
    if (lane == 0) dists[s] = d;
  }
}

/** A team's first initial node in flight: its claim (lane 0) and its row's first chunks. */
struct init_pending {
  uint32_t id, home, old;
  row_head head;
};

/** The calling team: issues initial node s of its CTA: its claim in the device hash (lane 0)
 *  and its row's first chunks, which fly until init_finish uses them. */
template <uint32_t kTeam>
__device__ __forceinline__ init_pending init_issue(const multi_cta_args& a, uint32_t* keys,
                                                   uint64_t state, uint32_t s) {
  const uint32_t lane = threadIdx.x % kTeam;
  init_pending p{initial_node(state, blockIdx.x, s, a.n_init, a.n_ctas, a.n_rows), 0, 0, {}};
  if (lane == 0) {
    p.home = hash_home(p.id, a.hash_bits);
    p.old = atomicCAS(keys + p.home, kEmptySlot, p.id);
  }
  p.head = team_load_head<kTeam>(dataset_row(a, p.id), a.n_chunks, lane);
  return p;
}

/** The whole CTA: issues each team's first initial node (init_finish completes it), so its
 *  loads fly while the query is converted. */
template <uint32_t kTeam>
__device__ __forceinline__ init_pending init_begin(const multi_cta_args& a, uint32_t* keys,
                                                   uint64_t state) {
  const uint32_t team = threadIdx.x / kTeam;
  const init_pending first =
      team < a.n_init ? init_issue<kTeam>(a, keys, state, team) : init_pending{kNoId, 0, 0, {}};
  // On the latency path, every initial node's graph row (the first parents) into L2. (Their
  // rows prefetched as well did not make a later round cheaper: SIFT-wall-1M, H200, docs/cuda.md
  // "The automatic shape taken apart".)
  if (graph_prefetch(a))
    for (uint32_t s = threadIdx.x; s < a.n_init; s += blockDim.x)
      prefetch_graph_row(a, initial_node(state, blockIdx.x, s, a.n_init, a.n_ctas, a.n_rows));
  return first;
}

/** An empty group of init_finish: above every (distance, id) key. */
constexpr unsigned long long kNoInitBest = ~0ull;

/** The whole CTA, once the query is ready: the distances of the CTA's initial nodes, one team
 *  each (the first from init_begin), and the candidates they give: the nearest claimed node of
 *  each group (node s in group s mod 32, ids/dists[group]; (+inf, kNoId) where another CTA holds
 *  every node of the group). One candidate a group keeps iteration 0's merge and parent pick at
 *  32 entries: with 3 x 32 initial nodes merged whole they took 3.4 us instead of 1.4
 *  (SIFT-wall-1M, H200, CudaLatency.TracedMultiCta), while a group's nearest node is what a walk
 *  starts from. A node is nearly always new (initial_node), so its claim is checked only after
 *  its distance. `best`: kMultiCtaList words of shared memory holding kNoInitBest. */
template <typename T, uint32_t kTeam>
__device__ void init_finish(const multi_cta_args& a, const void* q, int qq, uint32_t* keys,
                            uint64_t state, const init_pending& first, unsigned long long* best,
                            uint32_t* ids, float* dists) {
  const uint32_t team = threadIdx.x / kTeam, lane = threadIdx.x % kTeam,
                 n_teams = blockDim.x / kTeam;
  for (uint32_t s = team; s < a.n_init; s += n_teams) {
    const init_pending p = s == team ? first : init_issue<kTeam>(a, keys, state, s);
    const float d = team_distance<T, kTeam>(a, q, qq, p.head, dataset_row(a, p.id), lane);
    if (lane == 0 && device_hash_finish(keys, a.hash_bits, p.id, p.home, p.old))
      atomicMin(best + s % kMultiCtaList,
                (static_cast<unsigned long long>(float_key(d)) << 32) | p.id);
  }
  __syncthreads();
  if (threadIdx.x < min(a.n_init, kMultiCtaList)) {
    const unsigned long long b = best[threadIdx.x];
    ids[threadIdx.x] = b == kNoInitBest ? kNoId : static_cast<uint32_t>(b);
    dists[threadIdx.x] =
        b == kNoInitBest ? __int_as_float(0x7F800000) : key_float(static_cast<uint32_t>(b >> 32));
  }
}

/** The whole CTA, with a pool (a.pool_rows_per_cta): issues the copy of its slice of the pool
 *  (the rows, then their ids) into shared memory at `slice`, 16 bytes a copy, every copy in
 *  flight at once (cp.async: no registers held; __pipeline_wait_prior(0) and a barrier complete
 *  it). The slice does not depend on the query: the persistent kernel copies it once. */
__device__ __forceinline__ void pool_copy_issue(const multi_cta_args& a, uint8_t* slice) {
  const uint32_t rows = a.pool_rows_per_cta, n16 = rows * a.n_chunks;
  const uint4* src = reinterpret_cast<const uint4*>(a.d_pool_vectors) + uint64_t{blockIdx.x} * n16;
  const uint4* src_ids = reinterpret_cast<const uint4*>(a.d_pool_ids + uint64_t{blockIdx.x} * rows);
  uint4* dst = reinterpret_cast<uint4*>(slice);
  for (uint32_t i = threadIdx.x; i < n16; i += blockDim.x)
    __pipeline_memcpy_async(dst + i, src + i, 16);
  for (uint32_t i = threadIdx.x; i < rows / 4; i += blockDim.x)  // rows: a multiple of 32
    __pipeline_memcpy_async(dst + n16 + i, src_ids + i, 16);
  __pipeline_commit();
}

/** Where the squared norms of the rows of a CTA's slice of the pool start in the slice (after
 *  the rows and their ids; pool_norms fills them). */
__device__ __forceinline__ size_t pool_norms_offset(const multi_cta_args& a) {
  return size_t{a.pool_rows_per_cta} * (a.row_stride + 4);
}

/** True where the scan takes the rows' squared norms from pool_norms: byte rows under L2. */
template <typename T>
__device__ __forceinline__ bool pool_uses_norms(const multi_cta_args& a) {
  return elem_traits<T>::is_byte && a.metric == metric::l2;
}

/** The whole CTA, once its slice is in shared memory (once a launch): each row's squared norm
 *  where pool_uses_norms, so that a query's scan computes only q.x (exact: integer sums). */
template <typename T>
__device__ void pool_norms(const multi_cta_args& a, uint8_t* slice) {
  if constexpr (elem_traits<T>::is_byte) {
    if (!pool_uses_norms<T>(a)) return;
    int* norms = reinterpret_cast<int*>(slice + pool_norms_offset(a));
    for (uint32_t s = threadIdx.x; s < a.pool_rows_per_cta; s += blockDim.x) {
      const uint4* row = reinterpret_cast<const uint4*>(slice + size_t{s} * a.row_stride);
      int acc = 0;
      for (uint32_t c = 0; c < a.n_chunks; ++c)
        acc = chunk_accumulate_bytes<T, true>(row[c], row[c], acc);
      norms[s] = acc;
    }
  }
}

/** Chunks of a row in shared memory that the scan loads before it uses the first: a whole
 *  128-d u8 row, so that the loads' latencies overlap (one chunk at a time, the scan of a 832-row
 *  slice took 3.1 us of a 15.5 us call on SIFT-wall-1M, H200; 8 at once 1.6 us). */
constexpr uint32_t kScanChunks = 8;

/** Where logical chunk c of row s of a CTA's slice of the pool lies in the row: the rows are
 *  stored rotated (initial_pool.cu), chunk c at (c + s) mod n_chunks, so that the threads of a
 *  warp, each on its own row, read different banks (rows 128 bytes apart) while they all use the
 *  same query chunk at the same time (a broadcast, or a register). `rot` = s mod n_chunks. */
__device__ __forceinline__ uint32_t pool_chunk_at(uint32_t c, uint32_t rot, uint32_t n_chunks) {
  const uint32_t p = c + rot;
  return p >= n_chunks ? p - n_chunks : p;
}

/** The calling thread alone: its partial sum (chunk_accumulate*) over a rotated row of the
 *  pool in shared memory (pool_chunk_at), kScanChunks chunks loaded at a time. */
template <typename T, bool kDot>
__device__ __forceinline__ auto thread_sum_shared(const uint4* row, const void* q,
                                                  uint32_t n_chunks, uint32_t rot) {
  std::conditional_t<elem_traits<T>::is_byte, int, float> acc = 0;
  const auto add = [&](const uint4& v, uint32_t c) {
    if constexpr (elem_traits<T>::is_byte)
      acc = chunk_accumulate_bytes<T, kDot>(v, static_cast<const uint4*>(q)[c], acc);
    else
      acc = chunk_accumulate<T, kDot>(v, static_cast<const float4*>(q), c, acc);
  };
  // Rows of whole groups (every dimension a multiple of 8 chunks) take a path without a branch
  // between the chunks, so that their arithmetic interleaves.
  const bool whole = n_chunks % kScanChunks == 0;
  for (uint32_t i0 = 0; i0 < n_chunks; i0 += kScanChunks) {
    uint4 v[kScanChunks];
#pragma unroll
    for (uint32_t j = 0; j < kScanChunks; ++j)
      if (whole || i0 + j < n_chunks) v[j] = row[pool_chunk_at(i0 + j, rot, n_chunks)];
    if (whole) {
#pragma unroll
      for (uint32_t j = 0; j < kScanChunks; ++j) add(v[j], i0 + j);
    } else {
#pragma unroll
      for (uint32_t j = 0; j < kScanChunks; ++j)
        if (i0 + j < n_chunks) add(v[j], i0 + j);
    }
  }
  return acc;
}

/** q.x over a byte row's chunks (`v`, zero past the row) with the query's chunks held in
 *  registers (`qv`, zero past n_chunks): four independent sums (one a word of the chunk), a
 *  chain of 8 dot products, not 32. */
template <typename T>
__device__ __forceinline__ int dot_held_chunks(const uint4 (&v)[kScanChunks],
                                               const uint4 (&qv)[kScanChunks]) {
  int acc[4] = {0, 0, 0, 0};
#pragma unroll
  for (uint32_t j = 0; j < kScanChunks; ++j) {
    acc[0] = dp4<T>(qv[j].x, v[j].x, acc[0]);
    acc[1] = dp4<T>(qv[j].y, v[j].y, acc[1]);
    acc[2] = dp4<T>(qv[j].z, v[j].z, acc[2]);
    acc[3] = dp4<T>(qv[j].w, v[j].w, acc[3]);
  }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

/** The calling thread alone: q.x over a rotated byte row of at most kScanChunks chunks, the
 *  query's chunks held in registers (`qv`): a row costs its own 16-byte loads and the products
 *  (read from shared memory per row, the query's bytes took as many load instructions as the
 *  row's: the compiler split them into 4-byte loads). */
template <typename T>
__device__ __forceinline__ int thread_dot_held(const uint4* row, const uint4 (&qv)[kScanChunks],
                                               uint32_t n_chunks, uint32_t rot) {
  uint4 v[kScanChunks];
#pragma unroll
  for (uint32_t j = 0; j < kScanChunks; ++j)
    v[j] = j < n_chunks ? row[pool_chunk_at(j, rot, n_chunks)] : make_uint4(0, 0, 0, 0);
  return dot_held_chunks<T>(v, qv);
}

/** A byte row's distance from its dot product with the query: under L2 |q|^2 + |x|^2 - 2 q.x
 *  (`norm`: the row's |x|^2, pool_norms; the same integer as the team's sum). */
__device__ __forceinline__ float byte_distance_from_dot(const multi_cta_args& a, int qq, int norm,
                                                        int dot) {
  if (a.metric == metric::l2) return __int2float_rn(qq + norm - 2 * dot);
  return bits::distance_from_dot(a.metric, __int2float_rn(dot));
}

/** team_distance's distance for a rotated row of the pool, computed by the calling thread
 *  alone; byte rows under L2 take the row's squared norm (`norm`, pool_norms) and compute q.x
 *  only. */
template <typename T>
__device__ __forceinline__ float thread_distance_shared(const multi_cta_args& a, const void* q,
                                                        int qq, const uint4* row, uint32_t rot,
                                                        int norm) {
  if constexpr (elem_traits<T>::is_byte) {
    return byte_distance_from_dot(a, qq, norm, thread_sum_shared<T, true>(row, q, a.n_chunks, rot));
  } else {
    if (a.metric == metric::l2) return thread_sum_shared<T, false>(row, q, a.n_chunks, rot);
    return bits::distance_from_dot(a.metric, thread_sum_shared<T, true>(row, q, a.n_chunks, rot));
  }
}

/** The whole CTA, with its slice of the pool in shared memory (`slice`) and the query ready: the
 *  distance of every row of the slice, a thread a row (rows s, s + blockDim, ... for thread s:
 *  no reductions, and the thread keeps its nearest), and the nearest of each group in best[g]
 *  ((distance key, row) words; pool_claim takes them). Group g holds the rows of threads 8g ..
 *  8g + 7 (32 groups at 256 threads, the pooled plan's block): their minimum by shuffles within
 *  the warp, written once (64-bit shared atomicMin from the 8 warps, a compare-and-swap loop,
 *  cost 60-95 SM clocks more on SIFT-wall-1M, H200). A slice of fewer rows than threads (small
 *  indexes) groups rows g, g + 32, ... instead, so that it still has 32 groups. `best`:
 *  kMultiCtaList words holding kNoInitBest. */
template <typename T>
__device__ void pool_scan(const multi_cta_args& a, const void* q, int qq, const uint8_t* slice,
                          unsigned long long* best) {
  const uint32_t rows = a.pool_rows_per_cta;
  unsigned long long mine = kNoInitBest;
  const int* norms = reinterpret_cast<const int*>(slice + pool_norms_offset(a));
  const auto keep = [&](uint32_t s, float d) {
    mine = min(mine, (static_cast<unsigned long long>(float_key(d)) << 32) | s);
  };
  const auto row_of = [&](uint32_t s) {
    return reinterpret_cast<const uint4*>(slice + size_t{s} * a.row_stride);
  };
  bool held = false;
  if constexpr (elem_traits<T>::is_byte) {
    if (a.n_chunks <= kScanChunks) {  // 128-d u8/i8 and narrower: the query in registers
      held = true;
      uint4 qv[kScanChunks];
#pragma unroll
      for (uint32_t j = 0; j < kScanChunks; ++j)
        qv[j] = j < a.n_chunks ? static_cast<const uint4*>(q)[j] : make_uint4(0, 0, 0, 0);
      const uint32_t nc = a.n_chunks, nt = blockDim.x;
      if (nc == kScanChunks && nt % kScanChunks == 0) {
        // 128-byte rows (128-d u8/i8): a thread's rows all have the rotation threadIdx.x mod 8,
        // so the chunks' offsets are computed once, not an address and a modulo a chunk and a
        // row. SIFT-wall-1M, H200, 768 rows: 2,039-2,126 SM clocks in three builds against
        // 2,324-3,883 for the arithmetic a chunk in four (the same code, other code around it);
        // with a predicate a chunk (any count up to 8) 3,552, so the count is a constant here.
        const uint32_t rot = threadIdx.x % kScanChunks;
        uint32_t off[kScanChunks];
#pragma unroll
        for (uint32_t j = 0; j < kScanChunks; ++j) off[j] = pool_chunk_at(j, rot, kScanChunks) * 16;
        const uint8_t* row = slice + size_t{threadIdx.x} * a.row_stride;
        const size_t step = size_t{nt} * a.row_stride;
        for (uint32_t s = threadIdx.x; s < rows; s += nt, row += step) {
          uint4 v[kScanChunks];
#pragma unroll
          for (uint32_t j = 0; j < kScanChunks; ++j)
            v[j] = *reinterpret_cast<const uint4*>(row + off[j]);
          const int dot = dot_held_chunks<T>(v, qv);
          keep(s, byte_distance_from_dot(a, qq, pool_uses_norms<T>(a) ? norms[s] : 0, dot));
        }
      } else {
        for (uint32_t s = threadIdx.x; s < rows; s += nt) {
          const int dot = thread_dot_held<T>(row_of(s), qv, nc, s % nc);
          keep(s, byte_distance_from_dot(a, qq, pool_uses_norms<T>(a) ? norms[s] : 0, dot));
        }
      }
    }
  }
  if (!held)
    for (uint32_t s = threadIdx.x; s < rows; s += blockDim.x)
      keep(s, thread_distance_shared<T>(a, q, qq, row_of(s), s % a.n_chunks,
                                        pool_uses_norms<T>(a) ? norms[s] : 0));
  if (rows < blockDim.x) {  // a thread a row at most: group g = the rows of threads g, g + 32, ..
    if (mine != kNoInitBest) atomicMin(best + threadIdx.x % kMultiCtaList, mine);
  } else {
#pragma unroll
    for (uint32_t o = 1; o < 8; o <<= 1) mine = min(mine, __shfl_xor_sync(0xffffffffu, mine, o));
    if (threadIdx.x % 8 == 0) best[threadIdx.x / 8 % kMultiCtaList] = mine;
  }
  __syncthreads();
}

/** After pool_scan: the nearest row of each group as the CTA's first candidates (ids/dists[g],
 *  written by warp 0, which also names iteration 0's parent in *parent and flags it), its graph
 *  row prefetched and the row claimed in the device hash by the CTA's last warp, without waiting
 *  for the answer (one atomicCAS at the row's home slot). A waited claim cost ~0.5 us, an L2
 *  round trip, on every CTA's path, and from warp 0 an unwaited one still stalled the parent's
 *  pick (its result register); the last warp has no work until the distances. The CTAs' slices
 *  are disjoint and the table holds little more than the CTAs' picks when they claim, so the
 *  claim nearly always succeeds; where it does not (the slot taken by another row, or another
 *  CTA's walk got there first) the row may reach two lists, and the host's merge takes it once.
 *  No claims for the rows not taken: another CTA's walk may still reach them. */
__device__ __forceinline__ void pool_claim(const multi_cta_args& a, uint32_t* keys,
                                           const uint8_t* slice, const unsigned long long* best,
                                           uint32_t* ids, float* dists, uint32_t* parent) {
  const uint32_t last_warp = blockDim.x - 32;  // the pooled plan's block: 256 threads
  const bool lists = threadIdx.x < kMultiCtaList, claims = threadIdx.x >= last_warp;
  if (!lists && !claims) return;
  const uint32_t g = lists ? threadIdx.x : threadIdx.x - last_warp;
  const unsigned long long b = best[g];
  const uint32_t* slice_ids =
      reinterpret_cast<const uint32_t*>(slice + size_t{a.pool_rows_per_cta} * a.row_stride);
  const uint32_t id = b == kNoInitBest ? kNoId : slice_ids[static_cast<uint32_t>(b)];
  if (lists) {
    // Iteration 0's parent, as pick_parent would name it from these candidates and an empty
    // list: the smallest (distance key, id), flagged where it is.
    const uint32_t key = id == kNoId ? 0xFFFFFFFFu : static_cast<uint32_t>(b >> 32);
    const uint32_t kmin = __reduce_min_sync(0xFFFFFFFFu, key);
    const uint32_t first = __reduce_min_sync(0xFFFFFFFFu, key == kmin ? id : kNoId);
    ids[g] = id != kNoId && id == first ? id | kParentFlag : id;
    dists[g] = id == kNoId ? __int_as_float(0x7F800000) : key_float(static_cast<uint32_t>(b >> 32));
    if (g == 0) *parent = first;
  }
  if (claims && id != kNoId) {
    prefetch_graph_row(a, id);
    atomicCAS(keys + hash_home(id, a.hash_bits), kEmptySlot, id);
  }
}

}  // namespace cagra::cuda::dev
