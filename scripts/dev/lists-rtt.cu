// Is a slow batch-1 process slow in the host's reads of the lists? Traced on SIFT-wall-1M
// (scripts/dev/device-batch1-levels.sh), the persistent kernel's body is the same in every
// process (8.1 us) while the time outside it differs by process (3.4-3.7 us against 4.9-5.8):
// the post reaching CTA 0, or the 64 CTAs' lists reaching the host, which reads one cache line
// the GPU has just written for each list's first entry (host_lists.cu). This is that path without
// the search: CTA 0 polls a mapped job word and relays it through L2, every CTA writes a list of
// 32 tagged entries (16 bytes each, lists 512 bytes apart, as the library's lists are), and the
// host, once it has posted, waits as merge_host_lists does. Three waits, interleaved in one
// process: `one` (CTA 0's first entry only: the bare path), `heads` (every list's first entry:
// 64 lines), `packed` (the first entries again, written also into one 1 KiB block: 16 lines).
// Run it in many processes: if `heads` moves by process and `one` does not, the level is the
// host's reads of the lines the GPU wrote; the guest-physical frames of the buffers are printed
// with it (from /proc/self/pagemap, where readable).
//
//   nvcc -O2 -arch=sm_90 -o /tmp/lists-rtt scripts/dev/lists-rtt.cu
//   /tmp/lists-rtt [CALLS]   -> "one_ns p50 heads_ns p50 packed_ns p50 | frames ..."
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr uint32_t kCtas = 64, kEntries = 32, kListWords = 2 * kEntries;

__global__ void lists_kernel(const volatile uint64_t* job, volatile uint64_t* relay,
                             uint64_t* lists, uint64_t* packed) {
  __shared__ uint64_t seen;
  for (uint64_t seq = 1;; ++seq) {
    if (threadIdx.x == 0) {
      uint64_t v;
      if (blockIdx.x == 0) {
        while ((v = *job) < seq) {
        }
        *relay = v;
      } else {
        while ((v = *relay) < seq) {
        }
      }
      seen = v;
    }
    __syncthreads();
    const uint64_t v = seen;
    __syncthreads();
    if (v == ~0ull) return;
    const uint64_t tag = (v & 0xFFFFFFFFull) << 32;
    volatile uint64_t* l = lists + size_t{blockIdx.x} * kListWords;
    l[2 * threadIdx.x] = tag | (blockIdx.x * kEntries + threadIdx.x);
    l[2 * threadIdx.x + 1] = tag | threadIdx.x;
    if (threadIdx.x == 0) {
      volatile uint64_t* p = packed + 2 * blockIdx.x;
      p[0] = tag | blockIdx.x;
      p[1] = tag;
    }
  }
}

/** The guest-physical frame of p's page (0 where pagemap does not say). */
uint64_t frame_of(const void* p) {
  const int fd = open("/proc/self/pagemap", O_RDONLY);
  if (fd < 0) return 0;
  uint64_t e = 0;
  const off_t at = off_t(reinterpret_cast<uintptr_t>(p) / 4096) * 8;
  const bool ok = pread(fd, &e, 8, at) == 8;
  close(fd);
  return ok && (e >> 63) ? e & ((1ull << 55) - 1) : 0;
}

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 6000;
  uint64_t *job, *lists, *packed, *relay;
  const unsigned fl = cudaHostAllocMapped | cudaHostAllocPortable;  // as pinned_buffer has it
  if (cudaHostAlloc(&job, 4096, fl) != cudaSuccess ||
      cudaHostAlloc(&lists, kCtas * kListWords * 8, fl) != cudaSuccess ||
      cudaHostAlloc(&packed, 4096, fl) != cudaSuccess || cudaMalloc(&relay, 8) != cudaSuccess) {
    std::fprintf(stderr, "lists-rtt: allocation failed\n");
    return 1;
  }
  *job = 0;
  std::fill(lists, lists + kCtas * kListWords, 0);
  std::fill(packed, packed + 512, 0);
  cudaMemset(relay, 0, 8);
  lists_kernel<<<kCtas, kEntries>>>(job, relay, lists, packed);
  volatile uint64_t* j = job;
  using C = std::chrono::steady_clock;
  // wait: 0 = CTA 0's first entry, 1 = every list's first entry, 2 = the packed first entries.
  const auto arrived = [&](int wait, uint32_t l, uint32_t tag) {
    const volatile uint64_t* w = wait == 2 ? packed + 2 * l : lists + size_t{l} * kListWords;
    return uint32_t(w[0] >> 32) == tag && uint32_t(w[1] >> 32) == tag;
  };
  std::vector<double> t[3];
  std::vector<uint32_t> pending(kCtas);
  for (int i = 1; i <= 3 * calls; ++i) {
    const int wait = i % 3;
    const uint32_t n = wait == 0 ? 1 : kCtas;
    const auto t0 = C::now();
    *j = uint64_t(i);
    for (uint32_t l = 0; l < n; ++l) pending[l] = l;
    for (uint32_t left = n; left > 0;) {
      for (uint32_t q = 0; q < left;) {
        if (arrived(wait, pending[q], uint32_t(i)))
          pending[q] = pending[--left];
        else
          ++q;
      }
      if (C::now() - t0 > std::chrono::seconds(1)) {
        std::fprintf(stderr, "lists-rtt: no lists in 1 s\n");
        return 1;
      }
    }
    if (i > 3 * calls / 10) t[wait].push_back(std::chrono::duration<double, std::nano>(C::now() - t0).count());
  }
  *j = ~0ull;
  if (cudaDeviceSynchronize() != cudaSuccess) {
    std::fprintf(stderr, "lists-rtt: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  for (auto& v : t) std::sort(v.begin(), v.end());
  std::printf("one_ns %.0f heads_ns %.0f packed_ns %.0f | frames job %llx lists", t[0][t[0].size() / 2],
              t[1][t[1].size() / 2], t[2][t[2].size() / 2], (unsigned long long)frame_of(job));
  for (uint32_t p = 0; p < kCtas * kListWords * 8 / 4096; ++p)
    std::printf(" %llx", (unsigned long long)frame_of(reinterpret_cast<char*>(lists) + p * 4096));
  std::printf(" packed %llx\n", (unsigned long long)frame_of(packed));
  return 0;
}
