// Steps 2 and 3 of the GPU graph optimization (paper §III-B; driver in optimize.cu), in the exact
// orders of cpu::optimize:
//  2. Reverse graph. The CPU appends X to Y's list for every pruned edge X->Y, walking ranks
//     r = 0..d-1 in the outer loop and X in the inner one, and stops at d entries: Y's list is its
//     in-edges sorted by (r, X), cut at d. Here the edges are written in that (r, X) order
//     (a tiled transpose of the pruned graph: key Y, value X at index r * n + X) and sorted by Y
//     with cub::DeviceRadixSort, which is stable, so each Y's segment comes out in (r, X) order;
//     one pass marks every segment's [start, end).
//  3. Merge. One warp per node. The CPU's loop alternates between the pruned list p and the
//     reverse list r (at most d/2 taken from r), skipping ids already in the output. Both lists
//     hold distinct ids, so "already in the output" only means "in the other list, at a position
//     already consumed": the warp finds, for every p[i], its position in r (and vice versa), then
//     lane 0 replays the CPU's loop with O(1) tests. Nothing depends on scheduling.
#include <algorithm>
#include <cstdint>

#include <cuda_runtime_api.h>
#include <cub/device/device_radix_sort.cuh>

#include "cuda/check.hpp"
#include "cuda/graph/optimize.hpp"

namespace cagra::cuda::detail {
namespace {

constexpr uint32_t kNone = 0xFFFFFFFFu;

int key_bits(int64_t n) {
  int b = 1;
  while (b < 32 && (int64_t{1} << b) < n) ++b;  // ids are < n
  return b;
}

/** Edge (r, x) of the pruned graph -> keys[r * n + x] = pruned[x][r], values[...] = x, through a
 *  32 x 32 shared tile so that both the reads and the writes are coalesced. */
__global__ void fill_edges_kernel(const uint32_t* __restrict__ pruned, int64_t n, uint32_t d,
                                  uint32_t* __restrict__ keys, uint32_t* __restrict__ values) {
  __shared__ uint32_t tile[32][33];
  const int64_t x0 = int64_t(blockIdx.x) * 32;
  const uint32_t r0 = blockIdx.y * 32;
  for (uint32_t i = threadIdx.y; i < 32; i += blockDim.y) {
    const int64_t x = x0 + i;
    const uint32_t r = r0 + threadIdx.x;
    if (x < n && r < d) tile[i][threadIdx.x] = pruned[x * d + r];
  }
  __syncthreads();
  for (uint32_t i = threadIdx.y; i < 32; i += blockDim.y) {
    const uint32_t r = r0 + i;
    const int64_t x = x0 + threadIdx.x;
    if (x < n && r < d) {
      const size_t e = size_t(r) * size_t(n) + size_t(x);
      keys[e] = tile[threadIdx.x][i];
      values[e] = static_cast<uint32_t>(x);
    }
  }
}

/** Segment bounds of the sorted keys: start[y] .. end[y] (both 0 for a node without in-edges). */
__global__ void bounds_kernel(const uint32_t* __restrict__ keys, size_t e_count,
                              unsigned long long* start, unsigned long long* end) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < e_count;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t y = keys[i];
    if (i == 0 || keys[i - 1] != y) start[y] = i;
    if (i + 1 == e_count || keys[i + 1] != y) end[y] = i + 1;
  }
}

/** One warp per node: the CPU's merge_row. Shared memory per warp: 5 d words. */
__global__ void merge_kernel(const uint32_t* __restrict__ pruned,
                             const uint32_t* __restrict__ rev_src,
                             const unsigned long long* __restrict__ start,
                             const unsigned long long* __restrict__ end, int64_t n, uint32_t d,
                             uint32_t* __restrict__ out) {
  extern __shared__ uint32_t msm[];
  const uint32_t lane = threadIdx.x & 31u, w = threadIdx.x >> 5;
  const int64_t x = int64_t(blockIdx.x) * (blockDim.x >> 5) + w;
  if (x >= n) return;  // whole warps only: the kernel uses no CTA barrier
  uint32_t* p = msm + size_t(w) * 5 * d;
  uint32_t* r = p + d;
  uint32_t* p_in_r = r + d;  // position of p[i] in r, or kNone
  uint32_t* r_in_p = p_in_r + d;
  uint32_t* o = r_in_p + d;
  const unsigned long long s0 = start[x];
  const uint32_t n_rev =
      static_cast<uint32_t>(min(end[x] - s0, static_cast<unsigned long long>(d)));
  for (uint32_t i = lane; i < d; i += 32) {
    p[i] = pruned[x * d + i];
    p_in_r[i] = kNone;
  }
  for (uint32_t j = lane; j < n_rev; j += 32) {
    r[j] = rev_src[s0 + j];
    r_in_p[j] = kNone;
  }
  __syncwarp();
  for (uint32_t i = lane; i < d; i += 32) {
    const uint32_t id = p[i];
    for (uint32_t j = 0; j < n_rev; ++j)
      if (r[j] == id) {
        p_in_r[i] = j;
        r_in_p[j] = i;
        break;
      }
  }
  __syncwarp();
  uint32_t n_out = 0;
  if (lane == 0) {
    // cpu merge_row: p[ip] is already out iff it was taken from r (p_in_r < ir); r[ir] iff it was
    // in p at a consumed position (r_in_p < ip). Lists are distinct, so nothing else can repeat.
    const uint32_t rev_quota = d / 2;
    uint32_t ip = 0, ir = 0, taken_rev = 0;
    bool rev_turn = false;
    while (n_out < d) {
      const bool use_rev = (rev_turn && taken_rev < rev_quota && ir < n_rev) || ip >= d;
      if (use_rev) {
        if (ir >= n_rev) break;
        const uint32_t j = ir++;
        if (!(r_in_p[j] < ip)) {
          o[n_out++] = r[j];
          ++taken_rev;
        }
      } else {
        const uint32_t i = ip++;
        if (!(p_in_r[i] < ir)) o[n_out++] = p[i];
      }
      rev_turn = !rev_turn;
    }
  }
  n_out = __shfl_sync(0xFFFFFFFFu, n_out, 0);
  __syncwarp();
  for (uint32_t i = lane; i < d; i += 32)
    out[x * d + i] = i < n_out ? o[i] : 0u;  // 0: the CPU's fill
}

}  // namespace

size_t sort_temp_bytes(int64_t rows, uint32_t degree) {
  size_t bytes = 0;
  cub::DoubleBuffer<uint32_t> keys(nullptr, nullptr), values(nullptr, nullptr);
  const int64_t e_count = rows * int64_t{degree};
  CAGRA_CUDA_TRY(
      cub::DeviceRadixSort::SortPairs(nullptr, bytes, keys, values, e_count, 0, key_bits(rows)));
  return bytes;
}

void reverse_and_merge(const uint32_t* pruned, int64_t n, uint32_t d,
                       const reverse_merge_buffers& buf, void* stream_ptr, uint32_t* graph_host,
                       const core::progress_fn& progress) {
  const cudaStream_t s = static_cast<cudaStream_t>(stream_ptr);
  const size_t e_count = size_t(n) * d;
  if (progress) progress("optimize: reverse edges", 0.0);
  {
    const dim3 block(32, 8), grid(static_cast<unsigned>((n + 31) / 32), (d + 31) / 32);
    fill_edges_kernel<<<grid, block, 0, s>>>(pruned, n, d, buf.keys[0], buf.values[0]);
    CAGRA_CUDA_CHECK_LAUNCH();
  }
  cub::DoubleBuffer<uint32_t> keys(buf.keys[0], buf.keys[1]), values(buf.values[0], buf.values[1]);
  size_t temp_bytes = buf.temp_bytes;
  CAGRA_CUDA_TRY(cub::DeviceRadixSort::SortPairs(buf.temp, temp_bytes, keys, values,
                                                 static_cast<int64_t>(e_count), 0, key_bits(n), s));
  CAGRA_CUDA_TRY(cudaMemsetAsync(buf.start, 0, size_t(n) * sizeof(unsigned long long), s));
  CAGRA_CUDA_TRY(cudaMemsetAsync(buf.end, 0, size_t(n) * sizeof(unsigned long long), s));
  {
    const size_t blocks = std::min<size_t>((e_count + 255) / 256, size_t{1} << 20);
    bounds_kernel<<<static_cast<unsigned>(blocks), 256, 0, s>>>(keys.Current(), e_count, buf.start,
                                                                buf.end);
    CAGRA_CUDA_CHECK_LAUNCH();
  }
  if (progress) {
    CAGRA_CUDA_TRY(cudaStreamSynchronize(s));
    progress("optimize: merge", 0.0);
  }
  // The sorted keys are not needed any more: the merged graph goes into their buffer.
  uint32_t* out = keys.Current();
  {
    const size_t per_warp = size_t(5) * d * sizeof(uint32_t);
    const uint32_t warps = static_cast<uint32_t>(std::clamp<size_t>((48 * 1024) / per_warp, 1, 8));
    const size_t smem = per_warp * warps;
    int device = 0, optin = 0;
    CAGRA_CUDA_TRY(cudaGetDevice(&device));
    CAGRA_CUDA_TRY(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    CAGRA_EXPECTS(smem <= size_t(optin),
                  "graph degree %u is too large for the GPU merge (%zu bytes of shared memory, "
                  "device allows %d)",
                  d, smem, optin);
    CAGRA_CUDA_TRY(
        cudaFuncSetAttribute(merge_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    const int64_t blocks = (n + warps - 1) / warps;
    merge_kernel<<<static_cast<unsigned>(blocks), warps * 32, smem, s>>>(
        pruned, values.Current(), buf.start, buf.end, n, d, out);
    CAGRA_CUDA_CHECK_LAUNCH();
  }
  CAGRA_CUDA_TRY(
      cudaMemcpyAsync(graph_host, out, e_count * sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
  CAGRA_CUDA_TRY(cudaStreamSynchronize(s));
}

}  // namespace cagra::cuda::detail
