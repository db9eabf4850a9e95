// How fast can kernels read random rows of pinned, mapped host memory? The int8 traversal's
// re-ranking with search_params::stored_rows = host reads each query's candidates' rows across
// PCIe (int8_traversal.cu, rerank_kernel: a warp a row, 16-byte loads, one row after another).
// On MiniLM-1M (1,536-byte rows) at batch 10K it reached ~37 GB/s on an H200. Here, the same
// access pattern without the arithmetic: ROWS rows of 1,536 bytes pinned in place with
// cudaHostRegister (as the library does), 10,000 queries of 32 random rows each, a CTA of 128
// threads a query, and ways to read them:
//   warp-row     a warp reads a row with 16-byte lane loads, row after row (the library's)
//   warp-4rows   a warp issues the loads of 4 rows before it uses any
//   bulk         thread 0 issues one bulk copy (cuda::memcpy_async, cp.async.bulk on sm_90) a
//                row into shared memory, 16 rows before waiting (twice a query)
//   device       warp-row over a device copy of the rows (the device-rows path's reads)
//   dma          one cudaMemcpyAsync of the whole pinned buffer to the device (the link)
// Prints GB/s of row bytes (best of REPS) for each.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/mapped-rows scripts/dev/mapped-rows.cu
//   /tmp/mapped-rows [ROWS=1000000] [REPS=5]
#include <cuda_runtime.h>
#include <cuda/barrier>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define TRY(x)                                                                        \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

constexpr int kRowBytes = 1536, kRowsPerQuery = 32, kThreads = 128, kQueries = 10000;

__device__ float sum16(uint4 v) {
  return __uint_as_float(v.x) + __uint_as_float(v.y) + __uint_as_float(v.z) + __uint_as_float(v.w);
}

__global__ void warp_row(const uint8_t* rows, const uint32_t* ids, float* out) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float acc = 0.f;
  for (int c = warp; c < kRowsPerQuery; c += kThreads / 32) {
    const uint8_t* row = rows + size_t(ids[blockIdx.x * kRowsPerQuery + c]) * kRowBytes;
    for (int b = lane * 16; b < kRowBytes; b += 512)
      acc += sum16(*reinterpret_cast<const uint4*>(row + b));
  }
  if (acc == 12345.f) out[blockIdx.x] = acc;  // keeps the loads
}

__global__ void warp_4rows(const uint8_t* rows, const uint32_t* ids, float* out) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  float acc = 0.f;
  for (int c0 = warp * 4; c0 < kRowsPerQuery; c0 += kThreads / 32 * 4) {
    uint4 v[4][3];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const uint8_t* row = rows + size_t(ids[blockIdx.x * kRowsPerQuery + c0 + r]) * kRowBytes;
#pragma unroll
      for (int j = 0; j < 3; ++j)
        v[r][j] = *reinterpret_cast<const uint4*>(row + lane * 16 + j * 512);
    }
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int j = 0; j < 3; ++j) acc += sum16(v[r][j]);
  }
  if (acc == 12345.f) out[blockIdx.x] = acc;
}

__global__ void bulk(const uint8_t* rows, const uint32_t* ids, float* out) {
  constexpr int kHalf = kRowsPerQuery / 2;  // 24 KB of rows in shared memory at a time
  __shared__ alignas(128) uint8_t buf[kHalf * kRowBytes];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  float acc = 0.f;
  for (int h = 0; h < 2; ++h) {
    if (threadIdx.x == 0)
      for (int c = 0; c < kHalf; ++c)
        cuda::memcpy_async(
            buf + c * kRowBytes,
            rows + size_t(ids[blockIdx.x * kRowsPerQuery + h * kHalf + c]) * kRowBytes,
            cuda::aligned_size_t<16>(kRowBytes), bar);
    bar.arrive_and_wait();
    for (int b = threadIdx.x * 16; b < kHalf * kRowBytes; b += kThreads * 16)
      acc += sum16(*reinterpret_cast<const uint4*>(buf + b));
    __syncthreads();
  }
  if (acc == 12345.f) out[blockIdx.x] = acc;
}

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const size_t bytes = n * kRowBytes;
  auto* host = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
  for (size_t i = 0; i < bytes / 4; ++i)
    reinterpret_cast<float*>(host)[i] = float(i % 1000) * 1e-3f;
  TRY(cudaHostRegister(
      host, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable | cudaHostRegisterReadOnly));
  uint8_t* mapped = nullptr;
  TRY(cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped), host, 0));
  uint8_t* dev = nullptr;
  TRY(cudaMalloc(&dev, bytes));
  std::vector<uint32_t> ids(size_t(kQueries) * kRowsPerQuery);
  std::mt19937 gen(3);
  for (auto& id : ids) id = uint32_t(gen() % n);
  uint32_t* d_ids = nullptr;
  float* d_out = nullptr;
  TRY(cudaMalloc(&d_ids, ids.size() * 4));
  TRY(cudaMalloc(&d_out, kQueries * 4));
  TRY(cudaMemcpy(d_ids, ids.data(), ids.size() * 4, cudaMemcpyHostToDevice));
  cudaEvent_t a, b;
  TRY(cudaEventCreate(&a));
  TRY(cudaEventCreate(&b));
  const double row_bytes = double(kQueries) * kRowsPerQuery * kRowBytes;
  auto time = [&](const char* name, double moved, auto&& launch) {
    float best = 1e30f;
    for (int r = 0; r < reps; ++r) {
      TRY(cudaEventRecord(a));
      launch();
      TRY(cudaEventRecord(b));
      TRY(cudaEventSynchronize(b));
      TRY(cudaGetLastError());
      float ms = 0;
      TRY(cudaEventElapsedTime(&ms, a, b));
      if (ms < best) best = ms;
    }
    std::printf("%-11s %8.3f ms  %7.1f GB/s\n", name, best, moved / (best * 1e-3) / 1e9);
  };
  time("dma", double(bytes),
       [&] { TRY(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice)); });
  time("warp-row", row_bytes, [&] { warp_row<<<kQueries, kThreads>>>(mapped, d_ids, d_out); });
  time("warp-4rows", row_bytes, [&] { warp_4rows<<<kQueries, kThreads>>>(mapped, d_ids, d_out); });
  time("bulk", row_bytes, [&] { bulk<<<kQueries, kThreads>>>(mapped, d_ids, d_out); });
  time("device", row_bytes, [&] { warp_row<<<kQueries, kThreads>>>(dev, d_ids, d_out); });
  time("warp-row", row_bytes, [&] { warp_row<<<kQueries, kThreads>>>(mapped, d_ids, d_out); });
  return 0;
}
