// The pool scan of the batch-1 kernel (multi_cta_steps.cuh, pool_scan) alone on one CTA of 256
// threads, its slice of 768 rotated 128-byte rows in shared memory: SM clocks of the scan as the
// kernel runs it, of the loads alone (the shared-memory floor: 768 x 128 B at 128 B a clock is
// 768 clocks), and of two or three rows a thread at once (with pool_scan's group minima). Each
// variant runs 5 times, the last 4 timed.
//
//   nvcc -O3 -arch=sm_90 -std=c++17 -Iinclude -Isrc -o /tmp/scan-bench scripts/dev/scan-bench.cu
//   /tmp/scan-bench
#include <cstdio>
#include <cuda_runtime.h>

#include "cuda/search/multi_cta_steps.cuh"

using namespace cagra;
using namespace cagra::cuda;

constexpr uint32_t kRows = 768, kThreads = 256, kStride = 128;

/** The loads alone: every chunk of the thread's rows, xor-folded so that none is dropped. */
__device__ uint32_t loads_only(const uint8_t* slice) {
  uint32_t x = 0;
  const uint32_t rot = threadIdx.x % 8;
  for (uint32_t s = threadIdx.x; s < kRows; s += blockDim.x) {
    const uint8_t* row = slice + size_t{s} * kStride;
#pragma unroll
    for (uint32_t j = 0; j < 8; ++j) {
      const uint4 v = *reinterpret_cast<const uint4*>(row + ((j + rot) % 8) * 16);
      x ^= v.x ^ v.y ^ v.z ^ v.w;
    }
  }
  return x;
}

/** Byte offsets of the calling thread's 8 chunks in its rotated rows (pool_chunk_at). */
__device__ __forceinline__ void chunk_offsets(uint32_t (&off)[8]) {
  const uint32_t rot = threadIdx.x % 8;
#pragma unroll
  for (uint32_t j = 0; j < 8; ++j) off[j] = ((j + rot) % 8) * 16;
}

/** Two rows a thread at once (16 loads in flight), q.x with the query in registers. */
__device__ unsigned long long two_rows(const uint8_t* slice, const uint4 (&qv)[8], const int* norms,
                                       int qq) {
  unsigned long long mine = ~0ull;
  uint32_t off[8];
  chunk_offsets(off);
  const uint32_t nt = blockDim.x;
  for (uint32_t s = threadIdx.x; s < kRows; s += 2 * nt) {
    const uint32_t s2 = s + nt;
    const bool has2 = s2 < kRows;
    const uint8_t* r1 = slice + size_t{s} * kStride;
    const uint8_t* r2 = slice + size_t{has2 ? s2 : s} * kStride;
    uint4 v[8], w[8];
#pragma unroll
    for (uint32_t j = 0; j < 8; ++j) {
      v[j] = *reinterpret_cast<const uint4*>(r1 + off[j]);
      w[j] = *reinterpret_cast<const uint4*>(r2 + off[j]);
    }
    const int d1 = qq + norms[s] - 2 * dev::dot_held_chunks<uint8_t>(v, qv);
    mine = min(mine, (static_cast<unsigned long long>(dev::float_key(__int2float_rn(d1))) << 32) | s);
    if (has2) {
      const int d2 = qq + norms[s2] - 2 * dev::dot_held_chunks<uint8_t>(w, qv);
      mine = min(mine, (static_cast<unsigned long long>(dev::float_key(__int2float_rn(d2))) << 32) | s2);
    }
  }
  return mine;
}

/** Three rows a thread at once (24 loads in flight). */
__device__ unsigned long long three_rows(const uint8_t* slice, const uint4 (&qv)[8],
                                         const int* norms, int qq) {
  unsigned long long mine = ~0ull;
  uint32_t off[8];
  chunk_offsets(off);
  const uint32_t nt = blockDim.x;
  for (uint32_t s = threadIdx.x; s < kRows; s += 3 * nt) {
    uint32_t r[3];
    uint4 v[3][8];
#pragma unroll
    for (uint32_t k = 0; k < 3; ++k) {
      r[k] = s + k * nt < kRows ? s + k * nt : s;
      const uint8_t* row = slice + size_t{r[k]} * kStride;
#pragma unroll
      for (uint32_t j = 0; j < 8; ++j) v[k][j] = *reinterpret_cast<const uint4*>(row + off[j]);
    }
#pragma unroll
    for (uint32_t k = 0; k < 3; ++k) {
      const int d = qq + norms[r[k]] - 2 * dev::dot_held_chunks<uint8_t>(v[k], qv);
      mine = min(mine, (static_cast<unsigned long long>(dev::float_key(__int2float_rn(d))) << 32) | r[k]);
    }
  }
  return mine;
}

/** The group minima as pool_scan ends: shuffles within groups of 8 threads, one store a group. */
__device__ void group_minima(unsigned long long mine, unsigned long long* best) {
#pragma unroll
  for (uint32_t o = 1; o < 8; o <<= 1) mine = min(mine, __shfl_xor_sync(0xffffffffu, mine, o));
  if (threadIdx.x % 8 == 0) best[threadIdx.x / 8 % 32] = mine;
  __syncthreads();
}

__global__ void __launch_bounds__(kThreads, 2) scan_kernel(multi_cta_args a, long long* clocks,
                                                           unsigned long long* sink) {
  extern __shared__ __align__(16) uint8_t smem[];
  uint8_t* slice = smem;
  uint8_t* q = smem + a.smem_query;
  __shared__ unsigned long long best[32];
  // Rows: bytes of a fixed pattern; ids; norms (pool_norms).
  for (uint32_t i = threadIdx.x; i < kRows * kStride / 4; i += blockDim.x)
    reinterpret_cast<uint32_t*>(slice)[i] = (i * 2654435761u) & 0x7F7F7F7Fu;
  for (uint32_t i = threadIdx.x; i < kRows; i += blockDim.x)
    reinterpret_cast<uint32_t*>(slice + kRows * kStride)[i] = i;
  for (uint32_t i = threadIdx.x; i < 128; i += blockDim.x) q[i] = uint8_t(i * 7);
  __syncthreads();
  dev::pool_norms<uint8_t>(a, slice);
  __syncthreads();
  const int* norms = reinterpret_cast<const int*>(slice + dev::pool_norms_offset(a));
  uint4 qv[8];
#pragma unroll
  for (uint32_t j = 0; j < 8; ++j) qv[j] = reinterpret_cast<const uint4*>(q)[j];
  unsigned long long acc = 0;
  for (int rep = 0; rep < 5; ++rep) {
    for (int v = 0; v < 4; ++v) {
      if (threadIdx.x < 32) best[threadIdx.x] = ~0ull;
      __syncthreads();
      const long long c0 = clock64();
      if (v == 0) {
        dev::pool_scan<uint8_t>(a, q, 12345, slice, best);  // ends with a barrier
        acc += best[threadIdx.x % 32];
      } else if (v == 1) {
        acc += loads_only(slice);
        __syncthreads();
      } else if (v == 2) {
        group_minima(two_rows(slice, qv, norms, 12345), best);
        acc += best[threadIdx.x % 32];
      } else {
        group_minima(three_rows(slice, qv, norms, 12345), best);
        acc += best[threadIdx.x % 32];
      }
      const long long c1 = clock64();
      if (threadIdx.x == 0 && rep > 0) clocks[v] += c1 - c0;
    }
  }
  sink[threadIdx.x] = acc;
}

int main() {
  multi_cta_args a{};
  a.pool_rows_per_cta = kRows;
  a.row_stride = kStride;
  a.n_chunks = 8;
  a.dim = 128;
  a.metric = metric::l2;
  const size_t slice_bytes = size_t{kRows} * (kStride + 8);
  a.smem_query = uint32_t((slice_bytes + 15) / 16 * 16);
  const size_t smem = a.smem_query + 128;
  long long* clocks;
  unsigned long long* sink;
  cudaMalloc(&clocks, 4 * sizeof(long long));
  cudaMalloc(&sink, kThreads * sizeof(unsigned long long));
  cudaMemset(clocks, 0, 4 * sizeof(long long));
  cudaFuncSetAttribute(scan_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem));
  scan_kernel<<<1, kThreads, smem>>>(a, clocks, sink);
  long long h[4];
  cudaMemcpy(h, clocks, sizeof h, cudaMemcpyDeviceToHost);
  const char* names[4] = {"pool_scan as the kernel runs it", "the loads alone",
                          "two rows a thread at once", "three rows a thread at once"};
  for (int v = 0; v < 4; ++v) std::printf("%-34s %6.0f SM clocks\n", names[v], h[v] / 4.0);
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) std::printf("error: %s\n", cudaGetErrorString(e));
  return e != cudaSuccess;
}
