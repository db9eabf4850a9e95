// The library's own pair_distance tiles (src/cpu/pair_distance.cpp) in NN-descent's join pattern:
// a node's 128 candidate rows drawn from a 4096-row pool, blocks of 4 of its first 64 rows against
// every row after them; l2 tiles against dot-product tiles, ns a pair. Linked against the static
// library, this program pulls pair_distance.o before distance.o (bench/results/logs/
// cpu-pair-tiles-dev-2core.txt: what that did before the tiles' instruction set was picked on
// first use).
//
//   ninja -C build cagra
//   g++ -O2 -std=c++17 -I src -I include scripts/dev/cpu-pair-tiles.cpp build/libcagra.a -fopenmp \
//     -o /tmp/cpu-pair-tiles && /tmp/cpu-pair-tiles 784 && /tmp/cpu-pair-tiles 128
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>
#include "cpu/pair_distance.hpp"
using namespace cagra;
int main(int argc, char** argv) {
  const size_t dim = argc > 1 ? atoi(argv[1]) : 784, pool = 4096;
  std::vector<float> x(pool * dim);
  std::mt19937 g(1);
  for (auto& v : x) v = float(g() % 256);
  for (int rep = 0; rep < 3; ++rep)
    for (metric m : {metric::l2, metric::inner_product}) {
      cpu::pair_distance<float> pd(m, dim);
      std::vector<const float*> rows(128);
      std::vector<float> d(4 * 128);
      double sink = 0;
      size_t pairs = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (int node = 0; node < 2000; ++node) {
        for (auto& r : rows) r = x.data() + (g() % pool) * dim;
        for (size_t a0 = 0; a0 < 64; a0 += 4) {
          const size_t first = a0 + 1, nb = 128 - first;
          pd.block(rows.data() + a0, 4, rows.data() + first, nb, d.data());
          sink += d[0];
          pairs += 4 * nb;
        }
      }
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("dim %zu %-13s %.2f ns a pair (%g)\n", dim, m == metric::l2 ? "l2" : "inner_product", s / pairs * 1e9, sink);
    }
}
