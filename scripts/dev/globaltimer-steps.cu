// How often %globaltimer changes on this GPU (the persistent kernel spaces its polls of the host
// with it, persistent.cuh): one thread records 64 consecutive changes and their SM clocks.
//
//   nvcc -O2 -arch=sm_90 -o /tmp/gts scripts/dev/globaltimer-steps.cu && /tmp/gts
#include <cstdint>
#include <cstdio>
__global__ void k(unsigned long long* out, long long* clk) {
  unsigned long long prev, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(prev));
  int n = 0;
  long long c0 = clock64();
  while (n < 64) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    if (t != prev) {
      out[n++] = t - prev;
      prev = t;
    }
  }
  *clk = clock64() - c0;
}
int main() {
  unsigned long long* d;
  long long* c;
  cudaMalloc(&d, 64 * 8);
  cudaMalloc(&c, 8);
  k<<<1, 1>>>(d, c);
  unsigned long long h[64];
  long long hc;
  cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  cudaMemcpy(&hc, c, 8, cudaMemcpyDeviceToHost);
  unsigned long long s = 0;
  for (int i = 1; i < 64; ++i) s += h[i];
  printf("globaltimer steps (ns):");
  for (int i = 1; i < 17; ++i) printf(" %llu", h[i]);
  printf("\nmean step %.1f ns over 63; 64 steps took %lld SM clocks\n", s / 63.0, hc);
}
