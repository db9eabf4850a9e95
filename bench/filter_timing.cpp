// Host time of a filtered call's filter work: cagra::plan_search of one query (the plan counts a
// shared bitset unless told its count; an index with deleted rows ANDs them into the filter,
// docs/filter.md), on a ROWS-row index (8-d u8 rows, a ring graph: the plan does not read them)
// without and with 1% of its rows deleted, under raw words (counted) and a row_bitset (count and
// stamp known), CALLS calls, three runs; with deletions, also core::visible_rows alone with the
// kept AND found by comparing the words and by the stamp alone (as cagra::search finds it when
// it checks the answers). The CUDA backend's comparison of a shared bitset with its device copy is
// not in it. Then the exact filtered path's list of allowed rows
// (core::allowed_ids through bench_hooks, built on every call of that path) of bitsets allowing
// 1% and 0.1% of the rows (every 100th / 1000th row, offset by a hash), CALLS / 4 times, three
// runs. A developer's measurement; the bench target `filter_timing` (CAGRA_BUILD_BENCH):
//
//   build/filter_timing [ROWS (1000000)] [CALLS (2000)]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>

#include <cagra/cagra.hpp>
#include <cagra/filter.hpp>
#include <cagra/plan.hpp>

#include "core/bench_hooks.hpp"

namespace {

/** A ROWS-row index the plan can take: 8-d u8 zeros, each row linked to the next two. */
cagra::index ring(int64_t rows) {
  cagra::host_matrix v(cagra::dtype::u8, rows, 8);
  std::vector<uint32_t> g(size_t(rows) * 2);
  for (int64_t r = 0; r < rows; ++r) {
    g[size_t(r) * 2] = uint32_t((r + 1) % rows);
    g[size_t(r) * 2 + 1] = uint32_t((r + 2) % rows);
  }
  return cagra::index(cagra::metric::l2, std::move(v), std::move(g), 2);
}

void time_plans(const char* what, const cagra::index& idx, const cagra::row_filter& f, int calls) {
  cagra::resources res;
  res.target = cagra::backend::cpu;
  for (int run = 0; run < 3; ++run) {
    int64_t sum = 0;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i)
      sum += cagra::plan_search(res, {}, idx, 10, 1, cagra::memory_space::host, f).allowed_rows;
    const auto t1 = std::chrono::steady_clock::now();
    std::printf("%-44s %8.2f us a call (allowed %lld)\n", what,
                std::chrono::duration<double, std::micro>(t1 - t0).count() / calls,
                (long long)(sum / calls));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 1000000;
  const int calls = argc > 2 ? std::atoi(argv[2]) : 2000;
  if (rows < 1 || calls < 1) {
    std::fprintf(stderr, "usage: filter_timing [ROWS >= 1] [CALLS >= 1]\n");
    return 2;
  }
  cagra::row_bitset b(rows);
  for (int64_t i = 0; i < rows; i += 3) b.set(i);
  const cagra::row_filter raw = cagra::row_filter::shared(b.words().data(), rows);
  cagra::index idx = ring(rows);
  time_plans("no filter", idx, {}, calls);
  time_plans("raw words (counted)", idx, raw, calls);
  time_plans("row_bitset (count known)", idx, b.view(), calls);
  std::vector<int64_t> gone(size_t(rows / 100));
  for (size_t i = 0; i < gone.size(); ++i) gone[i] = int64_t(i) * 100 + 7;
  cagra::resources cpu;
  cpu.target = cagra::backend::cpu;
  cagra::remove(cpu, idx, gone.data(), int64_t(gone.size()));
  time_plans("1% deleted, no filter", idx, {}, calls);
  time_plans("1% deleted, raw words (ANDed, counted)", idx, raw, calls);
  time_plans("1% deleted, row_bitset (the kept AND)", idx, b.view(), calls);
  for (const bool trusted : {false, true})
    for (int run = 0; run < 3; ++run) {
      int64_t sum = 0;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < calls; ++i)
        sum += cagra::bench_hooks::visible_allowed_rows(idx, b.view(), trusted);
      const auto t1 = std::chrono::steady_clock::now();
      std::printf(
          "%-44s %8.2f us a call (allowed %lld)\n",
          trusted ? "  its AND found by the stamp (search)" : "  its AND found by the words",
          std::chrono::duration<double, std::micro>(t1 - t0).count() / calls,
          (long long)(sum / calls));
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
