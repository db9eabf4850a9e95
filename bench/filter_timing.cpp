// Time of the host count of a filter bitset (cagra::row_bitset::count, the count the search plan
// makes on every filtered call: docs/benchmarks.md "Filtered search at small batches"): a
// bitset of ROWS rows with every third row allowed, counted CALLS times (one bit changed between
// calls), three runs. Then the exact filtered path's list of allowed rows (core::allowed_ids
// through bench_hooks, built on every call of that path) of bitsets allowing 1% and 0.1% of the
// rows (every 100th / 1000th row, offset by a hash), CALLS / 4 times, three runs. A developer's
// measurement; the bench target `filter_timing` (CAGRA_BUILD_BENCH):
//
//   build/filter_timing [ROWS (1000000)] [CALLS (2000)]
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <cagra/filter.hpp>

#include "core/bench_hooks.hpp"

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 2000;
  if (rows < 1 || calls < 1) {
    std::fprintf(stderr, "usage: filter_timing [ROWS >= 1] [CALLS >= 1]\n");
    return 2;
  }
  cagra::row_bitset b(rows);
  for (int64_t i = 0; i < rows; i += 3) b.set(i);
  int64_t sum = 0;
  for (int run = 0; run < 3; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) {
      sum += b.count();
      b.set(i % rows);
    }
    const auto t1 = std::chrono::steady_clock::now();
    std::printf("count of a %lld-row bitset: %.2f us a call (checksum %lld)\n", (long long)rows,
                std::chrono::duration<double, std::micro>(t1 - t0).count() / calls, (long long)sum);
  }
  for (const int64_t every : {int64_t{100}, int64_t{1000}}) {
    cagra::row_bitset sparse(rows);
    for (int64_t i = 0; i < rows; ++i)
      if ((uint64_t(i) * 2654435761u) % uint64_t(every) == 0) sparse.set(i);
    for (int run = 0; run < 3; ++run) {
      size_t got = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < calls / 4; ++i)
        got += cagra::bench_hooks::allowed_ids(sparse.view()).size();
      const auto t1 = std::chrono::steady_clock::now();
      std::printf("allowed rows of a %lld-row bitset allowing 1/%lld: %.2f us a call (%zu rows)\n",
                  (long long)rows, (long long)every,
                  std::chrono::duration<double, std::micro>(t1 - t0).count() / (calls / 4),
                  got / size_t(calls / 4));
    }
  }
  return 0;
}
