// Does where a pinned host buffer lies set the GPU's round trip to it? The persistent batch-1
// kernel's CTA 0 polls mapped host memory (persistent.cuh) and every CTA writes its list there;
// the rate of a process falls into groups ~1.2 us apart (docs/cuda.md, "Two polls of the host in
// flight") that neither the host thread's core nor the poll's phase explains. This allocates
// BUFS mapped buffers of 2 MiB (cudaHostAlloc, as pinned_buffer does) and times, from one GPU
// thread, 200 dependent volatile 8-byte reads of each (the round trip of a poll), twice; with
// `pages`, then the same for each 4 KiB page of the first buffer (is the level the allocation's
// or the page's?).
//
//   nvcc -O2 -arch=sm_90 -o /tmp/pinned-rtt scripts/dev/pinned-rtt.cu
//   /tmp/pinned-rtt [BUFS [pages]]   (pages: logs/batch1-host-side-sift-wall-1m-h200-b458280.txt,
//   section 0: the level is each page's)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

__device__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/** Mean ns of `reps` dependent volatile reads of p[0] (each read's address depends on the last). */
__global__ void rtt(const volatile uint64_t* p, int reps, double* out) {
  uint64_t x = 0;
  const uint64_t t0 = now_ns();
  for (int i = 0; i < reps; ++i) x = p[x & 1];  // p[0] = p[1] = 0: always p[0], but dependent
  const uint64_t t1 = now_ns();
  *out = double(t1 - t0) / reps + (x == 12345 ? 1 : 0);
}

int main(int argc, char** argv) {
  const int bufs = argc > 1 ? std::atoi(argv[1]) : 24;
  const size_t bytes = size_t{2} << 20;
  std::vector<uint64_t*> b(bufs);
  for (int i = 0; i < bufs; ++i) {
    cudaHostAlloc(&b[i], bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    b[i][0] = b[i][1] = 0;
  }
  double* d;
  cudaMalloc(&d, sizeof(double));
  for (int pass = 0; pass < 2; ++pass) {
    std::printf("pass %d, round trip (ns) of each buffer:", pass);
    for (int i = 0; i < bufs; ++i) {
      rtt<<<1, 1>>>(b[i], 200, d);
      double h = 0;
      cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
      std::printf(" %.0f", h);
    }
    std::printf("\n");
  }
  if (argc > 2 && std::string(argv[2]) == "pages") {
    const size_t page_words = 4096 / sizeof(uint64_t), pages = bytes / 4096;
    for (size_t g = 0; g < pages; ++g) b[0][g * page_words] = b[0][g * page_words + 1] = 0;
    std::printf("round trip (ns) of each 4 KiB page of buffer 0:");
    for (size_t g = 0; g < pages; ++g) {
      rtt<<<1, 1>>>(b[0] + g * page_words, 100, d);
      double h = 0;
      cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
      std::printf(" %.0f", h);
    }
    std::printf("\n");
  }
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) std::printf("error: %s\n", cudaGetErrorString(e));
  return e != cudaSuccess;
}
