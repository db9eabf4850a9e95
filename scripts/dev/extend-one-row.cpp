// One-row extends of a large index on the CPU backend: what a call costs besides its row.
// Loads INDEX, then adds the rows of ROWS one extend call each (a stream of inserts), and prints
// the mean time a call by step (extend_report) and the rows a second; with --removed F, first
// removes a share F of the rows (so that the live bitset exists and is copied for the undo).
//
//   g++ -O2 -std=c++17 -fopenmp -Iinclude scripts/dev/extend-one-row.cpp build/libcagra.a -lz \
//       -o /tmp/extend-one-row && /tmp/extend-one-row INDEX ROWS [--removed 0.01] [--threads T]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: extend-one-row INDEX ROWS [--removed F] [--threads T]\n");
    return 2;
  }
  double removed = 0;
  int threads = 0;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--removed")) removed = std::atof(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
  }
  using clk = std::chrono::steady_clock;
  cagra::index idx = cagra::load(argv[1]);
  const cagra::host_matrix rows = cagra::io::read_matrix(argv[2]);
  cagra::resources res;
  res.target = cagra::backend::cpu;
  res.num_threads = threads;
  if (removed > 0) {
    std::vector<int64_t> gone;
    const int64_t step = int64_t(1.0 / removed);
    for (int64_t r = 0; r < idx.size(); r += step) gone.push_back(r);
    cagra::remove(res, idx, gone.data(), int64_t(gone.size()));
  }
  std::printf("index %lld rows x %u dims, degree %u; %lld rows to add one a call%s\n",
              (long long)idx.size(), idx.dim(), idx.graph_degree(), (long long)rows.rows(),
              removed > 0 ? " (after removing some)" : "");
  const auto add_row = [&](int64_t r, cagra::extend_report& rep) {
    cagra::dataset_view one = rows.view();
    one.data = rows.row_bytes(r);
    one.rows = 1;
    cagra::extend(res, cagra::extend_params{}, idx, one, nullptr, &rep);
  };
  // The first call grows the rows, the graph and the kept arrays by half (and computes the
  // in-degrees): timed apart, as a stream of inserts pays it once per growth.
  cagra::extend_report first;
  add_row(0, first);
  std::printf("the first call %.1f ms (setup %.1f ms: growth and in-degrees)\n",
              first.total_seconds * 1e3, first.setup_seconds * 1e3);
  cagra::extend_report sum;
  const auto t0 = clk::now();
  for (int64_t r = 1; r < rows.rows(); ++r) {
    cagra::extend_report rep;
    add_row(r, rep);
    sum += rep;
  }
  const double wall = std::chrono::duration<double>(clk::now() - t0).count();
  const double us = 1e6 / double(rows.rows() - 1);
  std::printf(
      "then %.0f rows/s; a call %.1f us: setup %.1f, search %.1f, prune %.1f, reverse %.1f, "
      "backends %.1f, the rest %.1f\n",
      double(rows.rows() - 1) / wall, wall * us, sum.setup_seconds * us, sum.search_seconds * us,
      sum.prune_seconds * us, sum.reverse_seconds * us, sum.device_seconds * us,
      (wall - sum.setup_seconds - sum.search_seconds - sum.prune_seconds - sum.reverse_seconds -
       sum.device_seconds) *
          us);
  return 0;
}
