// The CUDA graph optimization stage (paper §III-B): the GPU twin of cpu::optimize. Plain C++ (no
// CUDA types), so that src/core/dispatch.cpp compiles without nvcc; the code is in
// src/cuda/graph/optimize.cu (reorder + prune) and src/cuda/graph/reverse_merge.cu (reverse graph
// + interleaved merge).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <cagra/cagra.hpp>

#include "core/backend.hpp"  // optimize_steps, progress_fn

namespace cagra::cuda {

/** cpu::optimize on CUDA device `device`: the same checks in the same order with the same
 *  messages (degree in [1, knn.k], distances present for reorder_kind::distance, ids size, then
 *  the smallest row with an invalid, self or duplicate id), and the same output bytes for any
 *  input, reorder kind and `steps`. Limits of the GPU version (cagra::error otherwise): rows below
 *  2^32 - 1, knn.k small enough for one CTA's shared memory (up to 4096 on an H100), and
 *  optimize_device_bytes() of free device memory (checked with cudaMemGetInfo before anything is
 *  allocated). `progress` (may be empty) gets "optimize: reorder" a few times, then
 *  "optimize: reverse edges", "optimize: merge" and ("optimize", 1.0). */
std::vector<uint32_t> optimize(const knn_graph& knn, uint32_t degree, reorder_kind reorder,
                               core::optimize_steps steps, int device,
                               const core::progress_fn& progress);

/** Peak device memory (bytes) of cuda::optimize for `rows` x `knn_degree` -> `degree` with every
 *  step: 4 n d (pruned graph) + 8 + max(4 n K [+ 4 n K distances for reorder_kind::distance],
 *  16 n d (reverse-edge keys/values, double-buffered radix sort) + 16 n (segment bounds) +
 *  CUB's radix-sort scratch), each buffer rounded up to 2 MiB (core::optimize_memory's terms).
 *  The scratch is asked from CUB on the current device; without a usable device
 *  core::gpu::radix_sort_scratch_bound stands in. The default (distance) is the larger. */
size_t optimize_device_bytes(int64_t rows, uint32_t knn_degree, uint32_t degree,
                             reorder_kind reorder = reorder_kind::distance);

namespace detail {
/** Internal (reverse_merge.cu): steps 2 and 3 on device memory. `pruned` is the device
 *  [rows, degree] pruned graph; returns the merged graph on the host. `edge_buffers` are four
 *  device arrays of rows * degree uint32 each, `bounds` two of rows uint64, `temp` CUB scratch
 *  of `temp_bytes` (see sort_temp_bytes). */
struct reverse_merge_buffers {
  uint32_t* keys[2];
  uint32_t* values[2];
  unsigned long long* start;
  unsigned long long* end;
  void* temp;
  size_t temp_bytes;
};
/** CUB's scratch for the reverse-edge sort of rows * degree pairs (throws on CUDA errors). */
size_t sort_temp_bytes(int64_t rows, uint32_t degree);
void reverse_and_merge(const uint32_t* pruned, int64_t rows, uint32_t degree,
                       const reverse_merge_buffers& buf, void* stream, uint32_t* graph_host,
                       const core::progress_fn& progress);
}  // namespace detail

}  // namespace cagra::cuda
