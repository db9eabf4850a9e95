// The multi-CTA search kernel (paper §IV-C2): several CTAs search for one query at once, for
// batches too small to fill the GPU with one CTA per query and for itopk > 512. grid.x = the
// query's CTAs (max(search_width, ceil(itopk / 32), ceil(2k / 32)), search.cu says why),
// grid.y = the queries of the launch.
//
// Each CTA runs the single-CTA loop with search_width 1 and a top list of its own of 32 entries,
// held in registers of warp 0 (lane i holds entry i). The query's CTAs share one visited hash in
// device memory: a standard hash (never reset during the search; sized from the plan to at least
// twice the nodes the query is expected to visit; cleared per launch by the host). A node
// belongs to the CTA whose atomicCAS inserts it: only that CTA computes its distance, may list it
// and may expand it, so the insertion is also the claim of the node as a future parent and no
// node is expanded (or its distance computed) twice. The lists are disjoint, so the n_ctas x 32
// >= max(itopk, 2k) entries of a query are distinct nodes (no duplicates to drop, and k valid
// ids whenever k nodes are reachable from the initial ones). (Claiming at
// expansion instead, with a separate "traversed" set and lists that may share nodes, as cuVS
// does, was simulated on bigann10k first: the lists then overlap, down to 36 distinct nodes on
// average for itopk 64 (min 32), and recall was no better; docs/cuda.md has the numbers.)
// The CTAs never wait for each other (no inter-CTA barrier); at the end each writes its list
// to a global buffer, and the last of the query's CTAs to finish (a counter per query) turns the
// lists into the query's top k (multi_cta_merge.cuh): one kernel per call.
// The visited hash lives in two halves used by alternate launches: while a launch searches with
// one half, its CTAs empty the other one (what the previous launch wrote), so no memset runs
// between calls (at batch 1 every microsecond of a call is latency).
//
// Thread mapping: all threads insert the initial nodes / the parent's neighbors into the device
// hash (one id each, coalesced graph reads) and append the ones they inserted to a compact
// candidate list; teams of kTeam lanes (team_distance.cuh) compute the distances; warp 0 merges
// the candidates into its list 32 at a time (the CPU's drop rule, a register bitonic sort, the
// reversed-minimum step, a 5-stage bitonic merge: shuffles only, no shared-memory list) and
// takes the next parent with one ballot. Unlike the single-CTA kernel the answer is not the
// CPU's bit for bit: which CTA discovers a node first depends on timing, so the traversal (and
// rarely the answer) varies between runs.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>

#include "cuda/check.hpp"
#include "cuda/primitives/bitonic.cuh"
#include "cuda/primitives/team_distance.cuh"
#include "cuda/primitives/visited_hash.cuh"
#include "cuda/search/multi_cta.hpp"
#include "cuda/search/multi_cta_merge.cuh"
#include "cuda/search/single_cta.cuh"  // mix64, copy_bytes, query_elem, kParentFlag, kNoId

namespace cagra::cuda {
namespace dev {

constexpr uint32_t kFullWarp = 0xFFFFFFFFu;

/** Inserts `id` into the query's device hash: true when this call inserted it (the node is the
 *  caller's), false when it was there already or no free slot was found within
 *  kMultiCtaMaxProbe probes (then the node is skipped). One atomicCAS per probe and no read
 *  before it: an atomic costs one L2 round trip like a load, and a read first made the common
 *  case (a new node) two round trips, on the critical path of every iteration. */
__device__ __forceinline__ bool device_hash_insert(uint32_t* keys, uint32_t bits, uint32_t id) {
  const uint32_t mask = (1u << bits) - 1u;
  uint32_t h = (id * 0x9E3779B1u) >> (32 - bits);
  for (uint32_t p = 0; p < kMultiCtaMaxProbe; ++p, h = (h + 1) & mask) {
    const uint32_t old = atomicCAS(keys + h, kEmptySlot, id);
    if (old == kEmptySlot) return true;
    if (old == id) return false;
  }
  return false;
}

/** Warp 0: a hash of the query's n bytes (p 8-aligned) for its random seeds, computed by 32 lanes
 *  (the single-CTA kernel's hash_bytes is one thread's serial chain, ~3 us for a 1.5 KB f32
 *  query, all of it batch-1 latency). Each 8-byte word is mixed with its index and the results
 *  summed, so the value depends only on the bytes (not on the batch), as the CPU's seeds do;
 *  it is not the CPU's value: this kernel is not bit-identical to the CPU anyway. */
__device__ __forceinline__ uint64_t query_hash_warp(const uint8_t* p, uint32_t n) {
  const uint32_t lane = threadIdx.x & 31u;
  uint64_t h = 0;
  for (uint32_t w = lane; w < n / 8; w += 32)
    h += mix64(*reinterpret_cast<const uint64_t*>(p + 8 * w) ^ (uint64_t{w} * 0xD6E8FEB86659FD93ull));
  if (lane == 0)
    for (uint32_t i = n & ~7u; i < n; ++i) h += mix64(uint64_t{p[i]} ^ (uint64_t{i} << 40));
  for (uint32_t off = 16; off > 0; off >>= 1) h += __shfl_xor_sync(kFullWarp, h, off);
  return mix64(h ^ n);
}

/** Random initial node t of CTA c: a counter-based draw from the query's seed state. */
__device__ __forceinline__ uint32_t initial_node(uint64_t state, uint32_t c, uint32_t t, uint32_t n_init,
                                                 uint64_t n_rows) {
  const uint64_t x = mix64(state ^ ((uint64_t{c} * n_init + t + 1) * 0xD1B54A32D192ED03ull));
  return static_cast<uint32_t>(((x >> 32) * n_rows) >> 32);
}

/** The whole CTA: the query (rq, dim elements) into its distance layout q (as the single-CTA
 *  kernel: float rows as float, swizzled; byte rows as bytes plus |q|^2 into *qq, which is 0). */
template <typename T, typename Q>
__device__ void convert_query_mc(uint32_t dim, uint32_t n_chunks, const Q* rq, uint8_t* q, int* qq) {
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

/** The distance of row `id` to the query, computed by the calling team (all kTeam lanes). */
template <typename T, uint32_t kTeam>
__device__ __forceinline__ float team_distance(const multi_cta_args& a, const void* q, int qq, uint32_t id,
                                               uint32_t lane) {
  const uint4* row = reinterpret_cast<const uint4*>(a.d_dataset + uint64_t{id} * a.row_stride);
  if constexpr (elem_traits<T>::is_byte) {
    const uint4* q16 = static_cast<const uint4*>(q);
    if (a.metric == kMetricL2) return __int2float_rn(qq + team_sum_bytes<T, kTeam, false>(row, q16, a.n_chunks, lane));
    const float dot = __int2float_rn(team_sum_bytes<T, kTeam, true>(row, q16, a.n_chunks, lane));
    return a.metric == kMetricCosine ? 1.0f - dot : -dot;
  } else {
    const float4* q4 = static_cast<const float4*>(q);
    if (a.metric == kMetricL2) return team_sum<T, kTeam, false>(row, q4, a.n_chunks, lane);
    const float dot = team_sum<T, kTeam, true>(row, q4, a.n_chunks, lane);
    return a.metric == kMetricCosine ? 1.0f - dot : -dot;
  }
}

/** The whole CTA: distances of the candidates ids[0, n), one team each, into dists. */
template <typename T, uint32_t kTeam>
__device__ void compute_candidates(const multi_cta_args& a, const void* q, int qq, const uint32_t* ids,
                                   float* dists, uint32_t n) {
  const uint32_t team = threadIdx.x / kTeam, lane = threadIdx.x % kTeam, n_teams = blockDim.x / kTeam;
  for (uint32_t s = team; s < n; s += n_teams) {
    const float d = team_distance<T, kTeam>(a, q, qq, ids[s], lane);
    if (lane == 0) dists[s] = d;
  }
}

/** Warp 0: merges the candidates (cd/ci[0, n), distinct nodes not in the list) into the list
 *  (ld, li: lane i holds entry i), 32 per round. Candidates not nearer than the 32nd entry are
 *  dropped (the CPU's rule); the others are bitonic-sorted across the lanes, and the reversed
 *  minimum min(list[i], cand[31 - i]) keeps the 32 smallest of both as a bitonic sequence, which
 *  five half-cleaner stages sort. */
__device__ __forceinline__ void merge_list(float& ld, uint32_t& li, const float* cand_d, const uint32_t* cand_i,
                                           uint32_t n, float far) {
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
    const bool keep = i < n && (worst == far || cd < worst);
    if (__ballot_sync(kFullWarp, keep) == 0) continue;
    if (!keep) {
      cd = far;
      ci = kNoId;
    }
    for (uint32_t k = 2; k <= 32; k <<= 1)
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
}

/** Warp 0: the first list entry not yet a parent (in list order, like the CPU) becomes the
 *  parent and is flagged; kNoId when every entry was a parent (empty entries count as parents:
 *  kNoId has the flag bit). */
__device__ __forceinline__ uint32_t pick_parent(uint32_t& li) {
  const uint32_t lane = threadIdx.x & 31u;
  const uint32_t ballot = __ballot_sync(kFullWarp, (li & kParentFlag) == 0);
  if (ballot == 0) return kNoId;
  const uint32_t first = __ffs(ballot) - 1;
  const uint32_t parent = __shfl_sync(kFullWarp, li, first);
  if (lane == first) li |= kParentFlag;
  return parent;
}

template <typename T, uint32_t kTeam>
__global__ void __launch_bounds__(kMultiCtaMaxBlock, 4) multi_cta_search(const multi_cta_args a) {
  using Q = typename query_elem<T>::type;
  const float far = __int_as_float(0x7F800000);  // +inf: an empty list entry
  extern __shared__ __align__(16) uint8_t smem[];
  uint8_t* q = smem + a.smem_query;
  uint8_t* raw = smem + a.smem_raw;
  float* cand_d = reinterpret_cast<float*>(smem + a.smem_cand_d);
  uint32_t* cand_i = reinterpret_cast<uint32_t*>(smem + a.smem_cand_i);
  // s_n[iter & 1]: candidates in cand_*[0, n) merged at iteration iter; two counters, so that
  // zeroing the next one needs no extra barrier (as in the single-CTA kernel).
  __shared__ uint32_t s_n[2], s_parent;
  __shared__ int s_qq;
  __shared__ unsigned long long s_state;

  const uint32_t tid = threadIdx.x, nt = blockDim.x;
  const uint64_t qi = a.query_offset + blockIdx.y;
  uint32_t* keys = a.d_hash + (uint64_t{blockIdx.y} << a.hash_bits);

  // The other hash half, emptied for the next launch: this CTA's slice of it (stores only; the
  // half is not read during this launch).
  if (a.clear_vec4) {
    const uint64_t n_cta = uint64_t{gridDim.x} * gridDim.y, cta = uint64_t{blockIdx.y} * gridDim.x + blockIdx.x;
    const uint64_t per = (a.clear_vec4 + n_cta - 1) / n_cta, end = min(a.clear_vec4, (cta + 1) * per);
    const uint4 empty = make_uint4(kEmptySlot, kEmptySlot, kEmptySlot, kEmptySlot);
    for (uint64_t w = cta * per + tid; w < end; w += nt) a.d_clear[w] = empty;
  }

  // Step 0: the query (its bytes seed the random nodes, as on the CPU), then the CTA's own random
  // initial nodes (those no other CTA took first) and their distances.
  if (tid == 0) {
    s_qq = 0;
    s_n[0] = 0;
  }
  const uint32_t q_bytes = a.dim * static_cast<uint32_t>(sizeof(Q));
  copy_bytes(raw, a.d_queries + qi * q_bytes, q_bytes);
  __syncthreads();
  if (tid < 32) {
    const uint64_t h = query_hash_warp(raw, q_bytes);
    if (tid == 0) s_state = mix64(a.seed ^ h);
  }
  convert_query_mc<T>(a.dim, a.n_chunks, reinterpret_cast<const Q*>(raw), q, &s_qq);
  __syncthreads();
  const uint64_t state = s_state;
  for (uint32_t t = tid; t < a.n_init; t += nt) {
    const uint32_t id = initial_node(state, blockIdx.x, t, a.n_init, a.n_rows);
    if (device_hash_insert(keys, a.hash_bits, id)) cand_i[atomicAdd(&s_n[0], 1u)] = id;
  }
  __syncthreads();
  compute_candidates<T, kTeam>(a, q, s_qq, cand_i, cand_d, s_n[0]);
  __syncthreads();

  float ld = far;  // warp 0: the list, entry `lane`
  uint32_t li = kNoId;
  for (uint32_t iter = 0;; ++iter) {
    // Step 1: list update; step 2: the next parent (warp 0; the other warps wait).
    const uint32_t n = s_n[iter & 1];
    const bool pick = iter < a.max_iterations;
    if (tid < 32) {
      merge_list(ld, li, cand_d, cand_i, n, far);
      const uint32_t parent = pick ? pick_parent(li) : kNoId;
      if (tid == 0) {
        s_parent = parent;
        s_n[(iter + 1) & 1] = 0;  // last read at iteration iter - 1
      }
    }
    __syncthreads();
    if (!pick) break;
    const uint32_t parent = s_parent;
    if (parent == kNoId && iter >= a.min_iterations) break;

    // Step 3: the parent's neighbors that no CTA met before; their distances.
    uint32_t* count = &s_n[(iter + 1) & 1];
    if (parent != kNoId)
      for (uint32_t t = tid; t < a.degree; t += nt) {
        const uint32_t id = a.d_graph[uint64_t{parent} * a.degree + t];
        if (device_hash_insert(keys, a.hash_bits, id)) cand_i[atomicAdd(count, 1u)] = id;
      }
    __syncthreads();
    compute_candidates<T, kTeam>(a, q, s_qq, cand_i, cand_d, *count);
    __syncthreads();
  }

  const uint64_t part = uint64_t{blockIdx.y} * a.n_ctas * kMultiCtaList;
  if (tid < 32) {
    a.d_part_ids[part + blockIdx.x * kMultiCtaList + tid] = li == kNoId ? kNoId : li & kIdMask;
    a.d_part_dists[part + blockIdx.x * kMultiCtaList + tid] = ld;
  }
  // The last CTA of the query merges (threadfence reduction: each CTA publishes its list before
  // it counts itself; the last one to count sees every list).
  __shared__ bool s_last;
  __threadfence();
  __syncthreads();
  if (tid == 0) s_last = atomicAdd(a.d_done + blockIdx.y, 1u) == a.n_ctas - 1;
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  float* md = reinterpret_cast<float*>(smem + a.smem_merge);
  uint32_t* mi = reinterpret_cast<uint32_t*>(smem + a.smem_merge + size_t{a.merge_p2} * sizeof(float));
  const uint64_t out = qi * a.k;
  if (a.k <= kHeadMergeMaxK && a.n_ctas <= 128)
    merge_query_heads(a.d_part_ids + part, a.d_part_dists + part, a.n_ctas, a.k, md, mi, a.d_ids + out,
                      a.d_distances ? a.d_distances + out : nullptr);
  else
    merge_query_lists(a.d_part_ids + part, a.d_part_dists + part, a.n_ctas * kMultiCtaList, a.merge_p2, a.k, md,
                      mi, a.d_ids + out, a.d_distances ? a.d_distances + out : nullptr);
  if (tid == 0) a.d_done[blockIdx.y] = 0;  // ready for the next launch
}

}  // namespace dev

template <typename T, uint32_t kTeam>
void launch_multi_cta_team(const multi_cta_args& args, uint32_t n_queries, uint32_t block, size_t smem,
                           cudaStream_t stream) {
  auto kernel = dev::multi_cta_search<T, kTeam>;
  if (smem > 48 * 1024)
    CAGRA_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kernel<<<dim3(args.n_ctas, n_queries), block, smem, stream>>>(args);
  CAGRA_CUDA_CHECK_LAUNCH();
}

template <typename T>
void launch_multi_cta(const multi_cta_args& args, uint32_t team, uint32_t n_queries, uint32_t block, size_t smem,
                      cudaStream_t stream) {
  switch (team) {
    case 2: return launch_multi_cta_team<T, 2>(args, n_queries, block, smem, stream);
    case 4: return launch_multi_cta_team<T, 4>(args, n_queries, block, smem, stream);
    case 8: return launch_multi_cta_team<T, 8>(args, n_queries, block, smem, stream);
    case 16: return launch_multi_cta_team<T, 16>(args, n_queries, block, smem, stream);
    case 32: return launch_multi_cta_team<T, 32>(args, n_queries, block, smem, stream);
    default: CAGRA_FAIL("team size %u is not one of 2, 4, 8, 16, 32", team);
  }
}

}  // namespace cagra::cuda
