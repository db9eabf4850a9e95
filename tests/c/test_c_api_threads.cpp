// The C API's thread rules (docs/c_api.md "Threads"), checked with std::thread around C calls:
// cagra_last_error() is per thread, and searches on one handle run while another thread extends
// and removes rows (the handle's lock serializes the changes against them). No framework: prints
// each failed check and exits 1 if any failed (ctest c_api_threads).
#include <atomic>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <cagra/c_api.h>

namespace {

std::atomic<int> failures{0};

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "check failed: %s (last error: %s)\n", what, cagra_last_error());
    ++failures;
  }
}

constexpr int64_t kRows = 3000, kDim = 16, kQueries = 20;
constexpr uint32_t kK = 5;

std::vector<float> random_rows(int64_t rows, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> v(static_cast<size_t>(rows * kDim));
  for (float& x : v) x = u(rng);
  return v;
}

/** Each thread sees only its own failures in cagra_last_error(). */
void last_error_is_per_thread() {
  check(cagra_index_load(nullptr, nullptr) == CAGRA_ERROR_INVALID_ARGUMENT, "load(NULL) fails");
  const std::string mine = cagra_last_error();
  std::string theirs_before, theirs_after;
  std::thread other([&] {
    theirs_before = cagra_last_error();
    cagra_index_t* out = nullptr;
    check(cagra_index_load("/nonexistent-folder/x.cagra", &out) == CAGRA_ERROR_IO,
          "load of a missing file is an IO error");
    theirs_after = cagra_last_error();
  });
  other.join();
  check(theirs_before.empty(), "a new thread starts with no error");
  check(theirs_after.find("cannot open") != std::string::npos, "the other thread's own message");
  check(mine.find("path is NULL") != std::string::npos, "this thread's message");
  check(mine == cagra_last_error(), "the other thread's failure left this thread's message alone");
}

/** Four threads search while this one extends and removes: every search succeeds and returns
 *  only rows that existed, the changes all succeed. */
void searches_run_beside_changes() {
  const std::vector<float> base = random_rows(kRows, 1);
  cagra_build_params_t bp;
  cagra_build_params_default(&bp);
  bp.graph_degree = 16;
  bp.resources.backend = CAGRA_BACKEND_CPU;
  bp.resources.num_threads = 1;
  cagra_index_t* index = nullptr;
  if (cagra_index_build(&bp, base.data(), CAGRA_DTYPE_F32, kRows, kDim, &index) != CAGRA_OK) {
    check(false, "build");
    return;
  }
  constexpr int kBatches = 5;
  constexpr int64_t kBatchRows = 200;
  std::atomic<bool> done{false};
  std::vector<std::thread> searchers;
  for (int t = 0; t < 4; ++t)
    searchers.emplace_back([&, t] {
      const std::vector<float> queries = random_rows(kQueries, 100 + t);
      cagra_search_params_t sp;
      cagra_search_params_default(&sp);
      sp.resources.backend = CAGRA_BACKEND_CPU;
      sp.resources.num_threads = 1;
      std::vector<uint32_t> ids(kQueries * kK);
      int searches = 0;
      while (!done.load() || searches < 3) {
        const cagra_status_t s =
            cagra_index_search(index, &sp, queries.data(), CAGRA_DTYPE_F32, kQueries, kDim, kK,
                               ids.data(), nullptr, nullptr);
        check(s == CAGRA_OK, "a search beside the changes succeeds");
        for (uint32_t id : ids) check(id < kRows + kBatches * kBatchRows, "a row that exists");
        ++searches;
      }
    });
  cagra_extend_params_t ep;
  cagra_extend_params_default(&ep);
  ep.resources.backend = CAGRA_BACKEND_CPU;
  ep.resources.num_threads = 1;
  for (int b = 0; b < kBatches; ++b) {
    const std::vector<float> more = random_rows(kBatchRows, 10 + b);
    check(cagra_index_extend(index, &ep, more.data(), CAGRA_DTYPE_F32, kBatchRows, kDim, nullptr) ==
              CAGRA_OK,
          "extend beside the searches");
    const int64_t row = b * 7;
    check(cagra_index_remove_rows(index, nullptr, &row, 1, 0.0, nullptr) == CAGRA_OK,
          "remove beside the searches");
  }
  done.store(true);
  for (std::thread& t : searchers) t.join();
  cagra_index_info_t info;
  check(cagra_index_get_info(index, &info) == CAGRA_OK, "info");
  check(info.rows == kRows + kBatches * kBatchRows && info.deleted_rows == kBatches,
        "every change applied");
  cagra_index_free(index);
}

}  // namespace

int main() {
  last_error_is_per_thread();
  searches_run_beside_changes();
  if (failures > 0) {
    std::fprintf(stderr, "%d check(s) failed\n", failures.load());
    return 1;
  }
  std::printf("C API thread checks passed\n");
  return 0;
}
