// cagra::load of a large index, timed: `make PATH` writes a 1M x 384 f32 index whose vectors are
// SYNTHETIC (uniform random) and whose degree-64 graph is random (no build: only the file's size
// and layout matter here, 1.79 GB), `time PATH REPS` loads it REPS times in one process and
// prints each load's seconds (the first may include page-cache misses; later ones read it warm).
// Built against two trees' libcagra.a, it gives an interleaved A/B of the load path.
//
//   g++ -O2 -std=c++17 -I include -o /tmp/load-bench scripts/dev/load-bench.cpp \
//     build/libcagra.a -fopenmp -lpthread
//   /tmp/load-bench make /tmp/big.cagra && /tmp/load-bench time /tmp/big.cagra 2
#include <cagra/cagra.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
int main(int argc, char** argv) {
  if (std::strcmp(argv[1], "make") == 0) {
    const int64_t n = 1000000, d = 384, deg = 64;
    cagra::host_matrix x(cagra::dtype::f32, n, d);
    std::mt19937 g(1);
    std::uniform_real_distribution<float> u(0, 1);
    for (int64_t i = 0; i < n * d; ++i) x.as<float>().data[i] = u(g);
    std::vector<uint32_t> graph(size_t(n * deg));
    for (auto& v : graph) v = g() % n;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < deg; ++j)
        if (graph[i * deg + j] == i) graph[i * deg + j] = (i + 1) % n;
    cagra::index idx(cagra::metric::l2, std::move(x), std::move(graph), deg);
    cagra::save(idx, argv[2]);
    return 0;
  }
  const int reps = std::atoi(argv[3]);
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    cagra::index idx = cagra::load(argv[2]);
    auto t1 = std::chrono::steady_clock::now();
    std::printf("load %.3f s (%lld rows)\n", std::chrono::duration<double>(t1 - t0).count(),
                (long long)idx.size());
  }
}
