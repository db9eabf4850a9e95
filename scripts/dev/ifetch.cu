// How fast one warp runs straight-line code it has not run lately (a measurement for the batch-1
// kernel, which runs one warp a scheduler through ~100 KB of code): N integer multiply-adds
// (8 chains, so that no add waits on the previous one), run 4 times in a row, then again after
// the warp idled for a few microseconds, timed with the SM clock each time. Warm, code in the
// instruction cache, runs at ~1 instruction a clock; what a cold run costs more is the fetch.
//
//   nvcc -O3 -arch=sm_90 -o /tmp/ifetch scripts/dev/ifetch.cu && /tmp/ifetch
#include <cstdio>
#include <cuda_runtime.h>

template <int N>
__global__ void straight(unsigned long long* clocks, unsigned* sink, int reps, unsigned idle_ns,
                         unsigned m) {
  unsigned a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (int r = 0; r < reps; ++r) {
    if (r == reps - 1) {  // idle before the last run: does the code stay in the cache?
      unsigned long long t0;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
      for (;;) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t - t0 > idle_ns) break;
      }
    }
    __syncwarp();
    const long long c0 = clock64();
#pragma unroll
    for (int i = 0; i < N; ++i) a[i & 7] = a[i & 7] * m + unsigned(i);
    __syncwarp();
    const long long c1 = clock64();
    if (threadIdx.x == 0) clocks[r] = c1 - c0;
  }
  unsigned s = 0;
  for (int j = 0; j < 8; ++j) s += a[j];
  sink[threadIdx.x] = s;
}

template <int N>
void run(unsigned long long* d, unsigned* sink, unsigned idle_ns) {
  const int reps = 6;
  unsigned long long h[reps];
  straight<N><<<1, 32>>>(d, sink, reps, idle_ns, 0x9E3779B1u);
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  std::printf("%6d multiply-adds (%4d KB of code), idle %5u ns before the last run: clocks a run", N,
              N * 16 / 1024, idle_ns);
  for (int r = 0; r < reps; ++r) std::printf(" %6llu", h[r]);
  std::printf("  | clocks an instruction: first %.2f, warm %.2f, after idle %.2f\n", double(h[0]) / N,
              double(h[3]) / N, double(h[reps - 1]) / N);
}

int main() {
  unsigned long long* d;
  unsigned* sink;
  cudaMalloc(&d, 64 * 8);
  cudaMalloc(&sink, 32 * 4);
  for (unsigned idle : {0u, 10000u}) {
    run<256>(d, sink, idle);
    run<1024>(d, sink, idle);
    run<2048>(d, sink, idle);
    run<4096>(d, sink, idle);
    run<8192>(d, sink, idle);
  }
  return cudaDeviceSynchronize() != cudaSuccess;
}
