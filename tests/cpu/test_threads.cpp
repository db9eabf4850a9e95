// Thread counts (issue 17, defect 5). Every OpenMP team takes its size from one rule,
// cagra::resolve_threads (core/threads.cpp): a request beyond max_threads() (4 x the hardware
// threads, at most 1024) is clamped, a negative one is an error, and a team the system cannot
// start is a clear cagra::error before any parallel region. Before, the CLI took 65,536 and
// Python 2^31 - 1 as given, and when pthread_create failed libgomp printed "Thread creation
// failed" and exited the process (in Python, the interpreter).
#include <omp.h>
#include <sys/wait.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "core/backend.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

index ring_index(int64_t rows, int64_t dim) {
  host_matrix v(dtype::f32, rows, dim);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0, 1);
  for (int64_t i = 0; i < rows * dim; ++i) v.as<float>().data[i] = u(rng);
  std::vector<uint32_t> graph;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 1; j <= 8; ++j) graph.push_back(uint32_t((i + j) % rows));
  return index(metric::l2, std::move(v), std::move(graph), 8);
}

TEST(Threads, CountsAreClampedToAMultipleOfTheHardwareThreads) {
  const int hw = omp_get_num_procs();
  EXPECT_EQ(max_threads(), std::max(hw, std::min(4 * hw, 1024)));
  EXPECT_EQ(resolve_threads(1), 1);
  EXPECT_EQ(resolve_threads(max_threads()), max_threads());
  EXPECT_EQ(resolve_threads(65536), max_threads());
  EXPECT_EQ(resolve_threads(INT_MAX), max_threads());
  EXPECT_EQ(resolve_threads(0), std::min(omp_get_max_threads(), max_threads()));
  try {
    resolve_threads(-3);
    ADD_FAILURE() << "a negative thread count was accepted";
  } catch (const cagra::error& e) {
    EXPECT_NE(std::string(e.what()).find("num_threads must be >= 0"), std::string::npos)
        << e.what();
  }
}

// 2^31 - 1 threads through the public calls: they run (clamped) and give the one-thread results.
// The light passes on a call's way (the queries' check, conversion, int8 encoding) size their
// team by their work: a one-query call on many threads that ran them on every thread and then
// walked on fewer made libgomp end and start threads at every call (core/backend.hpp).
TEST(Threads, LightPassesTakeATeamTheirSize) {
  EXPECT_EQ(core::threads_for_elements(16, 384), 1) << "one 384-d query: no team";
  EXPECT_EQ(core::threads_for_elements(16, 0), 1);
  EXPECT_EQ(core::threads_for_elements(16, int64_t{1} << 15), 1);
  EXPECT_EQ(core::threads_for_elements(16, (int64_t{1} << 15) + 1), 2);
  EXPECT_EQ(core::threads_for_elements(16, int64_t{10000} * 384), 16)
      << "a 10K batch: every thread";
  EXPECT_EQ(core::threads_for_elements(0, int64_t{10000} * 384), 1);
}

// A caller's own OpenMP team, each thread asking for its own query with one thread: a one-thread
// call runs its loops on the caller's thread (core::run_team), and an orphaned `omp for` there
// would bind to the caller's team, handing each thread a share of another thread's loop.
TEST(Threads, OneThreadCallsFromInsideACallersParallelRegion) {
  const index idx = ring_index(500, 16);
  const int64_t nq = 64;
  host_matrix q(dtype::f32, nq, 16);
  std::copy(idx.vectors().as<float>().data, idx.vectors().as<float>().data + nq * 16,
            q.as<float>().data);
  resources res;
  res.target = backend::cpu;
  res.num_threads = 1;
  auto row = [&](int64_t i) {
    dataset_view one = q.view();
    one.data = q.row_bytes(i);
    one.rows = 1;
    return one;
  };
  for (traversal_type tr : {traversal_type::exact, traversal_type::int8}) {
    search_params sp;
    sp.traversal = tr;
    std::vector<uint32_t> want(nq * 5), got(nq * 5, kInvalidId);
    search(res, sp, idx, q.view(), 5, {want.data(), nq, 5}, {});
#pragma omp parallel for num_threads(4) schedule(static, 1)
    for (int64_t i = 0; i < nq; ++i)
      search(res, sp, idx, row(i), 5, {got.data() + i * 5, 1, 5}, {});
    EXPECT_EQ(want, got) << (tr == traversal_type::int8 ? "int8" : "exact");
  }
  // The CPU brute force under cosine: each query normalized (convert_rows) and scanned.
  const knn_graph all = brute_force_knn(res, metric::cosine, idx.vectors().view(), q.view(), 5);
  std::vector<uint32_t> got(nq * 5, kInvalidId);
#pragma omp parallel for num_threads(4) schedule(static, 1)
  for (int64_t i = 0; i < nq; ++i) {
    const knn_graph one = brute_force_knn(res, metric::cosine, idx.vectors().view(), row(i), 5);
    std::copy(one.ids.begin(), one.ids.end(), got.begin() + i * 5);
  }
  EXPECT_EQ(all.ids, got);
}

TEST(Threads, HugeRequestsRunClampedWithTheSameResults) {
  const index idx = ring_index(500, 16);
  host_matrix q(dtype::f32, 64, 16);
  std::copy(idx.vectors().as<float>().data, idx.vectors().as<float>().data + 64 * 16,
            q.as<float>().data);
  std::vector<uint32_t> one(64 * 5), many(64 * 5);
  resources res;
  res.target = backend::cpu;
  res.num_threads = 1;
  search(res, search_params{}, idx, q.view(), 5, {one.data(), 64, 5}, {});
  res.num_threads = INT_MAX;
  search(res, search_params{}, idx, q.view(), 5, {many.data(), 64, 5}, {});
  EXPECT_EQ(one, many);
  const graph_stats st = analyze(res, idx.graph(), 0);
  EXPECT_EQ(st.nodes, 500);
  res.num_threads = -1;
  EXPECT_THROW(search(res, search_params{}, idx, q.view(), 5, {many.data(), 64, 5}, {}),
               cagra::error);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CAGRA_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define CAGRA_TEST_SANITIZED 1
#endif
#endif

struct run_result {
  int status = -1;
  std::string err;
};

// Runs the CLI under `limits` (shell `ulimit` and environment assignments) with `args`.
run_result run_limited(const std::string& limits, const std::string& args) {
  static int counter = 0;
  const std::string err = temp_path("threads_err_" + std::to_string(counter++));
  const std::string cmd = "/bin/sh -c '" + limits + " exec " + CAGRA_CLI_PATH + " " + args +
                          "' >/dev/null 2>" + err + " </dev/null";
  const int rc = std::system(cmd.c_str());
  run_result r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
  std::ifstream f(err);
  std::stringstream ss;
  ss << f.rdbuf();
  r.err = ss.str();
  return r;
}

// Threads whose stacks do not fit the address space: 1 GiB stacks (OMP_STACKSIZE, which libgomp
// and the check both use) under a 3 GiB limit leave room for the main thread and two more. A
// team of 4 or more (--threads 64 is at least 4 after the clamp) cannot start: the CLI reports
// it on one "error:" line. The default count shrinks to what can start, and --threads 1 needs no
// thread at all.
TEST(Threads, CliReportsATeamTheSystemCannotStart) {
#ifdef CAGRA_TEST_SANITIZED
  GTEST_SKIP() << "sanitizers reserve more address space than the limit this test sets";
#endif
  if (std::string(CAGRA_CLI_PATH).empty()) GTEST_SKIP() << "the cagra tool was not built";
  const std::string idx = temp_path("threads.cagra"), q = temp_path("threads_q.fbin");
  save(ring_index(2000, 16), idx);
  host_matrix qm(dtype::f32, 200, 16);
  std::fill_n(qm.as<float>().data, 200 * 16, 0.5f);
  io::write_matrix(q, qm.view());
  const std::string out = temp_path("threads_nn.ibin");
  const std::string search = "search " + idx + " " + q + " -k 5 -o " + out + " --force";
  const std::string limits = "ulimit -v 3145728; export OMP_STACKSIZE=1G;";

  const run_result refused = run_limited(limits, search + " --threads 64");
  EXPECT_EQ(refused.status, 1) << refused.err;
  EXPECT_EQ(refused.err.rfind("error: cannot start ", 0), 0u) << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;

  const run_result one = run_limited(limits, search + " --threads 1");
  EXPECT_EQ(one.status, 0) << one.err;
  const run_result dflt = run_limited(limits + " export OMP_NUM_THREADS=64;", search);
  EXPECT_EQ(dflt.status, 0) << dflt.err;
  // Every stage of a build too: one team sized by OpenMP's default alone was enough to end it.
  const std::string base = temp_path("threads_base.fbin");
  io::write_matrix(base, ring_index(2000, 16).vectors().view());
  const run_result build = run_limited(limits + " export OMP_NUM_THREADS=64;",
                                       "build " + base + " -o " + temp_path("threads_b.cagra") +
                                           " --force --graph-degree 8 --intermediate-degree 16");
  EXPECT_EQ(build.status, 0) << build.err;
  const run_result refused_build =
      run_limited(limits, "build " + base + " -o " + temp_path("threads_b.cagra") +
                              " --force --graph-degree 8 --threads 64");
  EXPECT_EQ(refused_build.status, 1) << refused_build.err;
  EXPECT_EQ(refused_build.err.rfind("error: cannot start ", 0), 0u) << refused_build.err;
}

}  // namespace
}  // namespace cagra::test
