// Host-side view of the multi-CTA search (paper §IV-C2): the argument block of the search kernel,
// its launcher (explicitly instantiated once per storage type in src/cuda/search/inst_mcta_*.cu)
// and the layout of the per-query device workspace. See multi_cta.cuh for the kernel and why it
// is built so.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include <cagra/types.hpp>

#include "core/plan.hpp"

namespace cagra::cuda {

using core::gpu::kMultiCtaList;
using core::gpu::kMultiCtaMaxBlock;
using core::gpu::kMultiCtaMaxItopk;

/** Kernel phase timestamps: a build with -DCAGRA_MCTA_TRACE=1 (CMake option CAGRA_TRACE_KERNELS,
 *  for the latency tools in bench/) stamps them; a normal build compiles them out. */
#ifndef CAGRA_MCTA_TRACE
#define CAGRA_MCTA_TRACE 0
#endif

/** Timestamps (globaltimer ns) per CTA in a trace (multi_cta_args::d_trace), 0 where not taken. */
enum multi_cta_trace_slot : uint32_t {
  kTraceStart = 0,
  kTraceQueryCopied,      // the query's bytes in shared memory
  kTraceQueryReady,       // converted, seeds drawn
  kTraceInitDone,         // the initial nodes' distances
  kTracePicked0,          // iteration 0: list merged, parent picked
  kTraceClaimed0,         // iteration 0: the parent's neighbors inserted, the list merged
  kTraceIteration0,       // end of iteration i at kTraceIteration0 + i
  kTracePublished = 19,   // the CTA's list written
  kTraceCounted,          // the merging CTA: found itself last
  kTraceMerged,           // the merging CTA: results written
  kTraceEnd,              // the merging CTA: done
  kTracePollIssued,       // the persistent kernel: the start of the poll that found the job
  kTraceCleared,          // the CTA's slice of the other hash half emptied (stores issued)
  kTraceInitIssued,       // the first initial nodes' claims and loads issued
  kTracePoolScanned,      // with a pool: every row of the slice scanned, the groups' nearest known
  kTraceSm,               // not a time: the SM the CTA runs on
  kTraceScanClocks,       // not a time: the pool scan's SM clock cycles (clock64)
  kTracePickClocks,       // not a time: warp 0's pick_parent at iteration 0, SM clock cycles
  kTraceLastMergeClocks,  // not a time: warp 0's last merge, SM clock cycles
  kTraceLastMerged,       // warp 0's last merge done (before the barrier after it)
  kTraceLastCandidates,   // not a time: the last merge's candidates | (those of the first 32
                          // nearer than entry list_k - 1) << 32
  kTracePickClocks1,      // not a time: warp 0's pick_parent at iteration 1, SM clock cycles
  kTraceMergeClocks0,     // not a time: warp 0's merge_list at iteration 0, SM clock cycles
  kTraceMergeClocks1,     // not a time: the same at iteration 1
  kTraceDistClocks0,      // not a time: thread 0, the claims' barrier to the distances' at
                          // iteration 0, SM clock cycles
  kTraceDistClocks1,      // not a time: the same at iteration 1
  kTraceHeadClocks,       // not a time: thread 0, the body's start to the initial nodes issued
  kMultiCtaTraceSlots = 40
};
constexpr uint32_t kTraceIterations = kTracePublished - kTraceIteration0;

/** Largest query (bytes of the query type) passed inside the launch's parameters at batch 1:
 *  the kernel then reads it from the constant bank instead of over PCIe from mapped memory. */
constexpr uint32_t kInlineQueryMax = 2048;
struct inline_query {
  alignas(16) uint8_t bytes[kInlineQueryMax];
};

/** Everything one launch needs, passed by value (POD). Shapes in the comments; "chunk" is the
 *  launch's queries (grid.y), n_ctas is grid.x. */
// One aligned table (clang-format would realign it in pieces, around the #if): not formatted.
// clang-format off
struct multi_cta_args {
  const uint8_t* d_dataset;   // [n_rows, row_stride] bytes: storage-type rows, zero padded to 16 B
  const uint32_t* d_graph;    // [n_rows, degree]
  const uint8_t* d_queries;   // [n_queries, dim] query-type elements (float for f32/f16, else T)
  uint32_t* d_hash;           // [chunk, 1 << hash_bits]: per query the visited set (node ids)
  uint32_t* d_part_ids;       // [chunk, n_ctas, 32] each CTA's list (ids without flags)
  float* d_part_dists;        // [chunk, n_ctas, 32]
  uint32_t* d_done;           // [chunk] CTAs finished per query: 0 at launch, the last resets it
  uint32_t* d_ids;            // [n_queries, k] results (+ query_offset * k); device or mapped host
  float* d_distances;         // [n_queries, k] or null
  const uint32_t* d_filter;   // null, or the allowed rows' bitsets (filter.cuh): query q's at
                              // d_filter + q * filter_stride
  uint64_t filter_stride;     // words per bitset, or 0: one bitset for the batch
  const uint8_t* d_pool_vectors;  // null, or the initial-node pool's rows [n_ctas x
                                  // pool_rows_per_cta, row_stride] (core/initial_pool.hpp) ...
  const uint32_t* d_pool_ids;     // ... and their ids: CTA c's slice from row c x pool_rows_per_cta
  uint64_t* h_lists;          // null (the last CTA merges into d_ids), or mapped host
                              // [n_queries, n_ctas, list_k] entries of two words, id | tag << 32
                              // and distance bits | tag << 32: each CTA's best list_k, merged by
                              // the host (no inter-CTA handshake, no stream synchronize)
#if CAGRA_MCTA_TRACE
  uint64_t* d_trace;          // null, or [n_ctas, kMultiCtaTraceSlots] globaltimer stamps of query 0
#endif
  uint4* d_clear;             // words of the other hash half to empty during this launch ...
  uint64_t clear_vec4;        // ... as this many 16-byte stores, spread over all CTAs
  uint64_t n_rows;            // N
  uint64_t seed;              // search_params::seed (mixed with each query's bytes)
  uint64_t query_state;       // with has_query_state: the seed state of the (single) query,
                              // bits::query_seed_state(seed, its bytes), computed by the host
  uint64_t query_offset;      // first query of this launch (row of d_queries)
  uint32_t dim;               // elements per row
  uint32_t row_stride;        // bytes between rows in d_dataset (multiple of 16)
  uint32_t n_chunks;          // 16-byte chunks per row = row_stride / 16
  uint32_t degree;            // d
  uint32_t n_ctas;            // CTAs per query (= grid.x)
  uint32_t n_init;            // random initial nodes per CTA
  uint32_t cand_cap;          // max(d, n_init): capacity of the candidate list
  uint32_t max_iterations, min_iterations;
  uint32_t hash_bits;         // log2(slots) of the per-query device hash
  uint32_t k;                 // results per query
  uint32_t merge_p2;          // n_ctas * 32 rounded up to a power of two (the merge's sort)
  cagra::metric metric;
  uint32_t list_k;            // entries per CTA in h_lists: min(k, 32)
  uint32_t tag;               // the call's tag in h_lists (never 0)
  uint32_t has_query_state;   // 1: query_state holds the seed state (batch 1 from the host)
  uint32_t query_ready;       // 1: the raw query (smem_raw) is already in its distance layout
                              // and query_norm is |q|^2 (the persistent kernel, byte rows of
                              // whole 16-byte chunks: the host sends both), nothing to convert
  int32_t query_norm;         // with query_ready: |q|^2
  uint32_t init_half_team;    // 1: an initial node's distance takes half a team (its row fits
                              // the half team's head loads), so twice the nodes load at once
  uint32_t pool_rows_per_cta; // 0: random initial nodes (n_init); else the nearest row of each
                              // of 32 groups of the CTA's slice of the pool (pool_scan), which
                              // the persistent kernel (the only one given a pool) holds in smem
  // Dynamic shared memory layout: byte offsets from its start.
  uint32_t smem_query;        // the query in its distance layout (as in the single-CTA kernel)
  uint32_t smem_raw;          // the query's raw bytes (hashed for the seed, then converted)
  uint32_t smem_cand_d;       // float [2][cand_cap] (two buffers: one merged while the next fills)
  uint32_t smem_cand_i;       // uint32 [2][cand_cap]
  uint32_t smem_merge;        // float [merge_p2] then uint32 [merge_p2] (after the search: aliases)
  uint32_t smem_pool;         // the CTA's slice of the pool: rows [pool_rows_per_cta, row_stride]
                              // then their ids and squared norms (pool_norms), after the
                              // candidates (over smem_merge's region:
                              // the latency path, where the host merges, never uses that one)
};
// clang-format on

/** A persistent batch-1 search kernel (persistent.cuh says how it works): where its jobs come
 *  from and its own state, which the kernel leaves as it found it (persistent.cu zeroes it when
 *  it is allocated, after an error and before the call tags come round again). */
struct persistent_launch {
  const uint64_t* h_words = nullptr;      // mapped [n_words]: the query, then its seed state (two
                                          // words, low half first) and |q|^2, as words
                                          // data | seq << 32
  const uint32_t* h_stop = nullptr;       // mapped flag: the kernel leaves when it is non-zero
  uint32_t* d_hash = nullptr;             // [3 << hash_bits], all kEmptySlot at launch and exit
  unsigned long long* d_leave = nullptr;  // [2]: the leave word (first_seq of the launch that
                                          // left), then the idle exit count (0 at launch)
  uint64_t* d_words = nullptr;            // [n_words]: the relayed job, seqs of earlier launches
  uint32_t n_words = 0;                   // 4-byte words of the query + 3 (state, norm)
  uint32_t first_seq = 1;                 // the first job's seq, the launch's generation (not 0)
  uint64_t lifetime_ns = 0;               // the kernel leaves after this long without a job
};

/** Launches the persistent kernel (one query per job, args.n_ctas CTAs; args.h_lists takes
 *  the lists of every job, tagged with its seq). Checks the launch. */
template <typename T>
void launch_multi_cta_persistent(const multi_cta_args& args, const persistent_launch& pl,
                                 uint32_t team, uint32_t block, size_t smem_bytes,
                                 cudaStream_t stream);

/** How many CTAs of the persistent kernel (storage type T, `team` lanes per distance, `block`
 *  threads, `smem_bytes` of dynamic shared memory) one SM holds, with the kernel's shared-memory
 *  carveout set to its maximum (here, once for the launches that follow): a pool slice of up to
 *  108 KiB leaves room for two (core/initial_pool.hpp). */
template <typename T>
uint32_t multi_cta_persistent_ctas_per_sm(uint32_t team, uint32_t block, size_t smem_bytes);

/** Launches the search kernel for storage type T (float, __half, uint8_t, int8_t) with `team`
 *  lanes per distance: grid (args.n_ctas, n_queries), `block` threads; the last CTA of each
 *  query merges the lists into its top k. Checks the launch. `query` (n_queries = 1 only): the
 *  query's bytes passed in the launch instead of read from args.d_queries. */
template <typename T>
void launch_multi_cta(const multi_cta_args& args, uint32_t team, uint32_t n_queries, uint32_t block,
                      size_t smem_bytes, cudaStream_t stream, const inline_query* query = nullptr);

}  // namespace cagra::cuda
