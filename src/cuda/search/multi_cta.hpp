// Host-side view of the multi-CTA search (paper §IV-C2): the argument block of the search kernel,
// its launcher (explicitly instantiated once per storage type in src/cuda/search/inst_mcta_*.cu)
// and the layout of the per-query device workspace. See multi_cta.cuh for the kernel and why it
// is built so.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cagra::cuda {

/** Entries of each CTA's own top list (one per lane of warp 0). */
constexpr uint32_t kMultiCtaList = 32;
/** Largest itopk of the multi-CTA search: ceil(itopk / 32) CTAs per query, whose 32-entry lists
 *  (<= 4096 entries) are sorted by one CTA of the merge kernel in 32 KB of shared memory. */
constexpr uint32_t kMultiCtaMaxItopk = 4096;
/** Fewest iterations per CTA of the automatic iteration budget (search.cu). */
constexpr uint32_t kMultiCtaMinIterations = 4;
/** Threads per CTA at most (the __launch_bounds__ of the search kernel). */
constexpr uint32_t kMultiCtaMaxBlock = 256;
/** Slots probed at most by one insertion into the per-query device hash; a node that finds no
 *  free slot in this many is skipped (the table is sized to stay under half full, so this only
 *  bounds the loop of a table too small, e.g. an explicit tiny hash_bits). */
constexpr uint32_t kMultiCtaMaxProbe = 128;

/** Timestamps (globaltimer ns) per CTA in a trace (multi_cta_debug::trace), 0 where not taken. */
enum multi_cta_trace_slot : uint32_t {
  kTraceStart = 0,
  kTraceQueryCopied,    // the query's bytes in shared memory
  kTraceQueryReady,     // converted, seeds drawn
  kTraceInitClaimed,    // unused (the initial nodes are claimed while their rows load)
  kTraceInitDone,       // their distances
  kTracePicked0,        // iteration 0: list merged, parent picked
  kTraceClaimed0,       // iteration 0: the parent's neighbors inserted, the list merged
  kTraceIteration0,     // end of iteration i at kTraceIteration0 + i
  kTracePublished = 19,  // the CTA's list written
  kTraceCounted,        // the merging CTA: found itself last
  kTraceMerged,         // the merging CTA: results written
  kTraceEnd,            // the merging CTA: done
  kMultiCtaTraceSlots = 24
};
constexpr uint32_t kTraceIterations = kTracePublished - kTraceIteration0;

/** The seed state of a query's random initial nodes: splitmix64 of the search seed and a hash
 *  of the query's n bytes (8-byte words mixed with their index, summed; the tail bytes alike).
 *  The kernel computes it with one warp (query_hash_warp) unless the host passes it
 *  (multi_cta_args::query_state), so a query draws the same nodes at any batch size. */
inline uint64_t query_seed_mix(uint64_t x) {  // = the kernel's mix64 (splitmix64)
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline uint64_t query_seed_state(uint64_t seed, const uint8_t* p, uint32_t n) {
  uint64_t h = 0;
  for (uint32_t w = 0; w < n / 8; ++w) {
    uint64_t v = 0;
    for (uint32_t b = 0; b < 8; ++b) v |= uint64_t{p[8 * w + b]} << (8 * b);
    h += query_seed_mix(v ^ (uint64_t{w} * 0xD6E8FEB86659FD93ull));
  }
  for (uint32_t i = n & ~7u; i < n; ++i) h += query_seed_mix(uint64_t{p[i]} ^ (uint64_t{i} << 40));
  return query_seed_mix(seed ^ query_seed_mix(h ^ n));
}

/** Largest query (bytes of the query type) passed inside the launch's parameters at batch 1:
 *  the kernel then reads it from the constant bank instead of over PCIe from mapped memory. */
constexpr uint32_t kInlineQueryMax = 2048;
struct inline_query {
  alignas(16) uint8_t bytes[kInlineQueryMax];
};

/** Everything one launch needs, passed by value (POD). Shapes in the comments; "chunk" is the
 *  launch's queries (grid.y), n_ctas is grid.x. */
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
  uint64_t* h_lists;          // null (the last CTA merges into d_ids), or mapped host
                              // [n_queries, n_ctas, list_k] entries of two words, id | tag << 32
                              // and distance bits | tag << 32: each CTA's best list_k, merged by
                              // the host (no inter-CTA handshake, no stream synchronize)
  uint64_t* d_trace;          // null, or [n_ctas, kMultiCtaTraceSlots] globaltimer stamps of query 0
  uint4* d_clear;             // words of the other hash half to empty during this launch ...
  uint64_t clear_vec4;        // ... as this many 16-byte stores, spread over all CTAs
  uint64_t n_rows;            // N
  uint64_t seed;              // search_params::seed (mixed with each query's bytes)
  uint64_t query_state;       // with has_query_state: the seed state of the (single) query,
                              // query_seed_state(seed, its bytes), computed by the host
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
  uint32_t metric;            // cagra::metric
  uint32_t list_k;            // entries per CTA in h_lists: min(k, 32)
  uint32_t tag;               // the call's tag in h_lists (never 0)
  uint32_t has_query_state;   // 1: query_state holds the seed state (batch 1 from the host)
  // Dynamic shared memory layout: byte offsets from its start.
  uint32_t smem_query;        // the query in its distance layout (as in the single-CTA kernel)
  uint32_t smem_raw;          // the query's raw bytes (hashed for the seed, then converted)
  uint32_t smem_cand_d;       // float [2][cand_cap] (two buffers: one merged while the next fills)
  uint32_t smem_cand_i;       // uint32 [2][cand_cap]
  uint32_t smem_merge;        // float [merge_p2] then uint32 [merge_p2] (after the search: aliases)
};

/** Measurement hooks, for tests and benchmarks only (not thread-safe; the defaults are the
 *  production behaviour). trace: device memory of n_ctas x kMultiCtaTraceSlots words that the
 *  next launches stamp for their first query. host_flag: small host batches poll the CTAs'
 *  tagged lists in mapped memory and merge them on the host (true) instead of the last CTA
 *  merging and the host synchronizing the stream (false). inline_query: a batch-1
 *  host query travels in the launch's parameters. The environment variables
 *  CAGRA_MCTA_HOST_FLAG and CAGRA_MCTA_INLINE_QUERY (0/1) set them at the first use. */
struct multi_cta_debug {
  uint64_t* trace = nullptr;
  bool host_flag = true;
  bool inline_query = true;
};
multi_cta_debug& multi_cta_debug_hooks();

/** A persistent batch-1 search kernel (multi_cta.cuh says how it works): where its jobs come
 *  from and its own state. */
struct persistent_launch {
  const uint64_t* h_words = nullptr;  // mapped [n_words]: the query, then its seed state (two
                                      // words, low half first), as words data | seq << 32
  const uint32_t* h_stop = nullptr;   // mapped flag: the kernel leaves when it is non-zero
  uint32_t* d_hash = nullptr;         // [2 << hash_bits], all kEmptySlot at launch
  unsigned long long* d_leave = nullptr;  // [1], 0 at launch
  uint64_t* d_words = nullptr;        // [n_words], 0 at launch
  uint32_t n_words = 0;               // 4-byte words of the query + 2
  uint32_t first_seq = 1;             // the first job's seq (never 0)
  uint64_t lifetime_ns = 0;           // the kernel leaves after this long without a job
};

/** Launches the persistent kernel (one query per job, args.n_ctas CTAs; args.h_lists takes
 *  the lists of every job, tagged with its seq). Checks the launch. */
template <typename T>
void launch_multi_cta_persistent(const multi_cta_args& args, const persistent_launch& pl, uint32_t team,
                                 uint32_t block, size_t smem_bytes, cudaStream_t stream);

/** Launches the search kernel for storage type T (float, __half, uint8_t, int8_t) with `team`
 *  lanes per distance: grid (args.n_ctas, n_queries), `block` threads; the last CTA of each
 *  query merges the lists into its top k. Checks the launch. `query` (n_queries = 1 only): the
 *  query's bytes passed in the launch instead of read from args.d_queries. */
template <typename T>
void launch_multi_cta(const multi_cta_args& args, uint32_t team, uint32_t n_queries, uint32_t block,
                      size_t smem_bytes, cudaStream_t stream, const inline_query* query = nullptr);

}  // namespace cagra::cuda
