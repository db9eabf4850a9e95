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
// Thread mapping: initial nodes are drawn from disjoint strata per CTA, one team each, which
// claims the node in the hash while it loads the row. Each iteration, warp 0 first names the
// parent the merged list will have (pick_parent: two warp reductions), then merges the last
// candidates into its list 32 at a time (the CPU's drop rule, a register bitonic sort, the
// reversed-minimum step, a 5-stage bitonic merge: shuffles only, no shared-memory list) while
// the other warps insert the parent's neighbors into the device hash (one id each, coalesced
// graph reads) and append the ones they inserted to the other candidate buffer; then teams of
// kTeam lanes (team_distance.cuh) compute their distances. The merge (~0.6 us) thus overlaps
// the graph row's and the hash's round trips instead of adding to them. Unlike the single-CTA kernel the answer is not the
// CPU's bit for bit: which CTA discovers a node first depends on timing, so the traversal (and
// rarely the answer) varies between runs.
#pragma once

#include <cstdint>
#include <type_traits>

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

/** Home slot of `id` in a device hash of 2^bits slots. */
__device__ __forceinline__ uint32_t hash_home(uint32_t id, uint32_t bits) { return (id * 0x9E3779B1u) >> (32 - bits); }

/** The rest of an insertion whose probe at slot h returned `old`: true when this call inserted
 *  `id` (the node is the caller's), false when it was there already or no free slot was found
 *  within kMultiCtaMaxProbe probes (then the node is skipped). */
__device__ __forceinline__ bool device_hash_finish(uint32_t* keys, uint32_t bits, uint32_t id, uint32_t h,
                                                   uint32_t old) {
  const uint32_t mask = (1u << bits) - 1u;
  for (uint32_t p = 1;; ++p) {
    if (old == kEmptySlot) return true;
    if (old == id || p == kMultiCtaMaxProbe) return false;
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

/** Nanoseconds of the GPU's global timer (the same clock on every SM). */
__device__ __forceinline__ uint64_t global_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
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

/** Random initial node t of CTA c: a counter-based draw from the query's seed state, inside
 *  stratum c * n_init + t of the n_ctas * n_init equal slices of [0, n_rows). The strata make
 *  the draws of all CTAs distinct (while n_rows >= the number of draws), so an initial node's
 *  claim in the device hash all but always succeeds: it is checked after the node's distance
 *  instead of before it (init_candidates). */
__device__ __forceinline__ uint32_t initial_node(uint64_t state, uint32_t c, uint32_t t, uint32_t n_init,
                                                 uint32_t n_ctas, uint64_t n_rows) {
  const uint64_t g = uint64_t{c} * n_init + t, total = uint64_t{n_ctas} * n_init;
  const uint64_t lo = g * n_rows / total, hi = (g + 1) * n_rows / total;
  const uint64_t x = mix64(state ^ ((g + 1) * 0xD1B54A32D192ED03ull));
  return static_cast<uint32_t>(lo + (((x >> 32) * (hi - lo)) >> 32));
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

/** Row `id` of the dataset as 16-byte chunks. */
__device__ __forceinline__ const uint4* dataset_row(const multi_cta_args& a, uint32_t id) {
  return reinterpret_cast<const uint4*>(a.d_dataset + uint64_t{id} * a.row_stride);
}

/** The distance of `row` to the query, computed by the calling team (all kTeam lanes) from the
 *  head of the row the lanes already loaded (team_load_head: every load of a row of up to
 *  4 x kTeam chunks in flight at once, one memory round trip: this kernel is latency-bound). */
template <typename T, uint32_t kTeam>
__device__ __forceinline__ float team_distance(const multi_cta_args& a, const void* q, int qq, const row_head& h,
                                               const uint4* row, uint32_t lane) {
  if constexpr (elem_traits<T>::is_byte) {
    const uint4* q16 = static_cast<const uint4*>(q);
    if (a.metric == kMetricL2)
      return __int2float_rn(qq + team_sum_bytes_head<T, kTeam, false>(h, row, q16, a.n_chunks, lane));
    const float dot = __int2float_rn(team_sum_bytes_head<T, kTeam, true>(h, row, q16, a.n_chunks, lane));
    return a.metric == kMetricCosine ? 1.0f - dot : -dot;
  } else {
    const float4* q4 = static_cast<const float4*>(q);
    if (a.metric == kMetricL2) return team_sum_head<T, kTeam, false>(h, row, q4, a.n_chunks, lane);
    const float dot = team_sum_head<T, kTeam, true>(h, row, q4, a.n_chunks, lane);
    return a.metric == kMetricCosine ? 1.0f - dot : -dot;
  }
}

/** The whole CTA: distances of the candidates ids[0, n), one team each, into dists. */
template <typename T, uint32_t kTeam>
__device__ void compute_candidates(const multi_cta_args& a, const void* q, int qq, const uint32_t* ids,
                                   float* dists, uint32_t n) {
  const uint32_t team = threadIdx.x / kTeam, lane = threadIdx.x % kTeam, n_teams = blockDim.x / kTeam;
  for (uint32_t s = team; s < n; s += n_teams) {
    const uint4* row = dataset_row(a, ids[s]);
    const float d = team_distance<T, kTeam>(a, q, qq, team_load_head<kTeam>(row, a.n_chunks, lane), row, lane);
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
__device__ __forceinline__ init_pending init_issue(const multi_cta_args& a, uint32_t* keys, uint64_t state,
                                                   uint32_t s) {
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
__device__ __forceinline__ init_pending init_begin(const multi_cta_args& a, uint32_t* keys, uint64_t state) {
  const uint32_t team = threadIdx.x / kTeam;
  return team < a.n_init ? init_issue<kTeam>(a, keys, state, team) : init_pending{kNoId, 0, 0, {}};
}

/** The whole CTA, once the query is ready: the distances of the CTA's initial nodes, one team
 *  each (the first from init_begin), into ids/dists[0, n_init) at fixed positions. A node is
 *  nearly always new (initial_node), so its claim is checked only after its distance; a node
 *  another CTA holds already is left out as (+inf, kNoId). */
template <typename T, uint32_t kTeam>
__device__ void init_finish(const multi_cta_args& a, const void* q, int qq, uint32_t* keys, uint64_t state,
                            const init_pending& first, uint32_t* ids, float* dists) {
  const uint32_t team = threadIdx.x / kTeam, lane = threadIdx.x % kTeam, n_teams = blockDim.x / kTeam;
  for (uint32_t s = team; s < a.n_init; s += n_teams) {
    const init_pending p = s == team ? first : init_issue<kTeam>(a, keys, state, s);
    const float d = team_distance<T, kTeam>(a, q, qq, p.head, dataset_row(a, p.id), lane);
    if (lane == 0) {
      const bool mine = device_hash_finish(keys, a.hash_bits, p.id, p.home, p.old);
      ids[s] = mine ? p.id : kNoId;
      dists[s] = mine ? d : __int_as_float(0x7F800000);
    }
  }
}

/** Issues L2 prefetches of the lines of row `id` of the dataset (up to 8 lines): a claiming
 *  thread sends them with its claim, so the distance that follows finds the row in L2 (SIFT-1M,
 *  H200: 2.33 -> 2.14 us an iteration; prefetching into L1 instead measured the same). */
__device__ __forceinline__ void prefetch_row(const multi_cta_args& a, uint32_t id) {
  const uint8_t* row = a.d_dataset + uint64_t{id} * a.row_stride;
  const uint32_t lines = min((a.row_stride + 127u) / 128u, 8u);
  for (uint32_t l = 0; l < lines; ++l) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + 128 * l));
}

/** Warp 0: merges the candidates (cd/ci[0, n), distinct nodes not in the list; kNoId entries
 *  are skipped) into the list (ld, li: lane i holds entry i), 32 per round. Candidates not
 *  nearer than the 32nd entry are
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
    const bool keep = i < n && ci != kNoId && (worst == far || cd < worst);
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

/** Warp 0, before merge_list merges the candidates cd/ci[0, n) into the list: the entry that
 *  will be the merged list's first one not yet a parent (the CPU's choice: list order), found
 *  without the merge, so that the parent's neighbors load while warp 0 merges. That is the
 *  smallest (distance, id) among the list's entries that are not parents and the candidates
 *  the merge keeps (list not full, or nearer than its 32nd entry: merge_list's rule); it is
 *  flagged where it is (in the list, or in ci so that the merge carries the flag). kNoId when
 *  there is none (empty entries count as parents: kNoId has the flag bit). */
__device__ __forceinline__ uint32_t pick_parent(float ld, uint32_t& li, const float* cd, uint32_t* ci, uint32_t n,
                                                float far) {
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

/** The kernel's body; `query` is the query's bytes (query type, dim elements): in global or
 *  mapped host memory, or in the launch's parameters (multi_cta_search_inline). */
template <typename T, uint32_t kTeam>
__device__ __forceinline__ void multi_cta_body(const multi_cta_args& a, const uint8_t* query) {
  using Q = typename query_elem<T>::type;
  const float far = __int_as_float(0x7F800000);  // +inf: an empty list entry
  extern __shared__ __align__(16) uint8_t smem[];
  uint8_t* q = smem + a.smem_query;
  uint8_t* raw = smem + a.smem_raw;
  float* cand_d = reinterpret_cast<float*>(smem + a.smem_cand_d);
  uint32_t* cand_i = reinterpret_cast<uint32_t*>(smem + a.smem_cand_i);
  // s_n[iter & 1]: candidates in buffer iter & 1 of cand_*, merged at iteration iter while the
  // other buffer fills; two counters, so that zeroing the next one needs no extra barrier.
  __shared__ uint32_t s_n[2], s_parent;
  __shared__ int s_qq;
  __shared__ unsigned long long s_state;

  const uint32_t tid = threadIdx.x, nt = blockDim.x;
  const uint64_t qi = a.query_offset + blockIdx.y;
  // Timestamps of the first query's CTAs (multi_cta_debug::trace; off unless a test asks).
  uint64_t* trace = a.d_trace && blockIdx.y == 0 ? a.d_trace + blockIdx.x * kMultiCtaTraceSlots : nullptr;
  const auto stamp = [&](uint32_t slot) {
    if (trace && tid == 0) trace[slot] = global_ns();
  };
  stamp(kTraceStart);
  uint32_t* keys = a.d_hash + (uint64_t{blockIdx.y} << a.hash_bits);

  // The other hash half, emptied for the next launch: this CTA's slice of it (stores only; the
  // half is not read during this launch).
  if (a.clear_vec4) {
    const uint64_t n_cta = uint64_t{gridDim.x} * gridDim.y, cta = uint64_t{blockIdx.y} * gridDim.x + blockIdx.x;
    const uint64_t per = (a.clear_vec4 + n_cta - 1) / n_cta, end = min(a.clear_vec4, (cta + 1) * per);
    const uint4 empty = make_uint4(kEmptySlot, kEmptySlot, kEmptySlot, kEmptySlot);
    for (uint64_t w = cta * per + tid; w < end; w += nt) a.d_clear[w] = empty;
  }

  // Step 0: the query (its bytes seed the random nodes, as on the CPU), the CTA's own random
  // initial nodes (those no other CTA took first) and their distances.
  if (tid == 0) {
    s_qq = 0;
    s_n[0] = a.n_init;  // init_finish fills [0, n_init) (lost claims as kNoId)
  }
  // The seed state first (the host's, or warp 0's hash of the query's bytes), so that the
  // initial nodes' claims and row loads fly while the query is copied and converted.
  const uint32_t q_bytes = a.dim * static_cast<uint32_t>(sizeof(Q));
  uint64_t state = a.query_state;
  if (!a.has_query_state) {
    if (query) copy_bytes(raw, query, q_bytes);  // null: the persistent kernel put it there
    __syncthreads();
    if (tid < 32) {
      const uint64_t h = query_hash_warp(raw, q_bytes);
      if (tid == 0) s_state = mix64(a.seed ^ h);
    }
    __syncthreads();
    state = s_state;
  }
  const init_pending first = init_begin<kTeam>(a, keys, state);
  if (a.has_query_state && query) copy_bytes(raw, query, q_bytes);
  __syncthreads();
  stamp(kTraceQueryCopied);
  convert_query_mc<T>(a.dim, a.n_chunks, reinterpret_cast<const Q*>(raw), q, &s_qq);
  __syncthreads();
  stamp(kTraceQueryReady);
  init_finish<T, kTeam>(a, q, s_qq, keys, state, first, cand_i, cand_d);
  __syncthreads();
  stamp(kTraceInitDone);

  // The loop, three barriers an iteration: (1) warp 0 picks the parent the merged list will
  // have (pick_parent); (2) warp 0 merges the candidates into its list while the other warps
  // insert the parent's neighbors into the hash, listing the new ones in the other candidate
  // buffer; (3) every team computes distances of those. The merge is off the critical path.
  float ld = far;  // warp 0: the list, entry `lane`
  uint32_t li = kNoId;
  for (uint32_t iter = 0;; ++iter) {
    const uint32_t b = iter & 1;  // s_n[b], buffer b: the candidates merged now
    float* in_d = cand_d + b * a.cand_cap;
    uint32_t* in_i = cand_i + b * a.cand_cap;
    const uint32_t n = s_n[b];
    const bool pick = iter < a.max_iterations;
    if (tid < 32) {
      const uint32_t parent = pick ? pick_parent(ld, li, in_d, in_i, n, far) : kNoId;
      if (tid == 0) {
        s_parent = parent;
        s_n[b ^ 1] = 0;  // last read at iteration iter - 1
      }
    }
    __syncthreads();
    const uint32_t parent = s_parent;
    const bool expand = pick && (parent != kNoId || iter < a.min_iterations);
    if (iter == 0) stamp(kTracePicked0);
    uint32_t* out_i = cand_i + (b ^ 1) * a.cand_cap;
    if (tid < 32) {
      merge_list(ld, li, in_d, in_i, n, far);
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
    compute_candidates<T, kTeam>(a, q, s_qq, out_i, cand_d + (b ^ 1) * a.cand_cap, s_n[b ^ 1]);
    __syncthreads();
    if (iter < kTraceIterations) stamp(kTraceIteration0 + iter);
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
  uint32_t* mi = reinterpret_cast<uint32_t*>(smem + a.smem_merge + size_t{a.merge_p2} * sizeof(float));
  const uint64_t out = qi * a.k;
  const result_writer w{a.d_ids + out, a.d_distances ? a.d_distances + out : nullptr};
  if (a.k <= kHeadMergeMaxK && a.n_ctas <= 128)
    merge_query_heads(a.d_part_ids + part, a.d_part_dists + part, a.n_ctas, a.k, md, mi, w);
  else
    merge_query_lists(a.d_part_ids + part, a.d_part_dists + part, a.n_ctas * kMultiCtaList, a.merge_p2, a.k, md,
                      mi, w);
  stamp(kTraceMerged);
  stamp(kTraceEnd);
}

template <typename T, uint32_t kTeam>
__global__ void __launch_bounds__(kMultiCtaMaxBlock, 4) multi_cta_search(const multi_cta_args a) {
  const uint32_t q_bytes = a.dim * static_cast<uint32_t>(sizeof(typename query_elem<T>::type));
  multi_cta_body<T, kTeam>(a, a.d_queries + (a.query_offset + blockIdx.y) * q_bytes);
}

/** One query whose bytes came with the launch (no PCIe read of mapped memory at batch 1). */
template <typename T, uint32_t kTeam>
__global__ void __launch_bounds__(kMultiCtaMaxBlock, 4)
    multi_cta_search_inline(const multi_cta_args a, const __grid_constant__ inline_query query) {
  multi_cta_body<T, kTeam>(a, query.bytes);
}

/** Persistent mode (search_params::persistent, batch 1): the kernel stays resident and takes one
 *  query after another from mapped host memory, so a query costs no launch and no synchronize,
 *  and runs on SMs whose instruction caches already hold the kernel (a fresh launch of this
 *  kernel on a 1M-row set spends microseconds refetching code that the data evicted from L2).
 *
 *  The host posts job `seq` by writing the query and its seed state (query_seed_state) as LL
 *  words (4 data bytes | seq << 32, as in NCCL's low-latency protocol: each 8-byte word arrives
 *  whole, so a word with the new seq holds new data and no flag or fence is needed). CTA 0 alone
 *  polls the host (every CTA polling made PCIe the bottleneck: 70 us a query at 16 CTAs, 400 us
 *  at 64), all the job's words at once, one word a thread, so a poll that sees the job has it
 *  whole (one PCIe round trip); it copies the words, still LL, to device memory, where the other
 *  CTAs poll them the same way in L2. Job seq uses hash half seq & 1 (and empties the other)
 *  and writes its lists tagged with seq (the host merges them). The host posts a job only after
 *  it has all the last one's lists, so no CTA ever runs ahead into a job whose state the
 *  previous one still uses.
 *
 *  Exit: the host raises *h_stop (then synchronizes the stream), or CTA 0 finds no job for
 *  lifetime_ns; either way it publishes "leave" and every CTA returns. A job posted as the
 *  kernel leaves finds no kernel: the host sees the stream finish without results and launches
 *  again, starting at that job. */
struct persistent_args {
  const uint64_t* h_words;     // [n_words] the job as LL words: the query, then the state (lo, hi)
  const uint32_t* h_stop;      // raised by the host: leave
  uint32_t* d_hash;            // 2 halves of 2^hash_bits slots
  unsigned long long* d_leave; // set by CTA 0: leave
  uint64_t* d_words;           // [n_words] the job's words, copied by CTA 0 (LL words too)
  uint32_t n_words;            // query words + 2
  uint32_t first_seq;
  uint64_t lifetime_ns;
};

/** The whole CTA, one poll of job seq's n words (LL words | seq << 32) at `words` (host or
 *  device memory, read uncached): each thread reads its words, all in flight together, and
 *  stores their data in raw[] (the query) and state[] (the last two). True when every word
 *  carries seq (then raw and state hold the job). */
__device__ __forceinline__ bool poll_job(const uint64_t* words, uint32_t n, uint32_t seq, uint32_t* raw,
                                         uint32_t* state) {
  bool ok = true;
  for (uint32_t w = threadIdx.x; w < n; w += blockDim.x) {
    const uint64_t v = reinterpret_cast<const volatile uint64_t*>(words)[w];
    ok &= uint32_t(v >> 32) == seq;
    if (w < n - 2)
      raw[w] = uint32_t(v);
    else
      state[w - (n - 2)] = uint32_t(v);
  }
  return __syncthreads_and(ok);
}

template <typename T, uint32_t kTeam>
__global__ void __launch_bounds__(kMultiCtaMaxBlock, 4)
    multi_cta_persistent(const multi_cta_args a, const persistent_args p) {
  extern __shared__ __align__(16) uint8_t smem[];
  uint32_t* raw = reinterpret_cast<uint32_t*>(smem + a.smem_raw);
  __shared__ uint32_t s_state[2];
  const uint32_t tid = threadIdx.x;
  const size_t half = size_t{1} << a.hash_bits;
  uint64_t idle_since = global_ns();
  for (uint32_t seq = p.first_seq;; seq = seq + 1 == 0 ? 1 : seq + 1) {
    for (;;) {  // wait for job seq
      bool leave = false;
      if (blockIdx.x == 0) {
        // The stop flag's read flies with the words' reads.
        const uint32_t stop = tid == 0 ? *reinterpret_cast<const volatile uint32_t*>(p.h_stop) : 0u;
        // Relay the words only once they all carry seq (a partial copy would be harmless, as the
        // other CTAs check every word, but costs device writes on every poll).
        if (poll_job(p.h_words, p.n_words, seq, raw, s_state)) {
          for (uint32_t w = tid; w < p.n_words; w += blockDim.x)
            p.d_words[w] = (w < p.n_words - 2 ? raw[w] : s_state[w - (p.n_words - 2)]) | uint64_t{seq} << 32;
          break;
        }
        leave = tid == 0 && (stop != 0 || global_ns() - idle_since > p.lifetime_ns);
        if (leave) atomicExch(p.d_leave, 1ull);
      } else {
        if (poll_job(p.d_words, p.n_words, seq, raw, s_state)) break;
        leave = tid == 0 && *reinterpret_cast<volatile unsigned long long*>(p.d_leave) != 0;
      }
      if (__syncthreads_or(leave)) return;
    }
    multi_cta_args job = a;
    job.d_hash = p.d_hash + (seq & 1) * half;
    job.d_clear = reinterpret_cast<uint4*>(p.d_hash + ((seq + 1) & 1) * half);
    job.clear_vec4 = half / 4;
    job.tag = seq;
    job.query_state = s_state[0] | uint64_t{s_state[1]} << 32;
    job.has_query_state = 1;
    multi_cta_body<T, kTeam>(job, nullptr);
    __syncthreads();
    idle_since = global_ns();
  }
}

}  // namespace dev

/** Launches `kernel` with `smem` bytes of dynamic shared memory (opting in above 48 KB). */
template <typename... P, typename... A>
void launch_with_smem(void (*kernel)(P...), dim3 grid, uint32_t block, size_t smem, cudaStream_t stream,
                      const A&... args) {
  if (smem > 48 * 1024)
    CAGRA_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kernel<<<grid, block, smem, stream>>>(args...);
  CAGRA_CUDA_CHECK_LAUNCH();
}

/** Calls f(std::integral_constant<uint32_t, team>{}) for a supported team size. */
template <typename F>
void with_team(uint32_t team, F&& f) {
  switch (team) {
    case 2: return f(std::integral_constant<uint32_t, 2>{});
    case 4: return f(std::integral_constant<uint32_t, 4>{});
    case 8: return f(std::integral_constant<uint32_t, 8>{});
    case 16: return f(std::integral_constant<uint32_t, 16>{});
    case 32: return f(std::integral_constant<uint32_t, 32>{});
    default: CAGRA_FAIL("team size %u is not one of 2, 4, 8, 16, 32", team);
  }
}

template <typename T>
void launch_multi_cta_persistent(const multi_cta_args& args, const persistent_launch& pl, uint32_t team,
                                 uint32_t block, size_t smem, cudaStream_t stream) {
  const dev::persistent_args p{pl.h_words, pl.h_stop,  pl.d_hash,    pl.d_leave,
                               pl.d_words, pl.n_words, pl.first_seq, pl.lifetime_ns};
  with_team(team, [&](auto t) {
    launch_with_smem(dev::multi_cta_persistent<T, decltype(t)::value>, dim3(args.n_ctas, 1), block, smem, stream,
                     args, p);
  });
}

template <typename T>
void launch_multi_cta(const multi_cta_args& args, uint32_t team, uint32_t n_queries, uint32_t block, size_t smem,
                      cudaStream_t stream, const inline_query* query) {
  const dim3 grid(args.n_ctas, n_queries);
  with_team(team, [&](auto t) {
    constexpr uint32_t kTeam = decltype(t)::value;
    if (query)
      launch_with_smem(dev::multi_cta_search_inline<T, kTeam>, grid, block, smem, stream, args, *query);
    else
      launch_with_smem(dev::multi_cta_search<T, kTeam>, grid, block, smem, stream, args);
  });
}

}  // namespace cagra::cuda
