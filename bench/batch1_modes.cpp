// Batch-1 latency of one process over several fresh loads of one index: does a process's
// latency follow its allocations (each load gets new device and pinned host buffers) or the
// time? (bench/results/logs/batch1-modes-h200-ef0402b.txt: it follows the time.)
//
//   batch1_modes INDEX QUERIES [TRIALS (8)]
//
// Per trial: 3,000 warm-up queries at itopk 32, then 4 segments of 5,000 one-query calls, the
// microseconds a query of each segment. The last 4 loads stay alive.
#include <cagra/cagra.hpp>
#include <cagra/io.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>
using namespace cagra;
using clk = std::chrono::steady_clock;
int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: batch1_modes INDEX QUERIES [TRIALS]\n");
    return 2;
  }
  const std::string path = argv[1];
  host_matrix q = io::read_matrix(argv[2]);
  const int trials = argc > 3 ? std::stoi(argv[3]) : 8;
  const int64_t nq = q.rows();
  const uint32_t k = 10;
  std::vector<uint32_t> ids(k);
  std::vector<float> dist(k);
  search_params sp;
  sp.itopk_size = 32;
  resources res;
  std::vector<cagra::index> keep;  // keeps old loads alive, so each trial gets new addresses
  for (int t = 0; t < trials; ++t) {
    keep.push_back(cagra::load(path));
    const cagra::index& idx = keep.back();
    const auto* base = static_cast<const uint8_t*>(q.data());
    const size_t rb = q.view().row_bytes();
    auto one = [&](int64_t i) {
      dataset_view v(base + (i % nq) * rb, q.type(), 1, q.cols());
      search(res, sp, idx, v, k, {ids.data(), 1, k}, {dist.data(), 1, k});
    };
    for (int64_t i = 0; i < 3000; ++i) one(i);
    std::printf("trial %d:", t);
    for (int seg = 0; seg < 4; ++seg) {
      const auto t0 = clk::now();
      for (int64_t i = 0; i < 5000; ++i) one(i);
      std::printf(" %.2f",
                  std::chrono::duration<double, std::micro>(clk::now() - t0).count() / 5000);
    }
    std::printf(" us/query\n");
    std::fflush(stdout);
    if (keep.size() > 3) keep.erase(keep.begin());
  }
}
