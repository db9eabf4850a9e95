// Host-side view of the single-CTA search kernel: its argument block and the launcher, which
// is explicitly instantiated once per storage type in src/cuda/search/inst_*.cu (one TU per
// dtype, so the four compile in parallel; see single_cta.cuh for the kernel itself).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include <cagra/types.hpp>

#include "core/plan.hpp"

namespace cagra::cuda {

using core::gpu::kSingleCtaMaxItopk;
using core::gpu::kWarpMergeMax;
/** Threads per CTA at most (the __launch_bounds__ of the kernel). */
constexpr uint32_t kMaxBlock = core::gpu::kSingleCtaMaxBlock;
/** CTAs of kMaxBlock threads per SM promised to the compiler: 8 fills an SM (2048 threads) and
 *  caps registers at 32 per thread. */
constexpr uint32_t kMinBlocksPerSm = 8;

/** Kernel phase clocks: a build with -DCAGRA_MCTA_TRACE=1 (CMake option CAGRA_TRACE_KERNELS,
 *  for the latency tools in bench/) takes them; a normal build compiles them out. */
#ifndef CAGRA_MCTA_TRACE
#define CAGRA_MCTA_TRACE 0
#endif

/** Per query of a traced single-CTA search (single_cta_args::d_trace): SM clock cycles spent
 *  in each phase, summed over the iterations (thread 0's clock at the CTA's barriers), the
 *  iterations run, and the global timer (ns) at the kernel's start and end for that query. */
enum single_cta_trace_slot : uint32_t {
  kScTraceSetup = 0,   // the query in, its seed, the list and the hash emptied, initial draws
  kScTraceInitDist,    // iteration 0: the initial nodes' distances
  kScTraceDistances,   // later iterations: the candidates' distances
  kScTraceInitMerge,   // iteration 0: the initial nodes merged into the empty list, parents
  kScTraceMerge,       // later iterations: top-M update and the parents picked
  kScTraceReset,       // the forgettable hash emptied and refilled
  kScTraceExpand,      // the parents' neighbors through the hash into the candidate list
  kScTraceWrite,       // the results written
  kScTraceIterations,  // iterations run (the merges)
  kScTraceStartNs,     // %globaltimer at the start ...
  kScTraceEndNs,       // ... and at the end
  kSingleCtaTraceSlots
};

/** Everything one launch needs, passed by value (POD). Shapes in the comments. */
struct single_cta_args {
  const uint8_t* d_dataset;  // [n_rows, row_stride] bytes: storage-type rows, zero padded to 16 B
  const uint32_t* d_graph;   // [n_rows, degree]
  const uint8_t* d_queries;  // [n_queries, dim] query-type elements (float for f32/f16, else T)
  uint32_t* d_ids;           // [n_queries, k]
  float* d_distances;        // [n_queries, k], or null
  const uint32_t* d_filter;  // null, or the allowed rows' bitsets (filter.cuh): query q's at
                             // d_filter + q * filter_stride
  uint64_t filter_stride;    // words per bitset, or 0: one bitset for the batch
  uint64_t n_rows;           // N
  uint64_t seed;             // search_params::seed (mixed with each query's bytes)
  uint64_t query_offset;     // first query of this launch (the grid is chunked by 65535)
  uint32_t dim;              // elements per row
  uint32_t row_stride;       // bytes between rows in d_dataset (multiple of 16)
  uint32_t n_chunks;         // 16-byte chunks per row = row_stride / 16
  uint32_t degree;           // d
  uint32_t k;                // results per query (<= itopk)
  uint32_t itopk, itopk_p2;  // M and the next power of two
  uint32_t width;            // p: parents per iteration (<= 64)
  uint32_t n_cand, cand_p2;  // p * d candidates per iteration, next power of two
  uint32_t n_init, init_p2;  // p * d * samplings random initial nodes, next power of two
  uint32_t max_iterations, min_iterations;
  uint32_t reset_interval;  // forgettable hash: clear every this many iterations (0 = only when
                            // half full)
  uint32_t hash_bits;       // log2(slots) of the shared-memory visited hash
  cagra::metric metric;
  // Dynamic shared memory layout: byte offsets from its start.
  uint32_t smem_query;  // float [n_chunks * 16 / sizeof(T)], transposed by chunk
  uint32_t smem_dist;   // float [itopk_p2 + max(cand_p2, init_p2)]: top-M, then candidates
  uint32_t smem_ids;    // uint32 [itopk_p2 + max(cand_p2, init_p2)]
  uint32_t smem_hash;   // uint32 [2^hash_bits] (first holds the raw query bytes)
#if CAGRA_MCTA_TRACE
  uint64_t* d_trace;  // null, or [n_queries, kSingleCtaTraceSlots] (single_cta_trace_slot)
#endif
};

/** Launches the kernel for storage type T (float, __half, uint8_t, int8_t) with `team` lanes
 *  per distance on `grid` queries starting at args.query_offset. Checks the launch. */
template <typename T>
void launch_single_cta(const single_cta_args& args, uint32_t team, uint32_t grid, uint32_t block,
                       size_t smem_bytes, cudaStream_t stream);

}  // namespace cagra::cuda
