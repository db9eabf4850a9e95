// The single-CTA search kernel (paper §IV-C1): one CTA per query runs the whole search, steps
// 0-3 of §IV-A, in one fused kernel; all per-query state lives in shared memory.
//
// Thread mapping: every thread stages the query; warp 0 hashes it into the seed of the random
// initial nodes, which every thread then draws (counter-based, bits::random_node);
// all threads expand the parents' graph rows (coalesced reads) through the visited hash
// (visited_hash.cuh), appending only the new ids to a compact candidate list; teams of kTeam
// lanes (team_distance.cuh) compute their distances, blockDim / kTeam at a time; the top-M
// update (bitonic.cuh) runs on warp 0 when at most 32 candidates are new or top-M + candidates
// <= 512 entries (the others wait at the next barrier), else on the whole CTA; warp 0 picks the
// parents with ballots.
//
// Why it follows the CPU backend step by step (src/cpu/search.cpp): the random initial nodes
// are the CPU's (a hash of the query bytes mixed with the seed, then splitmix64 at counter i),
// the merge drops candidates the CPU would drop, and keys are totally ordered. For byte vectors
// (exact integer distances, as on the CPU) the GPU then returns the CPU's answer exactly, which
// makes the agreement test sharp; for float vectors rounding may reorder near ties. Resetting the
// visited hash (forgettable, or when half full) cannot change the answer: a forgotten node was
// already worse than the M-th entry, which only gets better, so it is dropped again.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>

#include "cuda/check.hpp"
#include "cuda/launch.hpp"
#include "cuda/primitives/bitonic.cuh"
#include "cuda/primitives/team_distance.cuh"
#include "cuda/primitives/visited_hash.cuh"
#include "cuda/search/filter.cuh"
#include "cuda/search/search_common.cuh"
#include "cuda/search/single_cta.hpp"

namespace cagra::cuda {
namespace dev {

#if CAGRA_MCTA_TRACE
/** A traced build (single_cta.hpp): thread 0 adds the cycles since the last stamp to phase
 *  `slot` of the CTA's shared record. */
#define CAGRA_SC_STAMP(slot)                \
  do {                                      \
    if (threadIdx.x == 0) {                 \
      const uint64_t now_ = clock64();      \
      s_trace[slot] += now_ - s_trace_last; \
      s_trace_last = now_;                  \
    }                                       \
  } while (0)
#else
#define CAGRA_SC_STAMP(slot) \
  do {                       \
  } while (0)
#endif

/** The whole CTA: the query (rq, dim elements) into its distance layout q, zero padded to whole
 *  chunks: float rows as float, swizzled (team_distance.cuh); byte rows as bytes, adding |q|^2
 *  into *qq (which must be 0 before). */
template <typename T, typename Q>
__device__ void convert_query(const single_cta_args& a, const Q* rq, uint8_t* q, int* qq) {
  constexpr uint32_t V = elem_traits<T>::V;
  if constexpr (elem_traits<T>::is_byte) {
    int sum = 0;
    for (uint32_t e = threadIdx.x; e < a.n_chunks * V; e += blockDim.x) {
      const T v = e < a.dim ? rq[e] : T{0};
      reinterpret_cast<T*>(q)[e] = v;
      sum += int{v} * int{v};
    }
    for (uint32_t off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, off);
    if ((threadIdx.x & 31u) == 0) atomicAdd(qq, sum);
  } else {
    for (uint32_t e = threadIdx.x; e < a.n_chunks * V; e += blockDim.x)
      reinterpret_cast<float*>(q)[query_index<T>(e)] = e < a.dim ? rq[e] : 0.0f;
  }
}

/** Distances of ids[0, n) into dists, one team per candidate (team t: t, t + n_teams, ...); kDot:
 *  inner product or cosine, else L2. q: the query in shared memory (float4 swizzled for float
 *  rows, bytes for byte rows); qq: |q|^2 (byte rows, L2). */
template <typename T, uint32_t kTeam, bool kDot>
__device__ void compute_distances(const single_cta_args& a, const void* q, int qq,
                                  const uint32_t* ids, float* dists, uint32_t n) {
  const uint32_t team = threadIdx.x / kTeam, lane = threadIdx.x % kTeam,
                 n_teams = blockDim.x / kTeam;
  const auto row_of = [&](uint32_t s) {
    return reinterpret_cast<const uint4*>(a.d_dataset + uint64_t{ids[s]} * a.row_stride);
  };
  const auto distance = [&](auto sum) {  // from the team's sum over the row
    if constexpr (elem_traits<T>::is_byte) {
      return kDot ? bits::distance_from_dot(a.metric, __int2float_rn(sum))
                  : __int2float_rn(qq + sum);
    } else {
      return kDot ? bits::distance_from_dot(a.metric, sum) : sum;
    }
  };
  // The kernel is latency-bound. Byte rows of at most two chunks a lane (128-d u8 at team 4): a
  // team takes its candidates in pairs and loads both rows before reducing either, so its usual
  // two candidates an iteration cost one memory round trip instead of two; the sums are
  // team_sum_bytes's. Not for float rows or team 32: ptxas spills there (32 registers a thread).
  if constexpr (elem_traits<T>::is_byte && kTeam < 32) {
    if (a.n_chunks <= 2 * kTeam) {
      const uint4* q16 = static_cast<const uint4*>(q);
      const auto load = [&](uint32_t s) {  // the lane's chunks lane, lane + kTeam of row s
        const uint4* row = row_of(s) + lane;
        row_chunks<2> h{};
        if (lane < a.n_chunks) h.v[0] = __ldg(row);
        if (lane + kTeam < a.n_chunks) h.v[1] = __ldg(row + kTeam);
        return h;
      };
      for (uint32_t s = team; s < n; s += 2 * n_teams) {
        const uint32_t s1 = s + n_teams;  // the pair's second candidate, if s1 < n
        const row_chunks<2> h0 = load(s), h1 = s1 < n ? load(s1) : row_chunks<2>{};
        const int sum0 = lane_sum_head<T, kTeam, kDot>(h0, q16, a.n_chunks, lane);
        const int sum1 = lane_sum_head<T, kTeam, kDot>(h1, q16, a.n_chunks, lane);
        const float d0 = distance(team_reduce<kTeam>(sum0)),
                    d1 = distance(team_reduce<kTeam>(sum1));
        if (lane == 0) {
          dists[s] = d0;
          if (s1 < n) dists[s1] = d1;
        }
      }
      return;
    }
  }
  for (uint32_t s = team; s < n; s += n_teams) {
    float d;
    if constexpr (elem_traits<T>::is_byte) {
      d = distance(team_sum_bytes<T, kTeam, kDot>(row_of(s), static_cast<const uint4*>(q),
                                                  a.n_chunks, lane));
    } else {
      d = distance(
          team_sum<T, kTeam, kDot>(row_of(s), static_cast<const float4*>(q), a.n_chunks, lane));
    }
    if (lane == 0) dists[s] = d;
  }
}

/** compute_distances for the search's metric. */
template <typename T, uint32_t kTeam>
__device__ void compute_distances(const single_cta_args& a, const void* q, int qq,
                                  const uint32_t* ids, float* dists, uint32_t n) {
  if (a.metric == metric::l2) {
    compute_distances<T, kTeam, false>(a, q, qq, ids, dists, n);
  } else {
    compute_distances<T, kTeam, true>(a, q, qq, ids, dists, n);
  }
}

/** Step 2 on warp 0: marks the first `width` entries of the top list that were not parents yet
 *  (in list order, like the CPU) and writes their ids to parents, their number to *n_parents. */
__device__ __forceinline__ void pick_parents(const single_cta_args& a, uint32_t* top_i,
                                             uint32_t* parents, uint32_t* n_parents) {
  const uint32_t lane = threadIdx.x & 31u;
  uint32_t n = 0;
  for (uint32_t base = 0; base < a.itopk && n < a.width; base += 32) {
    const uint32_t i = base + lane;
    const uint32_t id = i < a.itopk ? top_i[i] : kNoId;
    const bool ok = (id & kParentFlag) == 0;  // also excludes kNoId
    const uint32_t ballot = __ballot_sync(0xFFFFFFFFu, ok);
    const uint32_t r = n + __popc(ballot & ((1u << lane) - 1u));
    if (ok && r < a.width) {
      parents[r] = id;
      top_i[i] = id | kParentFlag;
    }
    n += __popc(ballot);
  }
  if (lane == 0) *n_parents = min(n, a.width);
}

template <typename T, uint32_t kTeam>
__global__ void __launch_bounds__(kMaxBlock, kMinBlocksPerSm)
    single_cta_search(const single_cta_args a) {
  using Q = typename query_elem<T>::type;
  const float far = __int_as_float(0x7F800000);  // +inf, the CPU's "no entry" distance
  extern __shared__ __align__(16) uint8_t smem[];
  uint8_t* q = smem + a.smem_query;  // float rows: float4 swizzled; byte rows: the bytes
  float* top_d = reinterpret_cast<float*>(smem + a.smem_dist);
  uint32_t* top_i = reinterpret_cast<uint32_t*>(smem + a.smem_ids);
  float* cand_d = top_d + a.itopk_p2;
  uint32_t* cand_i = top_i + a.itopk_p2;
  uint32_t* table = reinterpret_cast<uint32_t*>(smem + a.smem_hash);
  uint8_t* raw = smem + a.smem_hash;  // the query's own bytes, until the hash is cleared
  __shared__ uint32_t s_parents[64];
  // s_n_valid[iter & 1]: candidates in cand_*[0, n) merged at iteration iter (appended in any
  // order: the merge sorts). Two counters, so that zeroing the next one needs no extra barrier.
  __shared__ uint32_t s_n_parents, s_n_valid[2], s_hash_count, s_reset;
  __shared__ int s_qq;                                  // |q|^2 of a byte query
  __shared__ uint64_t s_state;                          // the initial nodes' seed state
  __shared__ uint32_t s_mask[kSingleCtaMaxItopk / 32];  // rank_merge_warp's output positions

  const uint32_t tid = threadIdx.x, nt = blockDim.x;
  const uint64_t qi = a.query_offset + blockIdx.x;
  if (tid == 0) s_qq = 0;
#if CAGRA_MCTA_TRACE
  __shared__ uint64_t s_trace[kSingleCtaTraceSlots], s_trace_last;
  if (tid == 0) {
    for (uint32_t i = 0; i < kSingleCtaTraceSlots; ++i) s_trace[i] = 0;
    s_trace[kScTraceStartNs] = global_ns();
    s_trace_last = clock64();
  }
#endif

  // Step 0a: the query's bytes into shared memory.
  const uint32_t q_bytes = a.dim * static_cast<uint32_t>(sizeof(Q));
  copy_bytes(raw, a.d_queries + qi * q_bytes, q_bytes);
  __syncthreads();

  // Step 0b: the seed of the random initial nodes (warp 0 hashes the query's bytes, the CPU's
  // query_seed_state); the query zero padded to whole chunks (float rows: as float, swizzled;
  // byte rows: bytes, and |q|^2); an empty top-M list.
  if (tid < 32) {
    const uint64_t h = query_hash_warp(raw, q_bytes);
    if (tid == 0) {
      s_state = bits::mix64(a.seed ^ h);
      s_hash_count = 0;
      s_n_valid[0] = 0;
    }
  }
  convert_query<T>(a, reinterpret_cast<const Q*>(raw), q, &s_qq);
  for (uint32_t i = tid; i < a.itopk_p2; i += nt) {
    top_d[i] = far;
    top_i[i] = kNoId;
  }
  __syncthreads();

  hash_clear(table, a.hash_bits, tid, nt);
  __syncthreads();
  // The initial nodes, one draw per thread (the CPU's ids, bits::random_node).
  const uint64_t state = s_state;
  for (uint32_t i = tid; i < a.n_init; i += nt) {
    const uint32_t id = bits::random_node(state, i, a.n_rows);
    if (hash_insert(table, a.hash_bits, id))
      cand_i[atomicAdd(&s_n_valid[0], 1u)] = id;  // else drawn twice
  }
  __syncthreads();
  CAGRA_SC_STAMP(kScTraceSetup);

  for (uint32_t iter = 0;; ++iter) {
    // The candidates' distances: the initial nodes at iteration 0, then step 3's of the last
    // iteration (one call site: two inlined copies of compute_distances made ptxas spill).
    compute_distances<T, kTeam>(a, q, s_qq, cand_i, cand_d, s_n_valid[iter & 1]);
    __syncthreads();
    CAGRA_SC_STAMP(iter == 0 ? kScTraceInitDist : kScTraceDistances);
    // Step 1: top-M update; step 2: the first `width` entries that were not parents yet. Both on
    // warp 0 when the lists are short (one CTA barrier per pair), the merge on the CTA otherwise.
    const uint32_t n_valid = s_n_valid[iter & 1];
    const bool pick = iter < a.max_iterations;
    if (n_valid <= 32 || a.itopk_p2 + next_pow2(n_valid) <= kWarpMergeMax) {
      if (tid < 32) {
        merge_into_top(warp_group{}, top_d, top_i, a.itopk, a.itopk_p2, cand_d, cand_i, n_valid,
                       s_mask, far, kNoId);
        __syncwarp();
        if (pick) pick_parents(a, top_i, s_parents, &s_n_parents);
      }
    } else {
      merge_into_top(block_group{}, top_d, top_i, a.itopk, a.itopk_p2, cand_d, cand_i, n_valid,
                     s_mask, far, kNoId);
      __syncthreads();
      if (tid < 32 && pick) pick_parents(a, top_i, s_parents, &s_n_parents);
    }
    if (pick && tid == 0) {
      s_hash_count += n_valid;        // the ids inserted since the last count
      s_n_valid[(iter + 1) & 1] = 0;  // last read at iteration iter - 1
      s_reset = (a.reset_interval != 0 && iter > 0 && iter % a.reset_interval == 0) ||
                2 * s_hash_count >= (1u << a.hash_bits);
    }
    __syncthreads();
    CAGRA_SC_STAMP(iter == 0 ? kScTraceInitMerge : kScTraceMerge);
#if CAGRA_MCTA_TRACE
    if (tid == 0) ++s_trace[kScTraceIterations];
#endif
    if (!pick) break;
    const uint32_t n_par = s_n_parents;
    if (n_par == 0 && iter >= a.min_iterations) break;

    // Forgettable hash: keep only the current top-M ids.
    if (s_reset) {
      hash_clear(table, a.hash_bits, tid, nt);
      if (tid == 0) s_hash_count = 0;
      __syncthreads();
      for (uint32_t i = tid; i < a.itopk; i += nt) {
        const uint32_t id = top_i[i];
        if (id != kNoId && hash_insert(table, a.hash_bits, id & kIdMask))
          atomicAdd(&s_hash_count, 1u);
      }
      __syncthreads();
      CAGRA_SC_STAMP(kScTraceReset);
    }

    // Step 3: the parents' neighbors not visited yet become the candidates (their distances:
    // at the top of the next iteration).
    const uint32_t n_new = n_par * a.degree;
    for (uint32_t t = tid; t < n_new; t += nt) {
      const uint32_t id = a.d_graph[uint64_t{s_parents[t / a.degree]} * a.degree + t % a.degree];
      if (hash_insert(table, a.hash_bits, id))
        cand_i[atomicAdd(&s_n_valid[(iter + 1) & 1], 1u)] = id;
    }
    __syncthreads();
    CAGRA_SC_STAMP(kScTraceExpand);
  }

  if (a.d_filter) {  // the allowed entries of the top-M list (filter.cuh)
    if (tid < 32)
      write_allowed(top_d, top_i, a.itopk, a.k, a.d_filter + qi * a.filter_stride,
                    a.d_ids + qi * a.k, a.d_distances ? a.d_distances + qi * a.k : nullptr);
    return;
  }
  for (uint32_t i = tid; i < a.k; i += nt) {
    const uint32_t id = top_i[i];
    a.d_ids[qi * a.k + i] = id == kNoId ? kNoId : id & kIdMask;
    if (a.d_distances) a.d_distances[qi * a.k + i] = top_d[i];
  }
#if CAGRA_MCTA_TRACE
  __syncthreads();
  CAGRA_SC_STAMP(kScTraceWrite);
  if (tid == 0 && a.d_trace) {
    s_trace[kScTraceEndNs] = global_ns();
    for (uint32_t i = 0; i < kSingleCtaTraceSlots; ++i)
      a.d_trace[qi * kSingleCtaTraceSlots + i] = s_trace[i];
  }
#endif
}

}  // namespace dev

template <typename T>
void launch_single_cta(const single_cta_args& args, uint32_t team, uint32_t grid, uint32_t block,
                       size_t smem, cudaStream_t stream) {
  with_team(team, [&](auto t) {
    launch_with_smem(dev::single_cta_search<T, decltype(t)::value>, dim3(grid), block, smem, stream,
                     args);
  });
}

}  // namespace cagra::cuda
