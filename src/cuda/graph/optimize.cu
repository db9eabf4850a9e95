// CAGRA graph optimization on the GPU (paper §III-B), bit-identical to cpu::optimize
// (src/cpu/optimize.cpp), which defines every order used here. This file: validation, step 1
// (detour counting, reorder, prune), memory planning and the host driver; steps 2 and 3 (reverse
// graph, interleaved merge) are in reverse_merge.cu.
//
// Step 1 runs one CTA per node X. The CTA loads X's K ids into shared memory and inserts them
// into a small open-addressing hash (id -> rank); the insertion also validates the row exactly as
// the CPU does (id < n, id != X, no duplicate), and a bad row records itself with atomicMin, so
// the error names the smallest bad row, like the CPU's. Then the warps take X's neighbours
// Z = row[j], j < K - 1 (the CPU's loop bound), read Z's row coalesced and, for each Y = row_Z[s]
// found in the hash at rank r, count the detour when max(j, s) < r (rank) or
// max(w_X[j], w_Z[s]) < w_X[r] with std::max's exact semantics (distance). Counts are integers
// added with shared atomics, so they do not depend on scheduling. A bitonic sort of the keys
// (count << 32 | rank) gives the CPU's stable sort by count, and the first `degree` are kept.
// Why one CTA per node: K^2 row reads per node are independent and coalesced (Z's row is
// contiguous), the lookup structure fits in a few KB of shared memory, and no inter-node
// communication is needed; the whole step is bound by reading each row K times (~64 GB for
// 1M x 128, tens of milliseconds on an H100).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>

#include "core/bits.hpp"
#include "core/device_memory.hpp"
#include "cuda/check.hpp"
#include "cuda/graph/build_trace.hpp"
#include "cuda/graph/device_lists.hpp"
#include "cuda/graph/optimize.hpp"
#include "cuda/memory.hpp"
#include "cuda/primitives/bitonic.cuh"

namespace cagra::cuda {
namespace {

constexpr uint32_t kEmpty = 0xFFFFFFFFu;
constexpr unsigned long long kNoBadRow = ~0ull;

using bits::next_pow2;
uint32_t log2_exact(uint32_t p) {
  uint32_t b = 0;
  while ((1u << b) < p) ++b;
  return b;
}

/** Shared-memory layout of the step-1 kernel for kNN degree K. */
struct reorder_layout {
  uint32_t table;  // hash slots, a power of two >= 2K (load <= 1/2)
  uint32_t sort;   // bitonic keys, a power of two >= K
  size_t bytes(bool with_dist) const {
    return size_t(table) * 8 + size_t(sort) * 8 + size_t(sort) * 4 /*ids*/ +
           size_t(sort) * 4 /*counts*/ + (with_dist ? size_t(sort) * 4 : 0);
  }
};
reorder_layout layout_for(uint32_t k) { return {next_pow2(2 * k), next_pow2(k)}; }

uint32_t threads_for(uint32_t k) {
  return std::min<uint32_t>(256, std::max<uint32_t>(64, next_pow2(k)));
}

__device__ __forceinline__ uint32_t slot_of(uint32_t id, uint32_t bits) {
  return (id * 0x9E3779B1u) >> (32 - bits);
}

/** Rank of `id` in X's list, or -1. */
__device__ __forceinline__ int32_t lookup(const uint32_t* keys, const uint32_t* ranks,
                                          uint32_t bits, uint32_t id) {
  const uint32_t mask = (1u << bits) - 1;
  for (uint32_t h = slot_of(id, bits);; h = (h + 1) & mask) {
    const uint32_t k = keys[h];
    if (k == id) return static_cast<int32_t>(ranks[h]);
    if (k == kEmpty) return -1;
  }
}

/** Step 1 for rows [x0, x0 + gridDim.x). kMode 0: validate and copy the first `degree` ids (no
 *  reorder); 1: rank-based reorder; 2: distance-based reorder. */
template <int kMode>
__global__ void reorder_kernel(const uint32_t* __restrict__ ids, const float* __restrict__ dist,
                               int64_t n, uint32_t k, uint32_t degree, uint32_t table_bits,
                               uint32_t sort_n, int64_t x0, uint32_t* __restrict__ pruned,
                               unsigned long long* bad_row) {
  extern __shared__ unsigned long long smem[];
  unsigned long long* keys = smem;                               // [sort_n]
  uint32_t* hkeys = reinterpret_cast<uint32_t*>(keys + sort_n);  // [1 << table_bits]
  uint32_t* hranks = hkeys + (1u << table_bits);                 // [1 << table_bits]
  uint32_t* row = hranks + (1u << table_bits);                   // [sort_n]
  uint32_t* count = row + sort_n;                                // [sort_n]
  float* wx = reinterpret_cast<float*>(count + sort_n);          // [sort_n], mode 2
  __shared__ int bad;

  const int64_t x = x0 + blockIdx.x;
  const uint32_t* xrow = ids + x * k;
  for (uint32_t i = threadIdx.x; i < (1u << table_bits); i += blockDim.x) hkeys[i] = kEmpty;
  for (uint32_t r = threadIdx.x; r < k; r += blockDim.x) count[r] = 0;
  if (threadIdx.x == 0) bad = 0;
  __syncthreads();
  // Load, validate (the CPU's rule: id < n, id != x, no duplicate) and index X's list.
  const uint32_t mask = (1u << table_bits) - 1;
  for (uint32_t r = threadIdx.x; r < k; r += blockDim.x) {
    const uint32_t id = xrow[r];
    row[r] = id;
    if constexpr (kMode == 2) wx[r] = dist[x * k + r];
    if (static_cast<int64_t>(id) >= n || static_cast<int64_t>(id) == x) {
      bad = 1;
      continue;
    }
    for (uint32_t h = slot_of(id, table_bits);; h = (h + 1) & mask) {
      const uint32_t prev = atomicCAS(&hkeys[h], kEmpty, id);
      if (prev == kEmpty) {
        hranks[h] = r;
        break;
      }
      if (prev == id) {
        bad = 1;
        break;
      }
    }
  }
  __syncthreads();
  if (bad) {
    if (threadIdx.x == 0) atomicMin(bad_row, static_cast<unsigned long long>(x));
    return;  // uniform: every thread read the same flag after the barrier
  }
  if constexpr (kMode == 0) {
    for (uint32_t r = threadIdx.x; r < degree; r += blockDim.x) pruned[x * degree + r] = row[r];
    return;
  } else {
    // Detour counting: Z = row[j] for j < K - 1, every s of Z's list; Y = row_Z[s] = `y`.
    auto visit = [&](uint32_t j, uint32_t s, uint32_t y) {
      const int32_t r = lookup(hkeys, hranks, table_bits, y);
      if (r < 0) return;
      bool detour;
      if constexpr (kMode == 1) {
        detour = max(j, s) < static_cast<uint32_t>(r);
      } else {
        const float a = wx[j], b = __ldg(dist + static_cast<int64_t>(row[j]) * k + s);
        const float m = (a < b) ? b : a;  // std::max(wx[j], wz[s]), NaN included
        detour = m < wx[r];
      }
      if (detour) atomicAdd(&count[r], 1u);
    };
    if ((k & 3u) == 0) {
      // Rows are 16-byte aligned: (j, c) pairs, c = a group of 4 ids, spread over the CTA,
      // four 16-byte loads in flight per thread. Each thread steps its (j, c) by blockDim.x
      // pairs without a division in the loop.
      const uint32_t q = k >> 2, sj = blockDim.x / q, sc = blockDim.x % q;
      uint32_t j = threadIdx.x / q, c = threadIdx.x % q;
      while (j + 1 < k) {
        uint4 v[4];
        uint32_t jj[4], cc[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          jj[u] = j;
          cc[u] = c;
          if (j + 1 < k)
            v[u] =
                __ldg(reinterpret_cast<const uint4*>(ids + static_cast<int64_t>(row[j]) * k) + c);
          c += sc;
          j += sj;
          if (c >= q) {
            c -= q;
            ++j;
          }
        }
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          if (jj[u] + 1 >= k) continue;
          const uint32_t s = 4 * cc[u];
          visit(jj[u], s, v[u].x);
          visit(jj[u], s + 1, v[u].y);
          visit(jj[u], s + 2, v[u].z);
          visit(jj[u], s + 3, v[u].w);
        }
      }
    } else {
      const uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
      for (uint32_t j = warp; j + 1 < k; j += warps) {
        const uint32_t* zrow = ids + static_cast<int64_t>(row[j]) * k;
#pragma unroll 4
        for (uint32_t s = lane; s < k; s += 32) visit(j, s, __ldg(zrow + s));
      }
    }
    __syncthreads();
    // Stable sort by count == sort by (count, rank).
    for (uint32_t r = threadIdx.x; r < sort_n; r += blockDim.x)
      keys[r] = r < k ? (static_cast<unsigned long long>(count[r]) << 32) | r : ~0ull;
    __syncthreads();
    dev::block_sort_u64(keys, sort_n);
    for (uint32_t i = threadIdx.x; i < degree; i += blockDim.x)
      pruned[x * degree + i] = row[static_cast<uint32_t>(keys[i] & 0xFFFFFFFFu)];
  }
}

template <int kMode>
void launch_reorder(const uint32_t* ids, const float* dist, int64_t n, uint32_t k, uint32_t degree,
                    int64_t x0, int64_t rows, uint32_t* pruned, unsigned long long* bad_row,
                    cudaStream_t s) {
  const reorder_layout l = layout_for(k);
  const size_t smem = l.bytes(kMode == 2);
  CAGRA_CUDA_TRY(cudaFuncSetAttribute(
      reorder_kernel<kMode>, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
  reorder_kernel<kMode><<<static_cast<unsigned>(rows), threads_for(k), smem, s>>>(
      ids, dist, n, k, degree, log2_exact(l.table), l.sort, x0, pruned, bad_row);
  CAGRA_CUDA_CHECK_LAUNCH();
}

}  // namespace

size_t optimize_device_bytes(int64_t rows, uint32_t knn_degree, uint32_t degree,
                             reorder_kind reorder) {
  if (rows <= 0 || degree == 0) return 0;
  size_t temp = 0;
  try {
    temp = detail::sort_temp_bytes(rows, degree);
  } catch (const cagra::error&) {
    temp = size_t(core::gpu::radix_sort_scratch_bound(rows * int64_t{degree}));
  }
  // The buffers below, one term each (core::optimize_memory names them).
  return size_t(
      core::optimize_memory(rows, knn_degree, degree, reorder == reorder_kind::distance, true, temp)
          .total());
}

namespace {

/** The GPU version's own limits: rows, one CTA's shared memory for k, and the stage's device
 *  memory (`held`: bytes of it already allocated, the lists handed over). */
void check_device_limits(int64_t n, uint32_t k, uint32_t degree, int mode,
                         core::optimize_steps steps, int device, size_t held) {
  CAGRA_EXPECTS(n < int64_t{kEmpty},
                "the GPU graph optimization takes fewer than %u rows (got %lld)", kEmpty,
                (long long)n);
  device_guard guard(device);
  const reorder_layout l = layout_for(k);
  int smem_optin = 0;
  CAGRA_CUDA_TRY(
      cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  CAGRA_EXPECTS(
      l.bytes(mode == 2) + 64 <= size_t(smem_optin),
      "kNN degree %u is too large for the GPU graph optimization (%zu bytes of shared memory per "
      "CTA, device %d allows %d)",
      k, l.bytes(mode == 2), device, smem_optin);
  const size_t temp_bytes = steps.reverse ? detail::sort_temp_bytes(n, degree) : 0;
  const size_t need =
      size_t(core::optimize_memory(n, k, degree, mode == 2, steps.reverse, temp_bytes).total());
  size_t free_b = 0, total_b = 0;
  CAGRA_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  CAGRA_EXPECTS(
      need <= free_b + held,
      "the GPU graph optimization of %lld x %u -> %u needs %zu bytes (%.2f GiB) of device memory, "
      "device %d has %zu bytes (%.2f GiB) free",
      (long long)n, k, degree, need, need / 1073741824.0, device, free_b + held,
      (free_b + held) / 1073741824.0);
}

int reorder_mode(reorder_kind reorder, core::optimize_steps steps) {
  return !steps.reorder ? 0 : reorder == reorder_kind::rank ? 1 : 2;
}

}  // namespace

std::vector<uint32_t> optimize(const knn_graph& knn, uint32_t degree, reorder_kind reorder,
                               core::optimize_steps steps, int device,
                               const core::progress_fn& progress) {
  const int64_t n = knn.rows;
  const uint32_t k = knn.k;
  // The CPU's checks, in its order and with its messages.
  CAGRA_EXPECTS(degree >= 1 && degree <= knn.k, "graph degree %u must be in [1, kNN degree %u]",
                degree, knn.k);
  CAGRA_EXPECTS(reorder == reorder_kind::rank || knn.distances.size() == knn.ids.size(),
                "distance-based reordering needs the kNN graph's distances");
  CAGRA_EXPECTS(knn.ids.size() == static_cast<size_t>(n) * k,
                "kNN graph holds %zu ids, expected %lld x %u", knn.ids.size(), (long long)n, k);
  if (n <= 0) {
    if (progress) progress("optimize", 1.0);
    return {};
  }
  const int mode = reorder_mode(reorder, steps);
  check_device_limits(n, k, degree, mode, steps, device, 0);  // before anything is allocated

  device_guard guard(device);
  device_lists lists;
  lists.rows = n;
  lists.k = k;
  const size_t nk = size_t(n) * k;
  // The upload on a stream of its own, synchronized: a plain cudaMemcpy from pageable memory may
  // return before its DMA lands, and optimize_lists' kernels run on a non-blocking stream, which
  // does not wait for the legacy stream (CudaOptimize.SyntheticEdgeCases saw stale ids while
  // another process kept the GPU busy).
  cuda_stream upload;
  lists.ids.reserve(nk);
  CAGRA_CUDA_TRY(cudaMemcpyAsync(lists.ids.data(), knn.ids.data(), nk * 4, cudaMemcpyHostToDevice,
                                 upload.get()));
  if (mode == 2) {
    lists.distances.reserve(nk);
    CAGRA_CUDA_TRY(cudaMemcpyAsync(lists.distances.data(), knn.distances.data(), nk * 4,
                                   cudaMemcpyHostToDevice, upload.get()));
  }
  upload.sync();
  return optimize_lists(std::move(lists), degree, reorder, steps, device, progress);
}

std::vector<uint32_t> optimize_lists(device_lists lists, uint32_t degree, reorder_kind reorder,
                                     core::optimize_steps steps, int device,
                                     const core::progress_fn& progress,
                                     std::vector<uint32_t> graph) {
  const int64_t n = lists.rows;
  const uint32_t k = lists.k;
  const int mode = reorder_mode(reorder, steps);
  CAGRA_EXPECTS(degree >= 1 && degree <= k, "graph degree %u must be in [1, kNN degree %u]", degree,
                k);
  CAGRA_EXPECTS(n > 0 && lists.ids.size() >= size_t(n) * k, "the kNN lists are empty or short");
  CAGRA_EXPECTS(mode != 2 || lists.distances.size() >= size_t(n) * k,
                "distance-based reordering needs the kNN graph's distances");
  check_device_limits(n, k, degree, mode, steps, device,
                      lists.ids.bytes() + lists.distances.bytes());
  build_trace trace("optimize");
  device_guard guard(device);
  cuda_stream stream;
  const size_t temp_bytes = steps.reverse ? detail::sort_temp_bytes(n, degree) : 0;
  const cudaStream_t s = stream.get();
  const size_t nd = size_t(n) * degree;
  device_buffer<uint32_t> d_pruned(nd);
  device_buffer<unsigned long long> d_bad(1);
  unsigned long long h_bad = kNoBadRow;
  // `graph` is the result: sized here (while the GPU counts detours) unless the caller has.
  CAGRA_CUDA_TRY(cudaMemcpyAsync(d_bad.data(), &h_bad, sizeof(h_bad), cudaMemcpyHostToDevice, s));
  {
    const device_lists held = std::move(lists);  // freed at the end of this scope
    const uint32_t* d_ids = held.ids.data();
    const float* d_dist = held.distances.data();
    if (progress && steps.reorder) progress("optimize: reorder", 0.0);
    // A few launches of consecutive rows, each followed by an event, for progress. Every launch
    // is queued first, so that the host allocates the result meanwhile (zeroing and faulting in
    // n d words takes as long as the counting). A CTA reads only the rows named in its own row,
    // once that row is validated, so the launches are safe with bad rows anywhere.
    const int64_t chunk = std::max<int64_t>(int64_t{1} << 16, (n + 7) / 8);
    std::vector<std::pair<std::unique_ptr<cuda_event>, int64_t>> done;
    for (int64_t x0 = 0; x0 < n; x0 += chunk) {
      const int64_t rows = std::min(chunk, n - x0);
      if (mode == 0)
        launch_reorder<0>(d_ids, nullptr, n, k, degree, x0, rows, d_pruned.data(), d_bad.data(), s);
      else if (mode == 1)
        launch_reorder<1>(d_ids, nullptr, n, k, degree, x0, rows, d_pruned.data(), d_bad.data(), s);
      else
        launch_reorder<2>(d_ids, d_dist, n, k, degree, x0, rows, d_pruned.data(), d_bad.data(), s);
      done.emplace_back(std::make_unique<cuda_event>(), x0 + rows);
      CAGRA_CUDA_TRY(cudaEventRecord(done.back().first->get(), s));
    }
    trace.mark("reorder launches queued");
    if (graph.size() != nd) {
      graph = std::vector<uint32_t>();
      graph.resize(nd);
    }
    trace.mark("host graph allocated");
    for (const auto& e : done) {
      CAGRA_CUDA_TRY(cudaEventSynchronize(e.first->get()));
      if (progress && steps.reorder) progress("optimize: reorder", double(e.second) / double(n));
    }
    CAGRA_CUDA_TRY(cudaMemcpyAsync(&h_bad, d_bad.data(), sizeof(h_bad), cudaMemcpyDeviceToHost, s));
    stream.sync();
    trace.mark("reorder + prune done");
  }  // the kNN lists' device memory is freed here
  // The smallest bad row, as the CPU reports.
  if (h_bad != kNoBadRow)
    CAGRA_FAIL("kNN graph row %lld has an invalid, self or duplicate id", (long long)h_bad);

  if (!steps.reverse) {
    CAGRA_CUDA_TRY(
        cudaMemcpyAsync(graph.data(), d_pruned.data(), nd * 4, cudaMemcpyDeviceToHost, s));
    stream.sync();
    if (progress) progress("optimize", 1.0);
    return graph;
  }
  device_buffer<uint32_t> k0(nd), k1(nd), v0(nd), v1(nd);
  device_buffer<unsigned long long> start{size_t(n)}, end{size_t(n)};
  device_buffer<unsigned char> temp(std::max<size_t>(temp_bytes, 1));
  detail::reverse_merge_buffers buf{{k0.data(), k1.data()},
                                    {v0.data(), v1.data()},
                                    start.data(),
                                    end.data(),
                                    temp.data(),
                                    temp_bytes};
  detail::reverse_and_merge(d_pruned.data(), n, degree, buf, s, graph.data(), progress);
  trace.mark("reverse + merge, graph on host");
  if (progress) progress("optimize", 1.0);
  return graph;
}

}  // namespace cagra::cuda
