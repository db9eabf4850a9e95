// NN-descent on the GPU (paper §III-A): the intermediate kNN graph of the CUDA build.
// Plain C++ (no CUDA types), so that src/core/dispatch.cpp can call it without nvcc; the
// kernels live in nn_descent.cu (driver, sample, update), nn_descent_join.cu (join) and
// nn_descent_lists.cu (random start, lists out), which share nn_descent_detail.cuh's helpers.
//
// Same contract as cpu::nn_descent: `data` in storage type (f32, f16, u8, i8; rows already unit
// for cosine), distances as cpu::distance (l2: squared L2; inner_product: -<a, b>; cosine:
// 1 - <a, b>), self excluded, no duplicate ids, rows sorted by (distance, id). Not
// deterministic (atomics decide which proposals survive a full buffer), but every distance of a
// pair is computed with the same arithmetic in the same order, so equal pairs have equal bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cagra/cagra.hpp>

#include "core/backend.hpp"  // progress_fn

namespace cagra::cuda {

/** Largest k (d_init) the GPU NN-descent takes (512). */
uint32_t nn_descent_max_k();

/** Peak device memory (bytes) of cuda::nn_descent on a [rows, dim] matrix of `t` with degree k:
 *  rows * (row bytes padded to 16 + k * 9 + P * 8 + 4 + 4 * S * 4 + 8) + 16, each buffer rounded
 *  up to 2 MiB; P = the proposal buffer per node (next power of two >= max(2k, 128)), S = the
 *  sample size round(sample_rate * k) in [1, 32] (sample_rate 1, the default, bounds every
 *  rate). The terms are core::nn_descent_memory's (src/core/device_memory.cpp). */
size_t nn_descent_device_bytes(int64_t rows, int64_t dim, dtype t, uint32_t k,
                               float sample_rate = 1.0f);

/** Approximate kNN graph of `data` by NN-descent on CUDA device `device` (GNND-style: sample,
 *  reverse, local join with candidate vectors in shared memory, bounded proposal buffers, merge).
 *  Throws cagra::error for k outside [1, rows) (the CPU's message), k > nn_descent_max_k(),
 *  unsupported dtypes, or when the device lacks nn_descent_device_bytes() of free memory.
 *  `progress("NN-descent", fraction)` once per iteration; *iterations_run = iterations done. */
knn_graph nn_descent(const host_matrix& data, metric m, uint32_t k, const knn_graph_params& p,
                     uint64_t seed, int device, const core::progress_fn& progress,
                     uint32_t* iterations_run);

}  // namespace cagra::cuda
