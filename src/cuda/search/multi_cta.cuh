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
// The CTAs never wait for each other (no inter-CTA barrier). At the end, on the latency path
// (small host batches, multi_cta_args::h_lists), each CTA writes its best min(k, 32) entries as
// tagged words to mapped host memory and the host merges the sorted lists (search.cu): no
// counter, no last-CTA merge (~5 us of batch-1 latency on the H200). Otherwise each writes its
// list to a global buffer, and the last of the query's CTAs to finish (a counter per query)
// turns the lists into the query's top k (multi_cta_merge.cuh): one kernel per call.
// The visited hash lives in two halves used by alternate launches: while a launch searches with
// one half, its CTAs empty the other one (what the previous launch wrote), so no memset runs
// between calls (at batch 1 every microsecond of a call is latency).
//
// Thread mapping: initial nodes are drawn from disjoint strata per CTA, one team each (on the
// latency path half a team where the row allows, so that all of them load at once: the CTA is
// sized for it), which claims the node in the hash while it loads the row; the nearest of each
// group of initial nodes (node s in group s mod 32) enters the CTA's list, so iteration 0 merges 32
// candidates however many were drawn. (With an initial-node pool, the persistent kernel at the
// automatic shape, the CTA instead scans its slice of the pool held in shared memory, a thread a
// row, and takes the nearest of each group: pool_scan; pool_claim then names iteration 0's
// parent, the nearest of them.) Each iteration, warp 0 first names the
// parent the merged list will have (pick_parent: two warp reductions), then merges the last
// candidates into its list 32 at a time (the CPU's drop rule, a register bitonic sort, the
// reversed-minimum step, a 5-stage bitonic merge: shuffles only, no shared-memory list) while
// the other warps insert the parent's neighbors into the device hash (one id each, coalesced
// graph reads) and append the ones they inserted to the other candidate buffer; then teams of
// kTeam lanes (team_distance.cuh) compute their distances. The merge (~0.6 us) thus overlaps the
// graph row's and the hash's round trips instead of adding to them. The last merge, which nothing
// overlaps, keeps exact only the entries that leave the CTA where the host merges the lists
// (merge_head: 1,230-1,250 SM clocks against merge_list's ~1,470, SIFT-wall-1M, H200). Unlike the
// single-CTA kernel the answer is not the CPU's bit for bit: which CTA discovers a node first
// depends on timing, so the traversal (and rarely the answer) varies between runs.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>

#include "core/bits.hpp"
#include "cuda/launch.hpp"
#include "cuda/primitives/visited_hash.cuh"
#include "cuda/primitives/warp_list.cuh"
#include "cuda/search/filter.cuh"
#include "cuda/search/multi_cta.hpp"
#include "cuda/search/multi_cta_merge.cuh"
#include "cuda/search/multi_cta_steps.cuh"
#include "cuda/search/search_common.cuh"

namespace cagra::cuda {
namespace dev {

/** The kernel's body; `query` is the query's bytes (query type, dim elements): in global or
 *  mapped host memory, or in the launch's parameters (multi_cta_search_inline). `resident`: the
 *  persistent kernel, the only one given a pool (a constant where the body is inlined, so that
 *  the launch kernels, at 64 registers, carry no pool scan). */
template <typename T, uint32_t kTeam>
__device__ __forceinline__ void multi_cta_body(const multi_cta_args& a, const uint8_t* query,
                                               bool resident) {
  using Q = typename query_elem<T>::type;
  const float far = __int_as_float(0x7F800000);  // +inf: an empty list entry
  extern __shared__ __align__(16) uint8_t smem[];
  uint8_t* raw = smem + a.smem_raw;
  // With query_ready the host sent the query in its distance layout: raw is the query.
  const bool ready = a.query_ready != 0;
  uint8_t* q = ready ? raw : smem + a.smem_query;
  float* cand_d = reinterpret_cast<float*>(smem + a.smem_cand_d);
  uint32_t* cand_i = reinterpret_cast<uint32_t*>(smem + a.smem_cand_i);
  // s_n[iter & 1]: candidates in buffer iter & 1 of cand_*, merged at iteration iter while the
  // other buffer fills; two counters, so that zeroing the next one needs no extra barrier.
  __shared__ uint32_t s_n[2], s_parent;
  __shared__ unsigned long long s_init_best[kMultiCtaList];  // init_finish's groups
  __shared__ int s_qq;
  __shared__ unsigned long long s_state;

  const uint32_t tid = threadIdx.x, nt = blockDim.x;
  const uint64_t qi = a.query_offset + blockIdx.y;
#if CAGRA_MCTA_TRACE
  // Timestamps of the first query's CTAs (a build with CAGRA_MCTA_TRACE=1 only: multi_cta.hpp).
  uint64_t* trace =
      a.d_trace && blockIdx.y == 0 ? a.d_trace + blockIdx.x * kMultiCtaTraceSlots : nullptr;
  const auto stamp = [&](uint32_t slot) {
    if (trace && tid == 0) trace[slot] = global_ns();
  };
#else
  const auto stamp = [](uint32_t) {};
#endif
  stamp(kTraceStart);
#if CAGRA_MCTA_TRACE
  const long long head_from = clock64();
  if (trace && tid == 0) {
    uint32_t sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    trace[kTraceSm] = sm;
  }
#endif
  uint32_t* keys = a.d_hash + (uint64_t{blockIdx.y} << a.hash_bits);

  // The other hash half, emptied for the next launch: this CTA's slice of it (stores only; the
  // half is not read during this launch).
  if (a.clear_vec4) {
    const uint64_t n_cta = uint64_t{gridDim.x} * gridDim.y,
                   cta = uint64_t{blockIdx.y} * gridDim.x + blockIdx.x;
    const uint64_t per = (a.clear_vec4 + n_cta - 1) / n_cta,
                   end = min(a.clear_vec4, (cta + 1) * per);
    const uint4 empty = make_uint4(kEmptySlot, kEmptySlot, kEmptySlot, kEmptySlot);
    for (uint64_t w = cta * per + tid; w < end; w += nt) a.d_clear[w] = empty;
  }
  stamp(kTraceCleared);

  // Step 0: the query (its bytes seed the random nodes, as on the CPU), the CTA's own random
  // initial nodes (those no other CTA took first) and their distances.
  // With a pool (a.pool_rows_per_cta: the persistent kernel) its slice is in shared memory.
  const bool pooled = resident && a.pool_rows_per_cta != 0;
  if (tid == 0) {
    s_qq = 0;
    // init_finish / pool_scan fill [0, that) (kNoId: none claimed)
    s_n[0] = pooled ? kMultiCtaList : min(a.n_init, kMultiCtaList);
    s_n[1] = 0;  // iteration 0's new candidates (pick_parent zeroes it too)
  }
  if (tid < kMultiCtaList) s_init_best[tid] = kNoInitBest;
  // The seed state first (the host's, or warp 0's hash of the query's bytes), so that the
  // initial nodes' claims and row loads fly while the query is copied and converted.
  const uint32_t q_bytes = a.dim * static_cast<uint32_t>(sizeof(Q));
  uint64_t state = a.query_state;
  if (!a.has_query_state) {
    if (query) copy_bytes(raw, query, q_bytes);  // null: the persistent kernel put it there
    __syncthreads();
    if (tid < 32) {
      const uint64_t h = query_hash_warp(raw, q_bytes);
      if (tid == 0) s_state = bits::mix64(a.seed ^ h);
    }
    __syncthreads();
    state = s_state;
  }
  // The latency path gives an initial node half a team where its row allows (core/plan.hpp), so
  // that the CTA's teams load all of them at once.
  constexpr uint32_t kInitHalf = kTeam >= 4 ? kTeam / 2 : kTeam;
  const bool half = a.init_half_team != 0;
  const init_pending first =
      half ? init_begin<kInitHalf>(a, keys, state) : init_begin<kTeam>(a, keys, state);
  stamp(kTraceInitIssued);
#if CAGRA_MCTA_TRACE
  if (trace && tid == 0) trace[kTraceHeadClocks] = uint64_t(clock64() - head_from);
#endif
  if (a.has_query_state && query) copy_bytes(raw, query, q_bytes);
  __syncthreads();
  stamp(kTraceQueryCopied);
  if (!ready) {
    convert_query_mc<T>(a.dim, a.n_chunks, reinterpret_cast<const Q*>(raw), q, &s_qq);
    __syncthreads();
  }
  stamp(kTraceQueryReady);
  const int qq = ready ? a.query_norm : s_qq;
  // With a pool, iteration 0's parent is named by pool_claim (the nearest of the picks), so
  // that iteration 0 starts with the claims (pick_parent and a barrier cost ~0.3 us there).
  const bool picked0 = pooled && a.max_iterations > 0;
  if (pooled) {
#if CAGRA_MCTA_TRACE
    const long long scan_from = clock64();
#endif
    pool_scan<T>(a, q, qq, smem + a.smem_pool, s_init_best);
    stamp(kTracePoolScanned);
#if CAGRA_MCTA_TRACE
    if (trace && tid == 0) trace[kTraceScanClocks] = uint64_t(clock64() - scan_from);
#endif
    pool_claim(a, keys, smem + a.smem_pool, s_init_best, cand_i, cand_d, &s_parent);
  } else if (half)
    init_finish<T, kInitHalf>(a, q, qq, keys, state, first, s_init_best, cand_i, cand_d);
  else
    init_finish<T, kTeam>(a, q, qq, keys, state, first, s_init_best, cand_i, cand_d);
  __syncthreads();
  stamp(kTraceInitDone);

  // The loop, three barriers an iteration: (1) warp 0 picks the parent the merged list will
  // have (pick_parent); (2) warp 0 merges the candidates into its list while the other warps
  // insert the parent's neighbors into the hash, listing the new ones in the other candidate
  // buffer; (3) every team computes distances of those. The merge is off the critical path.
  float ld = far;  // warp 0: the list, entry `lane`
  uint32_t li = kNoId;
  // A filtered search (filter.cuh): warp 0 also keeps the 32 nearest allowed rows this CTA has
  // found, which it publishes instead of its list. (Compacting the list itself kept only the
  // allowed rows among its 32 nearest: at 10% selectivity about 3 per CTA, recall@10 0.906 at
  // batch 1 on SIFT-wall-1M, H100.)
  const uint32_t* allowed = a.d_filter ? a.d_filter + qi * a.filter_stride : nullptr;
  float rd = far;
  uint32_t ri = kNoId;
  for (uint32_t iter = 0;; ++iter) {
    const uint32_t b = iter & 1;  // s_n[b], buffer b: the candidates merged now
    float* in_d = cand_d + b * a.cand_cap;
    uint32_t* in_i = cand_i + b * a.cand_cap;
    const uint32_t n = s_n[b];
    const bool pick = iter < a.max_iterations;
    if (iter == 0 && picked0) {
      // s_parent from pool_claim, flagged in the candidates; the barrier after it was this one
    } else {
      if (tid < 32) {
#if CAGRA_MCTA_TRACE
        const long long pick_from = clock64();
#endif
        const uint32_t parent = pick ? pick_parent(ld, li, in_d, in_i, n, far) : kNoId;
#if CAGRA_MCTA_TRACE
        if (trace && tid == 0 && iter < 2)
          trace[iter == 0 ? kTracePickClocks : kTracePickClocks1] = uint64_t(clock64() - pick_from);
#endif
        if (tid == 0) {
          s_parent = parent;
          s_n[b ^ 1] = 0;  // last read at iteration iter - 1
        }
      }
      __syncthreads();
    }
    const uint32_t parent = s_parent;
    const bool expand = pick && (parent != kNoId || iter < a.min_iterations);
    if (iter == 0) stamp(kTracePicked0);
    uint32_t* out_i = cand_i + (b ^ 1) * a.cand_cap;
    if (tid < 32) {
#if CAGRA_MCTA_TRACE
      // The last merge (nothing overlaps it): its clocks, and how many candidates can enter the
      // entries that leave the CTA.
      long long merge_from = 0;
      if (trace && !expand) {
        const uint32_t head = a.h_lists ? a.list_k : kMultiCtaList;
        const float td = __shfl_sync(kFullWarp, ld, head - 1);
        const uint32_t ti = __shfl_sync(kFullWarp, li, head - 1);
        const uint32_t can = __popc(__ballot_sync(
            kFullWarp, tid < n && in_i[tid] != kNoId && key_less(in_d[tid], in_i[tid], td, ti)));
        if (tid == 0) trace[kTraceLastCandidates] = n | uint64_t{can} << 32;
        merge_from = clock64();
      }
#endif
      if (!expand && a.h_lists && !allowed) {
        merge_head(ld, li, in_d, in_i, n, far, a.list_k);  // only list_k entries leave the CTA
      } else if (!expand && allowed) {
        merge_list(rd, ri, in_d, in_i, n, far, allowed);  // only the allowed list leaves the CTA
      } else {
#if CAGRA_MCTA_TRACE
        const long long list_from = clock64();
#endif
        merge_list(ld, li, in_d, in_i, n, far);
#if CAGRA_MCTA_TRACE
        if (trace && tid == 0 && iter < 2)
          trace[kTraceMergeClocks0 + iter] = uint64_t(clock64() - list_from);
#endif
        if (allowed) merge_list(rd, ri, in_d, in_i, n, far, allowed);
      }
#if CAGRA_MCTA_TRACE
      if (trace && tid == 0 && !expand) {
        trace[kTraceLastMergeClocks] = uint64_t(clock64() - merge_from);
        trace[kTraceLastMerged] = global_ns();
      }
#endif
    } else if (expand && parent != kNoId) {
      const uint32_t* row = a.d_graph + uint64_t{parent} * a.degree;
      for (uint32_t t = tid - 32; t < a.degree; t += nt - 32) {
        const uint32_t id = row[t];
        prefetch_row(a, id);
        if (device_hash_insert(keys, a.hash_bits, id)) out_i[atomicAdd(&s_n[b ^ 1], 1u)] = id;
      }
    }
    __syncthreads();
    if (!expand) break;
    if (iter == 0) stamp(kTraceClaimed0);
#if CAGRA_MCTA_TRACE
    const long long dist_from = clock64();
#endif
    compute_candidates<T, kTeam>(a, q, qq, out_i, cand_d + (b ^ 1) * a.cand_cap, s_n[b ^ 1]);
    __syncthreads();
#if CAGRA_MCTA_TRACE
    if (trace && tid == 0 && iter < 2)
      trace[kTraceDistClocks0 + iter] = uint64_t(clock64() - dist_from);
#endif
    if (iter < kTraceIterations) stamp(kTraceIteration0 + iter);
  }

  if (allowed) {  // only allowed rows leave the CTA
    ld = rd;
    li = ri;
  }
  if (a.h_lists) {  // the host merges: each CTA sends its best list_k, tagged; nothing else
    if (tid < a.list_k) {
      const uint64_t tag = uint64_t{a.tag} << 32;
      const uint32_t id = li == kNoId ? kNoId : li & kIdMask;
      reinterpret_cast<ulonglong2*>(a.h_lists)[(qi * a.n_ctas + blockIdx.x) * a.list_k + tid] =
          make_ulonglong2(id | tag, __float_as_uint(ld) | tag);
    }
    stamp(kTracePublished);
    return;
  }
  const uint64_t part = uint64_t{blockIdx.y} * a.n_ctas * kMultiCtaList;
  if (tid < 32) {
    a.d_part_ids[part + blockIdx.x * kMultiCtaList + tid] = li == kNoId ? kNoId : li & kIdMask;
    a.d_part_dists[part + blockIdx.x * kMultiCtaList + tid] = ld;
  }
  stamp(kTracePublished);
  // The last CTA of the query merges (threadfence reduction: each CTA publishes its list before
  // it counts itself; the last one to count sees every list).
  __shared__ bool s_last;
  __threadfence();
  __syncthreads();
  if (tid == 0) s_last = atomicAdd(a.d_done + blockIdx.y, 1u) == a.n_ctas - 1;
  __syncthreads();
  if (!s_last) return;
  // Every CTA of the query has counted itself: the counter is free again (reset before the
  // results go out, so that a job the host posts after seeing them finds it at 0; the fence
  // below orders the reset before the result writes).
  if (tid == 0) {
    a.d_done[blockIdx.y] = 0;
  }
  __threadfence();
  stamp(kTraceCounted);
  float* md = reinterpret_cast<float*>(smem + a.smem_merge);
  uint32_t* mi =
      reinterpret_cast<uint32_t*>(smem + a.smem_merge + size_t{a.merge_p2} * sizeof(float));
  const uint64_t out = qi * a.k;
  const result_writer w{a.d_ids + out, a.d_distances ? a.d_distances + out : nullptr};
  if (a.k <= kHeadMergeMaxK && a.n_ctas <= 128)
    merge_query_heads(a.d_part_ids + part, a.d_part_dists + part, a.n_ctas, a.k, md, mi, w);
  else
    merge_query_lists(a.d_part_ids + part, a.d_part_dists + part, a.n_ctas * kMultiCtaList,
                      a.merge_p2, a.k, md, mi, w);
  stamp(kTraceMerged);
  stamp(kTraceEnd);
}

template <typename T, uint32_t kTeam>
__global__ void __launch_bounds__(kMultiCtaMaxBlock, 4) multi_cta_search(const multi_cta_args a) {
  const uint32_t q_bytes = a.dim * static_cast<uint32_t>(sizeof(typename query_elem<T>::type));
  multi_cta_body<T, kTeam>(a, a.d_queries + (a.query_offset + blockIdx.y) * q_bytes, false);
}

/** One query whose bytes came with the launch (no PCIe read of mapped memory at batch 1). */
template <typename T, uint32_t kTeam>
__global__ void __launch_bounds__(kMultiCtaMaxBlock, 4)
    multi_cta_search_inline(const multi_cta_args a, const __grid_constant__ inline_query query) {
  multi_cta_body<T, kTeam>(a, query.bytes, false);
}

}  // namespace dev

template <typename T>
void launch_multi_cta(const multi_cta_args& args, uint32_t team, uint32_t n_queries, uint32_t block,
                      size_t smem, cudaStream_t stream, const inline_query* query) {
  const dim3 grid(args.n_ctas, n_queries);
  with_team(team, [&](auto t) {
    constexpr uint32_t kTeam = decltype(t)::value;
    if (query)
      launch_with_smem(dev::multi_cta_search_inline<T, kTeam>, grid, block, smem, stream, args,
                       *query);
    else
      launch_with_smem(dev::multi_cta_search<T, kTeam>, grid, block, smem, stream, args);
  });
}

}  // namespace cagra::cuda
