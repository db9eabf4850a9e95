// The kNN lists of the GPU build on the device: what cuda::nn_descent_lists makes and
// cuda::optimize_lists takes, so that a build hands NN-descent's n x k lists to the graph
// optimization without copying them to the host and back (2 x n x k x 4 bytes each way; about
// 1.5 GB of transfers for 1M rows at k = 128). Internal to src/cuda/graph (CUDA types).
#pragma once

#include <cstdint>
#include <vector>

#include <cagra/cagra.hpp>

#include "core/backend.hpp"  // optimize_steps, progress_fn
#include "cuda/memory.hpp"

namespace cagra::cuda {

/** [rows, k] neighbor ids, rows sorted by (distance, id); `distances` alike, or empty. */
struct device_lists {
  int64_t rows = 0;
  uint32_t k = 0;
  device_buffer<uint32_t> ids;
  device_buffer<float> distances;
};

/** cuda::nn_descent with the lists left on `device` (the distances too when `with_distances`).
 *  The proposal buffers (the run's largest) are freed before the lists are written, so the peak
 *  is nn_descent_device_bytes(). */
device_lists nn_descent_lists(const host_matrix& data, metric m, uint32_t k,
                              const knn_graph_params& p, uint64_t seed, int device,
                              const core::progress_fn& progress, uint32_t* iterations_run,
                              bool with_distances);

/** cuda::optimize of lists already on `device` (the same checks, steps and bytes; the lists'
 *  memory is given back as soon as the pruning has read it). `graph`, when it holds
 *  rows x degree entries, is the result's memory, allocated by the caller ahead (faulting in a
 *  large host array takes longer than the detour counting); otherwise it is allocated here. */
std::vector<uint32_t> optimize_lists(device_lists lists, uint32_t degree, reorder_kind reorder,
                                     core::optimize_steps steps, int device,
                                     const core::progress_fn& progress,
                                     std::vector<uint32_t> graph = {});

}  // namespace cagra::cuda
