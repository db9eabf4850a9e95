// Does the SM a CTA runs on set its round trip to the host? The rate of a persistent batch-1
// process falls into levels ~1.2 us apart (docs/cuda.md, "What does not set a process's rate")
// that neither the host thread's core nor the page under the job's words explains; the kernel's
// CTAs land on SMs at launch and keep them for the process's life, and CTA 0 polls the host.
// For each SM in turn this runs one thread there (a grid of one CTA an SM, each CTA too large in
// shared memory for two to share an SM; only the CTA on the chosen SM works) and measures:
//   read: 200 dependent volatile 8-byte reads of one mapped host word (the GPU's read round trip,
//         pinned-rtt.cu's measure, always the same page);
//   ping: the host-GPU ping-pong of host-gpu-rtt.cu (the host writes a tagged word, the thread
//         polls it and writes a tagged reply the host spins on), CALLS calls, p50;
//   l2:   200 dependent reads of one device word through L2 (ld.cg; the relay's path from CTA 0
//         to the others).
// Two passes, so that a level that is the SM's shows twice.
//
//   nvcc -O2 -arch=sm_90 -o /tmp/sm-rtt scripts/dev/sm-rtt.cu
//   /tmp/sm-rtt [CALLS]   -> "sm S pass P read_ns R ping_ns p10 p50 p90 l2_ns L" a line each
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

__device__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ uint32_t sm_id() {
  uint32_t s;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
  return s;
}

constexpr uint64_t kReady = 1ull << 63;

/** The CTA on SM `target` measures; out[0] = read ns, out[1] = l2 ns; then it answers the host's
 *  ping-pong on job/reply until the job word is ~0. The others leave. */
__global__ void on_sm(uint32_t target, const volatile uint64_t* hw, const uint64_t* dw,
                      const volatile uint64_t* job, volatile uint64_t* reply, double* out) {
  extern __shared__ uint8_t one_cta_an_sm[];
  if (sm_id() != target) return;
  one_cta_an_sm[0] = 0;
  uint64_t x = 0;
  uint64_t t0 = now_ns();
  for (int i = 0; i < 200; ++i) x = hw[x & 1];  // hw[0] = hw[1] = 0: dependent reads of hw[0]
  uint64_t t1 = now_ns();
  out[0] = double(t1 - t0) / 200 + (x == 12345 ? 1 : 0);
  t0 = now_ns();
  for (int i = 0; i < 200; ++i) x = __ldcg(dw + (x & 1));
  t1 = now_ns();
  out[1] = double(t1 - t0) / 200 + (x == 12345 ? 1 : 0);
  *reply = kReady;
  for (uint64_t seq = 1;; ++seq) {
    uint64_t v;
    while ((v = *job) < seq) {
    }
    if (v == ~0ull) return;
    *reply = v;
  }
}

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 3000;
  int dev = 0, sms = 0, smem = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
  const int cta_smem = smem / 2 + 1024;  // two CTAs of this size do not fit one SM
  cudaFuncSetAttribute(on_sm, cudaFuncAttributeMaxDynamicSharedMemorySize, cta_smem);
  uint64_t *hw, *job, *reply, *dw;
  double* out;
  if (cudaHostAlloc(&hw, 4096, cudaHostAllocMapped) != cudaSuccess ||
      cudaHostAlloc(&job, 4096, cudaHostAllocMapped) != cudaSuccess ||
      cudaHostAlloc(&reply, 4096, cudaHostAllocMapped) != cudaSuccess ||
      cudaMalloc(&dw, 64) != cudaSuccess || cudaMalloc(&out, 2 * sizeof(double)) != cudaSuccess) {
    std::fprintf(stderr, "sm-rtt: allocation failed\n");
    return 1;
  }
  hw[0] = hw[1] = 0;
  cudaMemset(dw, 0, 64);
  using C = std::chrono::steady_clock;
  volatile uint64_t* j = job;
  const volatile uint64_t* r = reply;
  for (int pass = 0; pass < 2; ++pass) {
    for (int s = 0; s < sms; ++s) {
      *j = 0;
      *reply = 0;
      on_sm<<<sms, 1, cta_smem>>>(uint32_t(s), hw, dw, job, reply, out);
      const auto t_start = C::now();
      bool up = true;
      while (*r != kReady) {
        if (C::now() - t_start > std::chrono::milliseconds(500)) {
          up = false;
          break;
        }
      }
      std::vector<double> t;
      for (int i = 1; up && i <= calls; ++i) {
        const auto t0 = C::now();
        *j = uint64_t(i);
        while (*r != uint64_t(i)) {
          if (C::now() - t0 > std::chrono::seconds(1)) {
            std::fprintf(stderr, "sm-rtt: no reply in 1 s on SM %d\n", s);
            return 1;
          }
        }
        if (i > calls / 10)
          t.push_back(std::chrono::duration<double, std::nano>(C::now() - t0).count());
      }
      *j = ~0ull;
      if (cudaDeviceSynchronize() != cudaSuccess) {
        std::fprintf(stderr, "sm-rtt: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 1;
      }
      if (!up) {
        std::printf("sm %d pass %d no CTA landed there\n", s, pass);
        continue;
      }
      double h[2];
      cudaMemcpy(h, out, sizeof h, cudaMemcpyDeviceToHost);
      std::sort(t.begin(), t.end());
      std::printf("sm %d pass %d read_ns %.0f ping_ns %.0f %.0f %.0f l2_ns %.0f\n", s, pass, h[0],
                  t[t.size() / 10], t[t.size() / 2], t[t.size() * 9 / 10], h[1]);
      std::fflush(stdout);
    }
  }
  return 0;
}
