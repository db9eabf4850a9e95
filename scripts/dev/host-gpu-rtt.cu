// The host-GPU round trip the persistent batch-1 search makes once a call, alone: the host
// writes a tagged word into mapped memory (the job), one GPU thread polls it and writes a tagged
// reply into another mapped word (the lists), which the host spins on. The words are written by
// the host core just before the GPU reads them, so the GPU's read is served from that core's
// cache, and the reply's write invalidates a line the core then reads: the round trip depends on
// where the core sits. scripts/dev/device-batch1-cores.sh runs it pinned to a core just before
// the batch-1 bench on the same core, to see whether a process's rate follows it.
//
//   nvcc -O2 -arch=sm_90 -o /tmp/host-gpu-rtt scripts/dev/host-gpu-rtt.cu
//   /tmp/host-gpu-rtt [CALLS]   -> "rtt_ns p10 P50 p90" (the first tenth of the calls dropped)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void responder(const volatile uint64_t* job, volatile uint64_t* reply) {
  for (uint64_t seq = 1;; ++seq) {
    uint64_t v;
    while ((v = *job) < seq) {
    }
    if (v == ~0ull) return;
    *reply = v;
  }
}

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 20000;
  uint64_t *job, *reply;
  if (cudaHostAlloc(&job, 4096, cudaHostAllocMapped) != cudaSuccess ||
      cudaHostAlloc(&reply, 4096, cudaHostAllocMapped) != cudaSuccess) {
    std::fprintf(stderr, "host-gpu-rtt: cudaHostAlloc failed\n");
    return 1;
  }
  *job = 0;
  *reply = 0;
  responder<<<1, 1>>>(job, reply);
  volatile uint64_t* j = job;
  const volatile uint64_t* r = reply;
  std::vector<double> t;
  using C = std::chrono::steady_clock;
  for (int i = 1; i <= calls; ++i) {
    const auto t0 = C::now();
    *j = uint64_t(i);
    while (*r != uint64_t(i)) {
      if (C::now() - t0 > std::chrono::seconds(2)) {
        std::fprintf(stderr, "host-gpu-rtt: no reply in 2 s\n");
        return 1;
      }
    }
    if (i > calls / 10) t.push_back(std::chrono::duration<double, std::nano>(C::now() - t0).count());
  }
  *j = ~0ull;
  cudaDeviceSynchronize();
  std::sort(t.begin(), t.end());
  std::printf("rtt_ns %.0f %.0f %.0f\n", t[t.size() / 10], t[t.size() / 2], t[t.size() * 9 / 10]);
  return 0;
}
