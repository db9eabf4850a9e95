// Does the layout of the CTAs' lists in mapped host memory set their way back? The persistent
// batch-1 kernel's 64 CTAs each write list_k = 10 entries (16 bytes: id | tag << 32, distance
// bits | tag << 32) one after another, 160 bytes a list (host_lists.hpp), so most 64-byte lines
// hold parts of two CTAs' lists and most of a list's writes cover part of a line. This is that
// path without the search (as lists-rtt.cu, which wrote 32 entries a CTA at 512 bytes): CTA 0
// polls a mapped job word and relays it through L2, each CTA writes its entries with one 16-byte
// store a thread, and the host, once it has posted, waits for every list's first entry (`heads`)
// or for all of its entries (`all`). Layouts, interleaved call by call in one process:
//   lib:  10 entries at 160 bytes (the library's);
//   pad:  12 entries at 192 bytes (whole lines, each a CTA's own; entries 10, 11 padding);
//   l256: 10 entries at 256 bytes (a list from a line's start, its last line part-written);
// and `one`, CTA 0's first entry alone (the bare round trip). p50 and p90 in ns.
//
//   nvcc -O2 -arch=sm_90 -o /tmp/lists-layout scripts/dev/lists-layout.cu
//   /tmp/lists-layout [CALLS]   -> "mode p50 p90" a line each
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

constexpr uint32_t kCtas = 64, kMaxStride = 16;  // entries

struct layout {
  const char* name;
  uint32_t entries, stride, ctas, wait_all;
};
constexpr layout kModes[] = {{"one", 1, 16, 1, 0},       {"lib_heads", 10, 10, kCtas, 0},
                             {"pad_heads", 12, 12, kCtas, 0}, {"l256_heads", 10, 16, kCtas, 0},
                             {"lib_all", 10, 10, kCtas, 1},   {"pad_all", 12, 12, kCtas, 1},
                             {"l256_all", 10, 16, kCtas, 1}};
constexpr int kNumModes = sizeof(kModes) / sizeof(kModes[0]);

/** The job word: the call's tag (low 32 bits), the entries and the stride (entries) above. */
__global__ void lists_kernel(const volatile uint64_t* job, volatile uint64_t* relay,
                             uint64_t* lists) {
  __shared__ uint64_t seen;
  for (uint32_t seq = 1;; ++seq) {
    if (threadIdx.x == 0) {
      uint64_t v;
      if (blockIdx.x == 0) {
        while (uint32_t(v = *job) < seq) {
        }
        *relay = v;
      } else {
        while (uint32_t(v = *relay) < seq) {
        }
      }
      seen = v;
    }
    __syncthreads();
    const uint64_t v = seen;
    __syncthreads();
    if (v == ~0ull) return;
    const uint64_t tag = (v & 0xFFFFFFFFull) << 32;
    const uint32_t entries = uint32_t(v >> 32) & 0xFF, stride = uint32_t(v >> 40) & 0xFF,
                   ctas = uint32_t(v >> 48) & 0xFF;
    if (blockIdx.x < ctas && threadIdx.x < entries) {
      uint64_t* e = lists + 2 * (size_t{blockIdx.x} * stride + threadIdx.x);
      asm volatile("st.global.v2.u64 [%0], {%1, %2};" ::"l"(e),
                   "l"(tag | (blockIdx.x * 32 + threadIdx.x)), "l"(tag | threadIdx.x)
                   : "memory");
    }
  }
}

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 4000;
  uint64_t *job, *lists, *relay;
  const unsigned fl = cudaHostAllocMapped | cudaHostAllocPortable;  // as pinned_buffer has it
  const size_t list_words = size_t{kCtas} * kMaxStride * 2;
  if (cudaHostAlloc(&job, 4096, fl) != cudaSuccess ||
      cudaHostAlloc(&lists, list_words * 8, fl) != cudaSuccess ||
      cudaMalloc(&relay, 8) != cudaSuccess) {
    std::fprintf(stderr, "lists-layout: allocation failed\n");
    return 1;
  }
  *job = 0;
  std::fill(lists, lists + list_words, 0);
  cudaMemset(relay, 0, 8);
  lists_kernel<<<kCtas, 32>>>(job, relay, lists);
  volatile uint64_t* j = job;
  const volatile uint64_t* w = lists;
  using C = std::chrono::steady_clock;
  std::vector<double> t[kNumModes];
  std::vector<uint32_t> pending(kCtas), next(kCtas);
  for (int i = 1; i <= kNumModes * calls; ++i) {
    const layout& m = kModes[i % kNumModes];
    const uint32_t need = m.wait_all ? m.entries : 1;
    const auto t0 = C::now();
    *j = uint64_t(uint32_t(i)) | uint64_t{m.entries} << 32 | uint64_t{m.stride} << 40 |
         uint64_t{m.ctas} << 48;
    for (uint32_t l = 0; l < m.ctas; ++l) {
      pending[l] = l;
      next[l] = 0;
    }
    uint64_t passes = 0;
    for (uint32_t left = m.ctas; left > 0; ++passes) {
      for (uint32_t q = 0; q < left;) {
        const uint32_t l = pending[q];
        const volatile uint64_t* e = w + 2 * (size_t{l} * m.stride + next[l]);
        if (uint32_t(e[0] >> 32) == uint32_t(i) && uint32_t(e[1] >> 32) == uint32_t(i) &&
            ++next[l] == need)
          pending[q] = pending[--left];
        else
          ++q;
      }
      if (passes % 1024 == 1023 && C::now() - t0 > std::chrono::seconds(1)) {
        std::fprintf(stderr, "lists-layout: no lists in 1 s (%s)\n", m.name);
        return 1;
      }
    }
    if (i > kNumModes * calls / 10)
      t[i % kNumModes].push_back(std::chrono::duration<double, std::nano>(C::now() - t0).count());
  }
  *j = ~0ull;
  if (cudaDeviceSynchronize() != cudaSuccess) {
    std::fprintf(stderr, "lists-layout: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  for (int k = 0; k < kNumModes; ++k) {
    std::sort(t[k].begin(), t[k].end());
    std::printf("%s %.0f %.0f\n", kModes[k].name, t[k][t[k].size() / 2],
                t[k][t[k].size() * 9 / 10]);
  }
  return 0;
}
