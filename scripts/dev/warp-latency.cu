// Latency of the warp steps the batch-1 kernel chains (one warp, each step waiting on the one
// before): a shuffle, a warp min reduction (__reduce_min_sync), a ballot and its popcount, a
// shared-memory load, an integer multiply-add, a 64-bit compare-and-select; SM clocks a step,
// the mean of a chain of 512 after a warm-up run.
//
//   nvcc -O3 -arch=sm_90 -o /tmp/warp-latency scripts/dev/warp-latency.cu && /tmp/warp-latency
#include <cstdio>
#include <cuda_runtime.h>

constexpr int kChain = 512;

__global__ void chains(long long* clocks, unsigned* sink, unsigned m) {
  __shared__ unsigned sm[64];
  const unsigned lane = threadIdx.x;
  sm[lane] = (lane + 1) & 31;
  sm[lane + 32] = lane;
  __syncwarp();
  unsigned v = lane, acc = 0;
  for (int rep = 0; rep < 2; ++rep) {  // the first run warms the code
    int slot = 0;
    long long c0 = clock64();
#pragma unroll 16
    for (int i = 0; i < kChain; ++i) v = __shfl_xor_sync(0xffffffffu, v, 1) + m;
    long long c1 = clock64();
    clocks[slot++] = c1 - c0;
    c0 = clock64();
#pragma unroll 16
    for (int i = 0; i < kChain; ++i) v = __reduce_min_sync(0xffffffffu, v + lane) + m;
    c1 = clock64();
    clocks[slot++] = c1 - c0;
    c0 = clock64();
#pragma unroll 16
    for (int i = 0; i < kChain; ++i) v = __popc(__ballot_sync(0xffffffffu, (v + lane) & 1)) + m;
    c1 = clock64();
    clocks[slot++] = c1 - c0;
    c0 = clock64();
#pragma unroll 16
    for (int i = 0; i < kChain; ++i) v = sm[(v + m) & 31];
    c1 = clock64();
    clocks[slot++] = c1 - c0;
    c0 = clock64();
#pragma unroll 16
    for (int i = 0; i < kChain; ++i) v = v * m + 7u;
    c1 = clock64();
    clocks[slot++] = c1 - c0;
    unsigned long long k = v;
    c0 = clock64();
#pragma unroll 16
    for (int i = 0; i < kChain; ++i) {
      const unsigned long long o = (k * 0x9E3779B97F4A7C15ull) >> 3;
      k = o < k ? o : k + m;
    }
    c1 = clock64();
    clocks[slot++] = c1 - c0;
    acc += unsigned(k);
    c0 = clock64();
#pragma unroll 16
    for (int i = 0; i < kChain; ++i) __syncwarp();
    c1 = clock64();
    clocks[slot++] = c1 - c0;
  }
  sink[lane] = v + acc;
}

int main() {
  long long* d;
  unsigned* sink;
  cudaMalloc(&d, 16 * 8);
  cudaMalloc(&sink, 32 * 4);
  chains<<<1, 32>>>(d, sink, 3u);
  long long h[7];
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  const char* names[7] = {"shfl_xor + add",     "reduce_min + add", "ballot + popc + add",
                          "shared load (index)", "multiply-add",     "64-bit mul, compare, select",
                          "__syncwarp"};
  for (int i = 0; i < 7; ++i)
    std::printf("%-28s %6.1f SM clocks a step\n", names[i], double(h[i]) / kChain);
  return cudaDeviceSynchronize() != cudaSuccess;
}
