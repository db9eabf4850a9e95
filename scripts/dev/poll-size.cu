// Does the size of CTA 0's poll of the host set its round trip? The persistent batch-1 kernel's
// CTA 0 polls the job's words (35 LL words at SIFT's 128 bytes: 280 bytes, 5 lines, and the
// stop flag's 16 bytes) as cp.async.cg copies of 16 bytes a thread (persistent.cuh); traced, its
// finding poll takes 1.5-1.7 us from issue to landing, against 1.10-1.26 us for one thread's
// 8-byte read of mapped memory (sm-rtt.cu). Here one CTA polls a mapped host buffer as the
// kernel does, CHUNKS 16-byte copies by as many threads, one poll at a time, each waited for
// (cp.async.wait_all and a barrier), 2,000 polls a size, sizes interleaved; with the host idle
// (`idle`) and with a host thread rewriting the buffer's words all the time (`busy`: each poll
// then reads lines the host core holds modified, as the kernel's poll after a post does).
// Prints p10/p50/p90 ns by size.
//
//   nvcc -O2 -arch=sm_90 -o /tmp/poll-size scripts/dev/poll-size.cu
//   /tmp/poll-size   -> "mode chunks bytes p10 p50 p90" a line each
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

constexpr int kNumSizes = 6;
struct poll_sizes {
  int chunks[kNumSizes];  // 16-byte copies a poll
};
constexpr poll_sizes kSizes{{1, 2, 4, 8, 18, 32}};
constexpr int kPolls = 2000;

__device__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void poll_kernel(const uint64_t* host, uint64_t* out, poll_sizes sizes) {
  __shared__ __align__(16) uint64_t buf[64];
  for (int p = 0; p < kPolls; ++p)
    for (int s = 0; s < kNumSizes; ++s) {
      const int chunks = sizes.chunks[s];
      __syncthreads();
      const uint64_t t0 = now_ns();
      if (threadIdx.x < chunks) {
        const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(buf + 2 * threadIdx.x));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d),
                     "l"(host + 2 * threadIdx.x)
                     : "memory");
      }
      asm volatile("cp.async.commit_group;\n" ::: "memory");
      asm volatile("cp.async.wait_all;\n" ::: "memory");
      __syncthreads();
      if (threadIdx.x == 0) out[size_t(s) * kPolls + p] = now_ns() - t0 + (buf[0] == 7 ? 1 : 0);
    }
}

int main() {
  uint64_t *host, *out;
  if (cudaHostAlloc(&host, 4096, cudaHostAllocMapped | cudaHostAllocPortable) != cudaSuccess ||
      cudaMalloc(&out, sizeof(uint64_t) * kNumSizes * kPolls) != cudaSuccess) {
    std::fprintf(stderr, "poll-size: allocation failed\n");
    return 1;
  }
  std::fill(host, host + 512, 0);
  std::vector<uint64_t> h(size_t(kNumSizes) * kPolls);
  for (const char* mode : {"idle", "busy", "idle", "busy"}) {
    std::atomic<bool> stop{false};
    std::thread writer;
    if (mode[0] == 'b')
      writer = std::thread([&] {
        volatile uint64_t* w = host;
        for (uint64_t v = 1; !stop.load(std::memory_order_relaxed); ++v)
          for (int i = 0; i < 64; ++i) w[i] = v;
      });
    poll_kernel<<<1, 256>>>(host, out, kSizes);
    const cudaError_t e = cudaDeviceSynchronize();
    stop = true;
    if (writer.joinable()) writer.join();
    if (e != cudaSuccess) {
      std::fprintf(stderr, "poll-size: %s\n", cudaGetErrorString(e));
      return 1;
    }
    cudaMemcpy(h.data(), out, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost);
    for (int s = 0; s < kNumSizes; ++s) {
      std::vector<uint64_t> v(h.begin() + size_t(s) * kPolls, h.begin() + size_t(s + 1) * kPolls);
      std::sort(v.begin(), v.end());
      std::printf("%s chunks %2d bytes %3d p10 %llu p50 %llu p90 %llu\n", mode, kSizes.chunks[s],
                  16 * kSizes.chunks[s], (unsigned long long)v[kPolls / 10],
                  (unsigned long long)v[kPolls / 2], (unsigned long long)v[kPolls * 9 / 10]);
    }
  }
  return 0;
}
