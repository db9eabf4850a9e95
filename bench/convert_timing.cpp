// Time of the host conversion of user rows to the stored type (core::to_storage through
// bench_hooks: cosine
// normalization, f32 / f16 storage), on ROWS x DIM SYNTHETIC normal f32 rows, best of 3, with an
// FNV hash of the result so that two builds (e.g. two commits) can be compared for speed and
// bytes. A developer's measurement (docs/benchmarks.md, mpnet-1m "Build"); the bench target
// `convert_timing` (CAGRA_BUILD_BENCH):
//
//   build/convert_timing [ROWS (200000)] [DIM (768)] [THREADS (2)]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <tuple>
#include <vector>

#include "core/bench_hooks.hpp"

using namespace cagra;

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 200000;
  const int64_t dim = argc > 2 ? std::atoll(argv[2]) : 768;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  std::vector<float> x(size_t(rows * dim));
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  for (float& v : x) v = nd(rng);
  const dataset_view input(x.data(), dtype::f32, rows, dim);
  for (const auto& [m, s, name] : {std::tuple{metric::cosine, storage_type::f16, "cosine, f16"},
                                   std::tuple{metric::cosine, storage_type::f32, "cosine, f32"},
                                   std::tuple{metric::l2, storage_type::f16, "l2, f16"}}) {
    double best = 1e30;
    uint64_t hash = 0;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const host_matrix out = bench_hooks::to_storage(input, m, s, threads);
      best = std::min(best,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      hash = 1469598103934665603ull;
      const auto* p = static_cast<const uint8_t*>(out.data());
      for (size_t i = 0; i < out.size_bytes(); ++i) hash = (hash ^ p[i]) * 1099511628211ull;
    }
    std::printf("%lld x %lld, %d threads, %-12s %.3f s  bytes %016llx\n", (long long)rows,
                (long long)dim, threads, name, best, (unsigned long long)hash);
  }
  return 0;
}
