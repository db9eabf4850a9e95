// Regression for issue 17, defect 1: a search with a small explicit visited hash never returned.
// With hash_bits 8 and itopk_size + search_width x graph_degree >= 2^8 on an index of more than
// 2^8 rows, the CPU's visited_hash probed a full table forever (from the random initial nodes,
// and after a forget() re-inserted the whole top-M). The plan now rejects an explicit size that
// cannot hold a search's working set, raises an automatic one to it, and every probe loop is
// bounded. Each search runs under a watchdog: a hang fails the test instead of stalling ctest.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>

#include <gtest/gtest.h>

#include <cagra/plan.hpp>

#include "test_data.hpp"

namespace cagra::test {
namespace {

/** Runs f on a thread; a run over 60 s ends the process with a failure (a hung search cannot
 *  be stopped, and the test must not wait for ctest's timeout). */
template <typename F>
void within_a_minute(const char* what, F&& f) {
  auto done = std::async(std::launch::async, std::forward<F>(f));
  if (done.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: %s did not return within 60 s (the search hangs)\n", what);
    std::_Exit(1);
  }
  done.get();  // rethrows a test failure's exception, if any
}

class SearchHang : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    set_ = new real_set(bigann10k());
    host_matrix base(dtype::u8, 2000, set_->base.cols());  // the 2,000 rows
    std::memcpy(base.data(), set_->base.data(), base.size_bytes());
    index_params ip;
    ip.graph_degree = 32;
    resources cpu;
    cpu.target = backend::cpu;
    idx_ = new cagra::index(build(cpu, ip, base));
  }
  static void TearDownTestSuite() {
    delete idx_;
    delete set_;
  }
  static std::vector<uint32_t> run(const search_params& p, uint32_t k = 10) {
    resources cpu;
    cpu.target = backend::cpu;
    std::vector<uint32_t> ids(size_t(set_->queries.rows()) * k);
    search(cpu, p, *idx_, set_->queries, k, {ids.data(), set_->queries.rows(), k}, {});
    return ids;
  }
  static real_set* set_;
  static cagra::index* idx_;
};
real_set* SearchHang::set_ = nullptr;
cagra::index* SearchHang::idx_ = nullptr;

TEST_F(SearchHang, TooSmallExplicitHashIsAClearError) {
  // The command: --hash-bits 8 --itopk 256 (it hung; itopk 240 finished).
  search_params p;
  p.hash_bits = 8;
  p.itopk_size = 256;
  within_a_minute("hash_bits 8, itopk 256", [&] {
    try {
      run(p);
      ADD_FAILURE() << "hash_bits 8 with itopk 256 should be refused";
    } catch (const cagra::error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("hash_bits 8 is too small"), std::string::npos) << m;
      EXPECT_NE(m.find("at least 9"), std::string::npos) << m;
    }
  });
  // The smallest size the error names works.
  p.hash_bits = 9;
  within_a_minute("hash_bits 9, itopk 256", [&] { run(p); });
}

TEST_F(SearchHang, ForgettingNearTheLimitReturns) {
  // A table that holds exactly the working set, reset every iteration (forget() re-inserts the
  // whole top-M each time): the search returns, with sane results.
  for (uint32_t itopk : {64u, 128u, 223u}) {
    search_params p;
    p.itopk_size = itopk;
    p.hash_bits = 0;
    const search_plan plan = plan_search(
        [] {
          resources r;
          r.target = backend::cpu;
          return r;
        }(),
        p, *idx_, 10, 1);
    p.hash_bits = plan.hash_bits;  // the automatic size, given explicitly: the minimum or more
    p.hash_reset_interval = 1;
    within_a_minute("reset every iteration", [&] {
      const std::vector<uint32_t> ids = run(p);
      for (uint32_t id : ids) ASSERT_LT(id, idx_->size());
    });
  }
}

TEST_F(SearchHang, AutomaticHashHoldsLargeWorkingSets) {
  // Automatic sizes follow the working set: a wide search over a large top-M runs.
  search_params p;
  p.itopk_size = 512;
  p.search_width = 16;
  p.num_random_samplings = 4;
  within_a_minute("itopk 512, width 16, 4 samplings", [&] { run(p); });
}

}  // namespace
}  // namespace cagra::test
