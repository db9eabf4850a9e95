// Device memory of the GPU build, modelled buffer by buffer (CUDA-free: the plan and the check in
// core read it; the CUDA stages read the same functions for their own free-memory checks and the
// shapes below, so the model and the allocations cannot drift apart silently).
//
// Each stage lists the device buffers live at its peak, named after the buffer in the CUDA code
// (src/cuda/graph/nn_descent.cu: run_state; src/cuda/brute_force/context.hpp: context;
// src/cuda/graph/optimize.cu + reverse_merge.cu). The build runs the kNN stage, frees it, then
// runs optimize; nothing else stays on the device between the stages, so the build's peak is
// the larger of the two. Not counted: the CUDA context (about 0.5 GiB on an H100, already gone
// from the free memory the check compares with) and kernels' local memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cagra/params.hpp>
#include <cagra/plan.hpp>
#include <cagra/types.hpp>

#include "core/bits.hpp"

namespace cagra::core {

/** Shapes of the GPU build's buffers, shared with the CUDA code that allocates them. */
namespace gpu {
/** GPU NN-descent: largest k (d_init). */
constexpr uint32_t kNnDescentMaxK = 512;
/** GPU NN-descent: most sampled entries per list and iteration (new and old each). */
constexpr uint32_t kNnDescentMaxSample = 32;
/** GPU NN-descent: proposal slots per node, a power of two >= max(2k, 128). */
inline uint32_t nn_descent_proposal_capacity(uint32_t k) {
  return bits::next_pow2(2 * k > 128 ? 2 * k : 128);
}
/** GPU NN-descent: entries sampled per list and iteration, round(sample_rate * k) in
 *  [1, kNnDescentMaxSample] (the same float arithmetic as nn_descent.cu). */
inline uint32_t nn_descent_sample_size(uint32_t k, float sample_rate) {
  const uint32_t s = uint32_t(sample_rate * float(k) + 0.5f);
  return s < 1 ? 1 : s > kNnDescentMaxSample ? kNnDescentMaxSample : s;
}
/** GPU brute force: largest k. */
constexpr uint32_t kBruteForceMaxK = 2048;
/** GPU brute force: queries per tile. */
constexpr int64_t kBruteForceQueryTile = 16384;
/** GPU brute force: the f32 [query tile x data tile] dot-product tile stays under this. */
constexpr uint64_t kBruteForceTileBytes = uint64_t{1} << 30;
/** GPU brute force: fewest data rows per tile. */
constexpr int64_t kBruteForceMinDataTile = 1024;
/** cuBLAS's own workspace (its default on Hopper: 32 MiB; 4 MiB on older GPUs), allocated by
 *  cuBLAS for the brute force's SGEMMs. */
constexpr uint64_t kCublasWorkspaceBytes = uint64_t{32} << 20;
/** cudaMalloc hands out memory in pages of this size: each buffer is counted rounded up. */
constexpr uint64_t kAllocationGranularity = uint64_t{2} << 20;
/** Upper bound of CUB's onesweep radix-sort scratch (bins + lookback + counters) for `items`
 *  key-value pairs sorted through a DoubleBuffer (no extra key/value copies): its tiles hold at
 *  least 4096 items and its digits are 8 bits wide. The CUDA optimize asks CUB itself. */
uint64_t radix_sort_scratch_bound(int64_t items);
}  // namespace gpu

/** One device buffer: its name in the CUDA code and the bytes it asks cudaMalloc for. */
struct device_buffer_bytes {
  std::string name;
  uint64_t bytes = 0;
};

/** The buffers a stage holds at its peak. */
struct stage_memory {
  std::string stage;  ///< "nn_descent", "brute_force" or "optimize"
  std::vector<device_buffer_bytes> buffers;
  /** Bytes asked for, summed. */
  uint64_t requested() const;
  /** The peak: each buffer rounded up to gpu::kAllocationGranularity. */
  uint64_t total() const;
};

/** cuda::nn_descent on `rows` x `dim` vectors of `t` with degree k (run_state). */
stage_memory nn_descent_memory(int64_t rows, int64_t dim, dtype t, uint32_t k, float sample_rate);
/** cuda::brute_force of `queries` against `rows` rows of `t` (dim columns), k neighbours
 *  (context: the rows and queries widened to f32, one staging copy for non-f32 input, norms for
 *  l2, one dot-product tile, the running top-k state and the tile's results). */
stage_memory brute_force_memory(int64_t rows, int64_t queries, int64_t dim, dtype t, uint32_t k,
                                metric m);
/** cuda::optimize of a `rows` x `knn_degree` kNN graph to `degree`: the pruned graph plus the
 *  larger of the reorder phase (the kNN ids, and its distances when `with_distances`: the
 *  distance reorder) and, with `reverse`, the reverse-edge phase (double-buffered sort
 *  keys/values, segment bounds, `sort_scratch` bytes of CUB scratch). */
stage_memory optimize_memory(int64_t rows, uint32_t knn_degree, uint32_t degree,
                             bool with_distances, bool reverse, uint64_t sort_scratch);

/** The GPU build's stages for `plan` (resolved) on `rows` x `dim` vectors. */
struct build_memory {
  stage_memory knn, optimize;
  uint64_t peak() const;
  /** The stage that sets the peak. */
  const stage_memory& peak_stage() const;
};
build_memory gpu_build_memory(const build_plan& plan, const index_params& params, int64_t rows,
                              int64_t dim);

/** Fits a GPU build `plan` (intermediate degree, kNN algorithm and storage resolved) into
 *  `budget` bytes of device memory: the whole set's kNN stage, or the largest partition
 *  (plan.partition_rows) whose kNN stage fits, at least core::min_partition_rows; the graph
 *  optimization on the device, with its reverse edges and merge on the host, or on the host
 *  (plan.optimize); plan.device_bytes the resulting peak. A user's knn.partition_rows is kept.
 *  When no partition fits, plan.partition_rows stays 0 and device_bytes is the whole set's
 *  peak (check_build_memory then refuses the build). */
void fit_build(build_plan& plan, const index_params& params, int64_t rows, int64_t dim,
               uint64_t budget);

/** build_plan::host_bytes of a GPU build `plan` (fitted: partition_rows and optimize set) of
 *  `rows` x `dim` rows, on `threads` host threads (the host optimize keeps a rank table of
 *  `rows` entries per thread). */
uint64_t host_build_bytes(const build_plan& plan, const index_params& params, int64_t rows,
                          int64_t dim, int threads);

/** MemAvailable of /proc/meminfo in bytes (memory a process can take without swapping), or 0
 *  when it cannot be read. */
uint64_t available_host_memory();

/** "58.4 GiB" (binary units, one decimal; bytes below 1 KiB). */
std::string format_bytes(uint64_t bytes);

/** Before any work of a build on the GPU (plan.target == cuda): throws cagra::error when
 *  plan.host_bytes, less `host_in_hand` (bytes of it already allocated: the caller's rows that
 *  the build takes over as its stored vectors), exceeds the available host memory, or when
 *  plan.device_bytes exceeds min(params.max_device_memory, the free memory of res.device),
 *  saying what the build needs (by stage), what it may use and what lowers the need (with the
 *  fewest shards of `all_rows` rows that would fit; 0: `rows`, the build is not a shard). */
void check_build_memory(const resources& res, const index_params& params, const build_plan& plan,
                        int64_t rows, int64_t dim, int64_t all_rows = 0, uint64_t host_in_hand = 0);

}  // namespace cagra::core
