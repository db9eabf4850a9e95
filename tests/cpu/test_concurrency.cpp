// The CPU backend under concurrent callers: 8 host threads searching one index at once (each call
// single-threaded or with its own OpenMP team), callers of the latency path (algo multi_cta) at
// once, and two builds at once, must give exactly the single-threaded results (the latency path
// on a team: close to them). Small synthetic data, so that the thread sanitizer can run it
// (scripts/sanitize.sh; docs/dev/sanitizers.md has the TSan recipe).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "test_data.hpp"

namespace cagra::test {
namespace {

/** n x dim f32 values on a grid from a fixed xorshift stream (no ties to speak of). */
host_matrix synthetic(int64_t n, int64_t dim, uint64_t seed) {
  host_matrix m(dtype::f32, n, dim);
  float* p = static_cast<float*>(m.data());
  uint64_t x = seed | 1;
  for (int64_t i = 0; i < n * dim; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    p[i] = static_cast<float>(x % 1000) / 100.0f;
  }
  return m;
}

resources cpu(int threads) {
  resources r;
  r.target = backend::cpu;
  r.num_threads = threads;
  return r;
}

index_params params() {
  index_params p;
  p.graph_degree = 16;
  p.intermediate_graph_degree = 32;
  return p;
}

/** Runs body(t) on `threads` host threads at once; what each returned or threw ("" = fine). */
template <typename Body>
std::vector<std::string> run_callers(int threads, Body body) {
  std::vector<std::string> failures(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        failures[size_t(t)] = body(t);
      } catch (const std::exception& e) {
        failures[size_t(t)] = e.what();
      }
    });
  for (std::thread& th : pool) th.join();
  return failures;
}

TEST(Concurrency, EightThreadsSearchOneIndex) {
  const host_matrix base = synthetic(1500, 16, 1);
  const host_matrix q = synthetic(40, 16, 2);
  const cagra::index idx = build(cpu(2), params(), base);
  const uint32_t k = 10;
  search_params sp;
  sp.itopk_size = 32;
  std::vector<uint32_t> want(size_t(q.rows()) * k);
  std::vector<float> want_d(want.size());
  search(cpu(1), sp, idx, q, k, {want.data(), q.rows(), k}, {want_d.data(), q.rows(), k});

  const std::vector<std::string> failures = run_callers(8, [&](int t) -> std::string {
    // Threads 0-5 call with one thread each (query by query and the batch), 6-7 with a team
    // of 2, so that OpenMP teams of different callers overlap too.
    const resources res = cpu(t < 6 ? 1 : 2);
    std::vector<uint32_t> ids(want.size());
    std::vector<float> d(want.size());
    for (int round = 0; round < 2; ++round) {
      for (int64_t i = 0; i < q.rows(); ++i) {
        const int64_t row = (i + t * 5) % q.rows();  // threads start at different queries
        const dataset_view one(q.row_bytes(row), q.type(), 1, q.cols());
        search(res, sp, idx, one, k, {ids.data() + row * k, 1, k}, {d.data() + row * k, 1, k});
      }
      if (ids != want || d != want_d) return "batch-1 answers differ";
      search(res, sp, idx, q, k, {ids.data(), q.rows(), k}, {d.data(), q.rows(), k});
      if (ids != want || d != want_d) return "batch answers differ";
    }
    return "";
  });
  for (size_t t = 0; t < failures.size(); ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST(Concurrency, LatencyPathCallersAtOnce) {
  // algo multi_cta: each call walks a query with several walkers sharing one visited set, kept
  // per calling thread. Callers with one thread each must get the one-thread answer exactly (the
  // walkers run in turn); callers with a team of 3 race only inside their own call.
  const host_matrix base = synthetic(1500, 16, 4);
  const host_matrix q = synthetic(40, 16, 5);
  const cagra::index idx = build(cpu(2), params(), base);
  const uint32_t k = 10;
  search_params sp;
  sp.itopk_size = 64;
  sp.algo = search_algo::multi_cta;
  std::vector<uint32_t> want(size_t(q.rows()) * k);
  search(cpu(1), sp, idx, q, k, {want.data(), q.rows(), k}, {});

  const std::vector<std::string> failures = run_callers(6, [&](int t) -> std::string {
    const bool team = t >= 4;
    std::vector<uint32_t> ids(want.size());
    for (int64_t i = 0; i < q.rows(); ++i) {
      const int64_t row = (i + t * 7) % q.rows();
      const dataset_view one(q.row_bytes(row), q.type(), 1, q.cols());
      search(cpu(team ? 3 : 1), sp, idx, one, k, {ids.data() + row * k, 1, k}, {});
    }
    if (!team) return ids == want ? "" : "one-thread answers differ";
    size_t found = 0;  // the one-thread answers a team's found, in any order
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto row = ids.begin() + static_cast<std::ptrdiff_t>(i / k * k);
      found += std::find(row, row + k, want[i]) != row + k;
    }
    return found >= ids.size() * 9 / 10 ? "" : "team answers far from one thread's";
  });
  for (size_t t = 0; t < failures.size(); ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST(Concurrency, TwoBuildsAtOnce) {
  const host_matrix base = synthetic(800, 8, 3);
  const cagra::index want = build(cpu(1), params(), base);
  const auto g = want.graph();
  const std::vector<uint32_t> want_graph(g.data, g.data + g.size());
  std::vector<std::vector<uint32_t>> got(2);
  const std::vector<std::string> failures = run_callers(2, [&](int t) -> std::string {
    const cagra::index idx = build(cpu(t + 1), params(), base);
    got[size_t(t)].assign(idx.graph().data, idx.graph().data + idx.graph().size());
    return "";
  });
  for (size_t t = 0; t < 2; ++t) {
    EXPECT_EQ(failures[t], "") << "thread " << t;
    EXPECT_EQ(got[t], want_graph) << "thread " << t;
  }
}

}  // namespace
}  // namespace cagra::test
