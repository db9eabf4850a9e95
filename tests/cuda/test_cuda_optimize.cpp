// GPU graph optimization (src/cuda/graph/optimize.cu, reverse_merge.cu) against the CPU oracle
// (cpu::optimize): the same bytes for
//  - the exact kNN graphs of bigann10k (K = 64 and 128; degree 32 and 64; rank and distance),
//  - an NN-descent graph,
//  - every optimize_steps combination,
//  - synthetic edge cases: degree == K, degree 1, 2 and odd, K = 1, nodes without reverse edges,
//    in-degree hubs, tied / equal / NaN distances, several launch chunks, K from 1 to 515 (both
//    detour loops: 16-byte loads when 4 divides K, scalar otherwise),
// and the same errors (message text without the file:line) for bad ids and bad parameters.
// Prints GPU vs CPU time for bigann10k and the GPU time for a random 1M x 128 graph (paper Q-A2).
// Needs a GPU: label `cuda`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include "bigann_fixture.hpp"
#include "cpu/backend.hpp"
#include "cuda/graph/optimize.hpp"
#include "cuda/testing.hpp"

namespace cagra::test {
namespace {

using clk = std::chrono::steady_clock;
double since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

const char* kind_name(reorder_kind k) { return k == reorder_kind::rank ? "rank" : "distance"; }

/** GPU == CPU byte for byte; reports the first differing entry. */
void expect_same(const knn_graph& knn, uint32_t d, reorder_kind kind, cpu::optimize_steps steps,
                 const std::string& what, double* gpu_s = nullptr, double* cpu_s = nullptr) {
  auto t0 = clk::now();
  const std::vector<uint32_t> c = cpu::optimize(knn, d, kind, steps, 0, {});
  if (cpu_s) *cpu_s = since(t0);
  t0 = clk::now();
  const std::vector<uint32_t> g = cuda::optimize(knn, d, kind, steps, 0, {});
  if (gpu_s) *gpu_s = since(t0);
  ASSERT_EQ(g.size(), c.size()) << what;
  const auto mm = std::mismatch(g.begin(), g.end(), c.begin());
  if (mm.first != g.end()) {
    const size_t i = size_t(mm.first - g.begin());
    FAIL() << what << " (" << kind_name(kind) << ", d=" << d << ", reorder=" << steps.reorder
           << ", reverse=" << steps.reverse << "): first difference at row " << i / d << " col "
           << i % d << ": gpu " << g[i] << " cpu " << c[i];
  }
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/** Random kNN-shaped graph: distinct ids in [0, id_range) (default n) per row, or within
 *  `window` of the row (mod n, many shared neighbours: many detours), never self;
 *  distances increasing along the row (a random start and step per row). */
knn_graph random_graph(int64_t n, uint32_t k, uint64_t seed, int64_t id_range = 0,
                       int64_t window = 0) {
  if (id_range == 0) id_range = n;
  knn_graph g;
  g.rows = n;
  g.k = k;
  g.ids.resize(size_t(n) * k);
  g.distances.resize(size_t(n) * k);
  uint32_t slots = 1;
  while (slots < 4 * k) slots <<= 1;
#pragma omp parallel
  {
    std::vector<uint32_t> table(slots), stamp(slots, 0);
    uint32_t gen = 0;
#pragma omp for schedule(static)
    for (int64_t x = 0; x < n; ++x) {
      ++gen;
      uint64_t s = seed * 0x2545F4914F6CDD1Dull + uint64_t(x);
      uint32_t* row = g.ids.data() + x * k;
      for (uint32_t j = 0; j < k;) {
        const uint32_t id =
            window
                ? uint32_t((x + n - window + int64_t(splitmix(s) % uint64_t(2 * window + 1))) % n)
                : uint32_t(splitmix(s) % uint64_t(id_range));
        if (id == x) continue;
        uint32_t h = (id * 0x9E3779B1u) & (slots - 1);
        bool dup = false;
        for (; stamp[h] == gen; h = (h + 1) & (slots - 1))
          if (table[h] == id) {
            dup = true;
            break;
          }
        if (dup) continue;
        stamp[h] = gen;
        table[h] = id;
        row[j++] = id;
      }
      const float base = float(splitmix(s) % 1000) / 1000.f,
                  step = 0.5f + float(splitmix(s) % 1000) / 1000.f;
      for (uint32_t j = 0; j < k; ++j) g.distances[size_t(x) * k + j] = base + float(j) * step;
    }
  }
  return g;
}

/** The first `k` columns of `g`. */
knn_graph cut(const knn_graph& g, uint32_t k) {
  knn_graph o;
  o.rows = g.rows;
  o.k = k;
  o.ids.resize(size_t(g.rows) * k);
  o.distances.resize(size_t(g.rows) * k);
  for (int64_t i = 0; i < g.rows; ++i) {
    std::copy_n(g.ids.begin() + i * g.k, k, o.ids.begin() + i * k);
    std::copy_n(g.distances.begin() + i * g.k, k, o.distances.begin() + i * k);
  }
  return o;
}

/** The message without the trailing " (file:line)". */
std::string text_of(const std::string& m) {
  const size_t p = m.rfind(" (");
  return p == std::string::npos ? m : m.substr(0, p);
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const cagra::error& e) {
    return e.what();
  }
  return "(no error)";
}

/** Both backends throw cagra::error with the same text. */
void expect_same_error(const knn_graph& g, uint32_t d, reorder_kind kind, const std::string& what,
                       cpu::optimize_steps steps = {}) {
  const std::string c = error_of([&] { cpu::optimize(g, d, kind, steps, 0, {}); });
  const std::string gm = error_of([&] { cuda::optimize(g, d, kind, steps, 0, {}); });
  EXPECT_NE(c, "(no error)") << what;
  EXPECT_EQ(text_of(gm), text_of(c)) << what << "\n gpu: " << gm << "\n cpu: " << c;
}

class CudaOptimize : public bigann_gpu_suite {
 protected:
  /** Exact kNN graph of bigann10k, K = 128 (K = 64 is its prefix: rows are sorted by
   *  (distance, id)). */
  static const knn_graph& exact128() {
    if (!exact_)
      exact_ =
          new knn_graph(cpu::brute_force(set_->base, set_->base, metric::l2, 128, true, 0, {}));
    return *exact_;
  }
  static void TearDownTestSuite() {
    delete exact_;
    exact_ = nullptr;
    bigann_gpu_suite::TearDownTestSuite();
  }
  static inline knn_graph* exact_ = nullptr;
};

TEST_F(CudaOptimize, BigannExactKnnMatchesCpu) {
  (void)cuda::optimize(random_graph(100, 8, 1), 4, reorder_kind::rank, {}, 0,
                       {});        // CUDA context warm-up
  for (uint32_t k : {37u, 66u}) {  // the scalar detour loop (4 does not divide K) on real data
    const knn_graph g = cut(exact128(), k);
    for (reorder_kind kind : {reorder_kind::rank, reorder_kind::distance})
      for (uint32_t d : {k / 2, k / 2 + 1})
        expect_same(g, d, kind, {}, "bigann10k exact K=" + std::to_string(k));
  }
  for (uint32_t k : {64u, 128u}) {
    const knn_graph g = k == 128 ? exact128() : cut(exact128(), 64);
    for (uint32_t d : {32u, 64u})
      for (reorder_kind kind : {reorder_kind::rank, reorder_kind::distance}) {
        double gs = 0, cs = 0;
        expect_same(g, d, kind, {}, "bigann10k exact K=" + std::to_string(k), &gs, &cs);
        std::printf("[optimize] bigann10k exact K=%-3u d=%-2u %-8s  GPU %7.2f ms  CPU %7.2f ms\n",
                    k, d, kind_name(kind), gs * 1e3, cs * 1e3);
      }
  }
}

TEST_F(CudaOptimize, NnDescentGraphMatchesCpu) {
  uint32_t iters = 0;
  const knn_graph g =
      cpu::nn_descent(set_->base, metric::l2, 64, knn_graph_params{}, 42, 0, {}, &iters);
  for (reorder_kind kind : {reorder_kind::rank, reorder_kind::distance}) {
    expect_same(g, 32, kind, {}, "bigann10k nn-descent K=64");
    expect_same(g, 64, kind, {}, "bigann10k nn-descent K=64");
  }
}

TEST_F(CudaOptimize, EveryStepCombination) {
  const knn_graph g = cut(exact128(), 64);
  const knn_graph r = random_graph(3000, 24, 5);
  for (bool reorder : {true, false})
    for (bool reverse : {true, false})
      for (reorder_kind kind : {reorder_kind::rank, reorder_kind::distance}) {
        cpu::optimize_steps st;
        st.reorder = reorder;
        st.reverse = reverse;
        expect_same(g, 32, kind, st, "bigann10k exact K=64");
        expect_same(r, 11, kind, st, "random 3000 x 24");
      }
}

TEST_F(CudaOptimize, SyntheticEdgeCases) {
  const reorder_kind kinds[] = {reorder_kind::rank, reorder_kind::distance};
  // Degree == K, 1, 2, odd; K = 1.
  const knn_graph a = random_graph(200, 16, 2);
  for (reorder_kind kind : kinds)
    for (uint32_t d : {16u, 1u, 2u, 7u, 9u}) expect_same(a, d, kind, {}, "random 200 x 16");
  // K not a multiple of 4 (the scalar detour loop) and of it (16-byte loads), small and large.
  for (uint32_t k : {3u, 4u, 6u, 13u, 37u, 130u, 256u, 515u}) {
    const knn_graph r = random_graph(k < 100 ? 1500 : 1200, k, 100 + k);
    const knn_graph w =
        random_graph(k < 100 ? 1500 : 1200, k, 200 + k, 0, k);  // local: many detours
    for (reorder_kind kind : kinds)
      for (uint32_t d : {k, k / 2 + 1, 1u}) {
        expect_same(r, d, kind, {}, "random x " + std::to_string(k));
        expect_same(w, d, kind, {}, "local random x " + std::to_string(k));
      }
  }
  for (reorder_kind kind : kinds) expect_same(random_graph(50, 1, 3), 1, kind, {}, "random 50 x 1");
  for (reorder_kind kind : kinds) expect_same(random_graph(2, 1, 3), 1, kind, {}, "2 x 1");
  // Nodes without reverse edges: every id below 40.
  const knn_graph b = random_graph(300, 16, 4, 40);
  for (reorder_kind kind : kinds)
    for (uint32_t d : {16u, 8u, 5u}) expect_same(b, d, kind, {}, "300 x 16, ids < 40");
  // Hubs: node 0 at rank 0 of every other row, node 1 at the last rank of rows >= 2.
  knn_graph h = random_graph(2000, 32, 6);
  for (int64_t x = 1; x < h.rows; ++x) {
    uint32_t* row = h.ids.data() + x * h.k;
    for (uint32_t hub : {0u, 1u}) {
      if (hub == x) continue;
      uint32_t* pos = std::find(row, row + h.k, hub);
      const uint32_t want = hub == 0 ? 0 : h.k - 1;
      if (pos != row + h.k)
        std::swap(*pos, row[want]);
      else
        row[want] = hub;
    }
  }
  for (reorder_kind kind : kinds)
    for (uint32_t d : {32u, 16u, 3u}) expect_same(h, d, kind, {}, "hubs 2000 x 32");
  // Distance ties: integer distances, all equal, some NaN.
  knn_graph t = random_graph(1000, 24, 7);
  for (float& v : t.distances) v = std::floor(v / 4.f);
  expect_same(t, 12, reorder_kind::distance, {}, "integer distances");
  for (float& v : t.distances) v = 1.f;
  expect_same(t, 12, reorder_kind::distance, {}, "equal distances");
  t = random_graph(1000, 24, 8);
  for (size_t i = 0; i < t.distances.size(); i += 7)
    t.distances[i] = std::numeric_limits<float>::quiet_NaN();
  expect_same(t, 12, reorder_kind::distance, {}, "NaN distances");
  // Several launch chunks (65536 rows each) and a larger sort.
  const knn_graph big = random_graph(200000, 32, 9);
  for (reorder_kind kind : kinds) expect_same(big, 16, kind, {}, "random 200000 x 32");
}

TEST_F(CudaOptimize, InvalidInputSameErrorAsCpu) {
  const knn_graph good = random_graph(500, 8, 10);
  for (reorder_kind kind : {reorder_kind::rank, reorder_kind::distance}) {
    knn_graph g = good;
    g.ids[17 * 8 + 3] = 500;  // id >= n
    g.ids[40 * 8 + 5] = 40;   // self, a later row: the smaller row is named
    expect_same_error(g, 4, kind, "id >= n");
    g = good;
    g.ids[33 * 8 + 0] = 33;  // self
    expect_same_error(g, 4, kind, "self id");
    g = good;
    g.ids[250 * 8 + 6] = g.ids[250 * 8 + 2];  // duplicate
    expect_same_error(g, 4, kind, "duplicate id");
    cpu::optimize_steps no_reorder;
    no_reorder.reorder = false;
    expect_same_error(g, 4, kind, "duplicate id, no reorder", no_reorder);
    expect_same_error(good, 0, kind, "degree 0");
    expect_same_error(good, 9, kind, "degree > K");
  }
  knn_graph nd = good;
  nd.distances.clear();
  expect_same_error(nd, 4, reorder_kind::distance, "no distances");
  EXPECT_EQ(cuda::optimize(nd, 4, reorder_kind::rank, {}, 0, {}),
            cpu::optimize(nd, 4, reorder_kind::rank, {}, 0, {}));
  // A bad row in a later launch chunk (rows >= 65536), and one in each of two chunks.
  knn_graph big = random_graph(140000, 8, 11);
  big.ids[size_t(100000) * 8 + 1] = big.ids[size_t(100000) * 8 + 4];
  expect_same_error(big, 4, reorder_kind::rank, "bad row 100000");
  big.ids[size_t(70000) * 8 + 7] = 70000;
  expect_same_error(big, 4, reorder_kind::rank, "bad rows 70000 and 100000");
}

TEST_F(CudaOptimize, ProgressAndMemoryEstimate) {
  const knn_graph g = random_graph(5000, 32, 12);
  std::vector<std::string> seen;
  std::vector<double> fractions;
  (void)cuda::optimize(g, 16, reorder_kind::rank, {}, 0, [&](const char* what, double f) {
    seen.emplace_back(what);
    fractions.push_back(f);
  });
  ASSERT_FALSE(seen.empty());
  EXPECT_LE(seen.size(), 20u);
  EXPECT_EQ(seen.back(), "optimize");
  EXPECT_EQ(fractions.back(), 1.0);
  const size_t b = cuda::optimize_device_bytes(1000000, 128, 64);
  const size_t br = cuda::optimize_device_bytes(1000000, 128, 64, reorder_kind::rank);
  std::printf("[optimize] device bytes 1M x 128 -> 64: distance %.1f MiB, rank %.1f MiB\n",
              b / 1048576.0, br / 1048576.0);
  EXPECT_GE(b, size_t(1000000) * 64 * 4 * 5);
  EXPECT_GE(b, br);
}

TEST_F(CudaOptimize, Throughput1MRandom) {
  auto t0 = clk::now();
  const knn_graph g = random_graph(1000000, 128, 13);
  std::printf("[optimize] generated random 1M x 128 graph in %.2f s\n", since(t0));
  for (reorder_kind kind : {reorder_kind::rank, reorder_kind::distance}) {
    std::vector<uint32_t> out;
    double best = 1e9;
    for (int rep = 0; rep < 2; ++rep) {
      t0 = clk::now();
      out = cuda::optimize(g, 64, kind, {}, 0, {});
      best = std::min(best, since(t0));
    }
    std::printf(
        "[optimize] GPU optimize 1M x 128 -> 64 %-8s %.3f s (host<->device copies included)\n",
        kind_name(kind), best);
    // Where the time goes, from the progress calls (each one follows a stream synchronization):
    // allocation + upload, detour counting, reverse edges (transpose, sort, bounds), merge +
    // download, and the frees after the last call.
    std::vector<std::pair<std::string, double>> marks;
    t0 = clk::now();
    out = cuda::optimize(g, 64, kind, {}, 0,
                         [&](const char* what, double) { marks.emplace_back(what, since(t0)); });
    const double total = since(t0);
    std::printf("[optimize]   breakdown (%s, total %.3f s):", kind_name(kind), total);
    double prev = 0;
    for (const auto& m : marks) {
      std::printf(" | %s @%.1f ms (+%.1f)", m.first.c_str(), m.second * 1e3,
                  (m.second - prev) * 1e3);
      prev = m.second;
    }
    std::printf(" | return +%.1f ms\n", (total - prev) * 1e3);
    ASSERT_EQ(out.size(), size_t(1000000) * 64);
    for (int64_t x = 0; x < 1000000; x += 97) {  // a sample of rows: valid, no self, no duplicate
      std::vector<uint32_t> row(out.begin() + x * 64, out.begin() + (x + 1) * 64);
      std::sort(row.begin(), row.end());
      ASSERT_LT(row.back(), 1000000u) << "row " << x;
      ASSERT_TRUE(std::adjacent_find(row.begin(), row.end()) == row.end()) << "row " << x;
      ASSERT_FALSE(std::binary_search(row.begin(), row.end(), uint32_t(x))) << "row " << x;
    }
  }
}

TEST_F(CudaOptimize, NotEnoughDeviceMemoryIsAnError) {
  // Fill the device in 256 MiB blocks until an allocation fails, so that less than 256 MiB is
  // free, then ask for ~660 MiB: a cagra::error naming needed vs free bytes, no crash; once the
  // blocks are freed the same call works.
  const knn_graph g = random_graph(1000000, 64, 14);
  ASSERT_GT(cuda::optimize_device_bytes(g.rows, g.k, 32, reorder_kind::rank), size_t(512) << 20);
  std::vector<void*> blocks;
  for (;;) {
    try {
      blocks.push_back(cuda::testing::device_alloc(size_t(256) << 20, 0));
    } catch (const cagra::error&) {
      break;
    }
    if (blocks.size() > 8192) break;
  }
  const std::string msg = error_of([&] { cuda::optimize(g, 32, reorder_kind::rank, {}, 0, {}); });
  for (void* p : blocks) cuda::testing::device_free(p);
  std::printf("[optimize] with the device full: %s\n", msg.c_str());
  EXPECT_NE(msg.find("needs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("free"), std::string::npos) << msg;
  EXPECT_EQ(cuda::optimize(g, 32, reorder_kind::rank, {}, 0, {}).size(), size_t(g.rows) * 32);
}

}  // namespace
}  // namespace cagra::test
