// core::reverse_and_merge against the version before 38647ec (every thread walked all n d edges
// of a transposed copy; merge_row searched its output linearly), on a random pruned graph of
// ROWS x 32, both in one process, two rounds; also merge_row alone, old and new. A developer's
// measurement (docs/large_builds.md "The graph optimization"); the bench target
// `reverse_merge_ab` (CAGRA_BUILD_BENCH):
//
//   build/reverse_merge_ab ROWS THREADS
#include <omp.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>
#include "core/bench_hooks.hpp"
using namespace cagra;
static std::vector<uint32_t> old_rm(const std::vector<uint32_t>& pruned, int64_t n, uint32_t degree,
                                    int num_threads) {
  const size_t d = degree, nd = size_t(n) * d;
  std::vector<uint32_t> by_rank(nd);
  constexpr int64_t kBlock = 4096;
#pragma omp parallel for num_threads(num_threads) schedule(static)
  for (int64_t x0 = 0; x0 < n; x0 += kBlock) {
    const int64_t x1 = std::min(n, x0 + kBlock);
    for (size_t r = 0; r < d; ++r)
      for (int64_t x = x0; x < x1; ++x)
        by_rank[r * size_t(n) + size_t(x)] = pruned[size_t(x) * d + r];
  }
  std::vector<uint32_t> rev(nd, 0xFFFFFFFFu), count(size_t(n), 0u);
  const int walkers = int(std::max<int64_t>(1, std::min<int64_t>({num_threads, 16, n / 1024 + 1})));
#pragma omp parallel num_threads(walkers)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const uint32_t lo = uint32_t(n * t / nt), hi = uint32_t(n * (t + 1) / nt);
    for (size_t r = 0; r < d; ++r) {
      const uint32_t* edges = by_rank.data() + r * size_t(n);
      for (int64_t x = 0; x < n; ++x) {
        const uint32_t y = edges[x];
        if (y < lo || y >= hi) continue;
        uint32_t& c = count[y];
        if (c < degree) rev[size_t(y) * d + c++] = uint32_t(x);
      }
    }
  }
  by_rank = {};
  std::vector<uint32_t> graph(nd);
#pragma omp parallel for num_threads(num_threads) schedule(static)
  for (int64_t x = 0; x < n; ++x)
    bench_hooks::merge_row(pruned.data() + size_t(x) * d, rev.data() + size_t(x) * d,
                           count[size_t(x)], degree, graph.data() + size_t(x) * d);
  return graph;
}
static void old_merge_row(const uint32_t* p, const uint32_t* r, uint32_t n_rev, uint32_t degree,
                          uint32_t* out) {
  const uint32_t rev_quota = degree / 2;
  uint32_t n_out = 0, ip = 0, ir = 0, taken_rev = 0;
  auto contains = [&](uint32_t id) { return std::find(out, out + n_out, id) != out + n_out; };
  bool rev_turn = false;
  while (n_out < degree) {
    bool use_rev = (rev_turn && taken_rev < rev_quota && ir < n_rev) || ip >= degree;
    if (use_rev) {
      if (ir >= n_rev) break;
      uint32_t id = r[ir++];
      if (!contains(id)) {
        out[n_out++] = id;
        ++taken_rev;
      }
    } else {
      uint32_t id = p[ip++];
      if (!contains(id)) out[n_out++] = id;
    }
    rev_turn = !rev_turn;
  }
}
int main(int argc, char** argv) {
  if (argc != 3 || atoll(argv[1]) < 2 || atoi(argv[2]) < 1) {
    std::fprintf(stderr, "usage: reverse_merge_ab ROWS THREADS (ROWS >= 2, THREADS >= 1)\n");
    return 2;
  }
  const int64_t n = atoll(argv[1]);
  const uint32_t d = 32;
  const int t = atoi(argv[2]);
  std::vector<uint32_t> pruned(size_t(n) * d);
  std::mt19937_64 rng(3);
  for (int64_t x = 0; x < n; ++x)
    for (uint32_t r = 0; r < d; ++r) {
      uint32_t y;
      do {
        y = uint32_t(rng() % uint64_t(n));
      } while (y == uint32_t(x));
      pruned[size_t(x) * d + r] = y;
    }
  {
    std::vector<uint32_t> graph(pruned.size());
    auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for num_threads(t) schedule(static)
    for (int64_t x = 0; x < n; ++x)
      cagra::bench_hooks::merge_row(pruned.data() + size_t(x) * d,
                                    pruned.data() + size_t((x * 7919) % n) * d, d, d,
                                    graph.data() + size_t(x) * d);
    std::printf("merge_row alone %.2f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::vector<uint32_t> g2(pruned.size());
    t0 = std::chrono::steady_clock::now();
#pragma omp parallel for num_threads(t) schedule(static)
    for (int64_t x = 0; x < n; ++x)
      old_merge_row(pruned.data() + size_t(x) * d, pruned.data() + size_t((x * 7919) % n) * d, d, d,
                    g2.data() + size_t(x) * d);
    std::printf("old merge_row alone %.2f s same=%d\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                int(graph == g2));
  }
  for (int round = 0; round < 2; ++round) {
    auto t0 = std::chrono::steady_clock::now();
    auto a = old_rm(pruned, n, d, t);
    auto t1 = std::chrono::steady_clock::now();
    auto b = bench_hooks::reverse_and_merge(pruned, n, d, t);
    auto t2 = std::chrono::steady_clock::now();
    std::printf("n=%lld threads=%d old %.2f s new %.2f s same=%d\n", (long long)n, t,
                std::chrono::duration<double>(t1 - t0).count(),
                std::chrono::duration<double>(t2 - t1).count(), int(a == b));
  }
}
