// Does a process's device memory set its random-read latency? The rate of a persistent batch-1
// process on SIFT-wall-1M falls into levels ~1.2 us apart that the host side (pinned pages, the
// host thread's core, the SM that polls: sm-rtt.cu) does not explain; a query is ~10 dependent
// reads of random rows (graph rows, then vectors) spread over ~256 MB of device memory, so ~0.12
// us more a read (address translation: how the driver maps a process's allocations) would make
// the gap. This allocates what a 1M x 128 u8 index of degree 32 holds (BUFS_MB, default two
// buffers of 128 MB) with cudaMalloc and times, from one thread and then from 64 CTAs at once
// (one thread each), dependent 4-byte reads of random 128-byte lines across all of them, and
// the same within one 2 MiB span (no translation misses) as the control. Run it in many
// processes: levels that hold within a process and differ between processes point at the
// mapping.
//
//   nvcc -O2 -arch=sm_90 -o /tmp/chase-levels scripts/dev/chase-levels.cu
//   /tmp/chase-levels [STEPS [MB ...]]  -> "wide1_ns W wide64_ns W64 narrow1_ns N ... addr A ..."
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

__device__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/** Each CTA's thread 0 follows the chain from starts[cta]: each word pair holds the packed
 *  (buffer << 40 | word offset) of the next step. out[cta] = ns a step. */
__global__ void chase(uint32_t* const* bufs, const uint64_t* starts, int steps, double* out) {
  if (threadIdx.x) return;
  uint64_t at = starts[blockIdx.x];
  const uint64_t t0 = now_ns();
  for (int i = 0; i < steps; ++i) {
    const uint32_t* w = bufs[at >> 40] + (at & ((1ull << 40) - 1));
    const uint2 v = __ldcg(reinterpret_cast<const uint2*>(w));
    at = uint64_t(v.y) << 32 | v.x;
  }
  const uint64_t t1 = now_ns();
  out[blockIdx.x] = double(t1 - t0) / steps + (at == ~0ull ? 1 : 0);
}

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 800;
  std::vector<size_t> mb;
  for (int a = 2; a < argc; ++a) mb.push_back(size_t(std::atoi(argv[a])));
  if (mb.empty()) mb = {128, 128};
  const size_t line_words = 32;  // 128 bytes
  std::vector<uint32_t*> d(mb.size());
  std::vector<std::vector<uint32_t>> h(mb.size());
  for (size_t b = 0; b < mb.size(); ++b) {
    if (cudaMalloc(&d[b], mb[b] << 20) != cudaSuccess) {
      std::fprintf(stderr, "chase-levels: cudaMalloc failed\n");
      return 1;
    }
    h[b].assign((mb[b] << 20) / 4, 0);
  }
  // One random cycle over every 7th line of all buffers (wide: 64 chains of STEPS steps never
  // meet), and one over the other lines of buffer 0's first 2 MiB (narrow).
  std::mt19937_64 rng(7);
  auto link = [&](std::vector<uint64_t>& order, uint32_t word) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < order.size(); ++i) {
      const uint64_t from = order[i], to = order[(i + 1) % order.size()];
      const uint64_t to_packed = (to >> 40) << 40 | ((to & ((1ull << 40) - 1)) + word);
      uint32_t* w = &h[from >> 40][(from & ((1ull << 40) - 1)) + word];
      w[0] = uint32_t(to_packed);
      w[1] = uint32_t(to_packed >> 32);
    }
  };
  std::vector<uint64_t> wide, narrow;
  for (size_t b = 0; b < mb.size(); ++b)
    for (size_t w = 0; w + line_words <= h[b].size(); w += 7 * line_words)  // far-apart chains
      wide.push_back(uint64_t(b) << 40 | w);
  for (size_t w = 0; w < (size_t{2} << 20) / 4; w += line_words)  // lines the wide one skips
    if (w / line_words % 7 != 0) narrow.push_back(w);
  link(wide, 0);
  link(narrow, 2);
  for (size_t b = 0; b < mb.size(); ++b)
    cudaMemcpy(d[b], h[b].data(), h[b].size() * 4, cudaMemcpyHostToDevice);
  uint32_t** dbufs;
  uint64_t* dstarts;
  double* out;
  cudaMalloc(&dbufs, d.size() * sizeof(uint32_t*));
  cudaMemcpy(dbufs, d.data(), d.size() * sizeof(uint32_t*), cudaMemcpyHostToDevice);
  cudaMalloc(&dstarts, 64 * sizeof(uint64_t));
  cudaMalloc(&out, 64 * sizeof(double));
  // CTA c of run k starts at entry c * n / 64 + k * STEPS of the (shuffled) cycle: no run reads
  // a line an earlier one brought into L2 (5 runs of STEPS fit between two chains).
  int k = 0;
  auto run = [&](const std::vector<uint64_t>& cycle, uint32_t word, int ctas) {
    std::vector<uint64_t> s(ctas);
    for (int c = 0; c < ctas; ++c)
      s[c] = cycle[(size_t(c) * cycle.size() / 64 + size_t(k) * steps) % cycle.size()] + word;
    ++k;
    cudaMemcpy(dstarts, s.data(), ctas * sizeof(uint64_t), cudaMemcpyHostToDevice);
    chase<<<ctas, 32>>>(dbufs, dstarts, steps, out);
    std::vector<double> r(ctas);
    cudaMemcpy(r.data(), out, ctas * sizeof(double), cudaMemcpyDeviceToHost);
    double sum = 0;
    for (double x : r) sum += x;
    return sum / ctas;
  };
  run(wide, 0, 64);  // warm: code, and the first touch of the mapping
  const double w1 = run(wide, 0, 1), w64 = run(wide, 0, 64), n1 = run(narrow, 2, 1);
  const double again = run(wide, 0, 1);
  std::printf("wide1_ns %.0f wide64_ns %.0f narrow1_ns %.0f wide1_again_ns %.0f addr", w1, w64, n1,
              again);
  for (auto* x : d) std::printf(" %p", static_cast<void*>(x));
  std::printf("\n");
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) std::fprintf(stderr, "chase-levels: %s\n", cudaGetErrorString(e));
  return e != cudaSuccess;
}
