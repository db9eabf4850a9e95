// Throughput print for the logs (not a benchmark: small data that fits in L2, no sweep to a
// target recall). bigann10k, graph degree 32, search_width 1: recall@10 and queries per second
// of the GPU search (cuda::search on queries already converted, median of 5 timed calls after a
// warm-up, host<->device copies included) and of the CPU backend on all cores. Also a profiling
// target for Nsight Compute, disabled in normal runs: ncu --launch-count 1 cagra_cuda_tests
// --gtest_also_run_disabled_tests --gtest_filter=CudaThroughput.DISABLED_ProfileTarget
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "core/convert.hpp"
#include "cuda/backend.hpp"
#include "search_results.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

using clk = std::chrono::steady_clock;

host_matrix repeat(const host_matrix& m, int64_t rows) {
  host_matrix out(m.type(), rows, m.cols());
  const size_t rb = m.size_bytes() / m.rows();
  for (int64_t i = 0; i < rows; ++i)
    std::memcpy(static_cast<uint8_t*>(out.data()) + i * rb, m.row_bytes(i % m.rows()), rb);
  return out;
}

template <typename F>
double median_seconds(int reps, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = clk::now();
    f();
    t.push_back(std::chrono::duration<double>(clk::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct bench_case {
  const char* name;
  const cagra::index* idx;
  const host_matrix* queries;  // 100 rows, the user's type
  uint32_t itopk;
  int64_t batch;
  bool cpu;           // also time the CPU backend
  uint32_t team = 0;  // 0 = auto
};

void run_case(const bench_case& c, matrix_view<const uint32_t> truth) {
  search_params p;
  p.itopk_size = c.itopk;
  p.team_size = c.team;
  const uint32_t k = 10;
  const host_matrix q =
      core::queries_for(repeat(*c.queries, c.batch), c.idx->storage_dtype(), c.idx->metric(), 0);
  const search_plan plan = gpu_plan(*c.idx, p, k, c.batch);
  std::vector<uint32_t> ids(size_t(c.batch) * k);
  std::vector<float> dist(ids.size());
  auto gpu = [&] { cuda::search(*c.idx, q, plan, ids.data(), dist.data(), 0); };
  gpu();  // warm-up: device copy of the index, module load
  const double tg = median_seconds(5, gpu);
  const double rc = recall({ids.data(), 100, k}, truth, k);
  double cpu_qps = 0;
  if (c.cpu) {
    resources res;
    res.target = backend::cpu;
    const host_matrix qu = repeat(*c.queries, c.batch);
    cpu_qps = c.batch / median_seconds(3, [&] {
                search(res, p, *c.idx, qu, k, {ids.data(), c.batch, k}, {dist.data(), c.batch, k});
              });
  }
  char name[64];
  std::snprintf(name, sizeof name, "%s team %s", c.name,
                c.team ? std::to_string(c.team).c_str() : "auto");
  std::printf(
      "[ bench    ] %-14s itopk %3u batch %6lld  recall@10 %.4f  GPU %10.0f QPS (%7.3f ms)  CPU "
      "%9.0f QPS\n",
      name, c.itopk, (long long)c.batch, rc, c.batch / tg, tg * 1e3, cpu_qps);
}

TEST(CudaThroughput, Bigann10k) {
  ASSERT_GT(cuda::device_count(), 0) << "no CUDA device: the cuda tests need a GPU";
  std::printf("[ bench    ] device: %s; CPU: %d threads\n",
              cuda::describe(cuda::cuda_info(0)).c_str(), core::host_threads(0));
  const real_set s = bigann10k();
  index_params ip;
  ip.graph_degree = 32;
  ip.intermediate_graph_degree = 64;
  const cagra::index u8 = build({}, ip, s.base);
  host_matrix base_f(dtype::f32, s.base.rows(), s.base.cols()), q_f(dtype::f32, 100, s.base.cols());
  for (int64_t i = 0; i < s.base.rows() * s.base.cols(); ++i)
    base_f.as<float>().data[i] = s.base.as<uint8_t>().data[i];
  for (int64_t i = 0; i < 100 * s.base.cols(); ++i)
    q_f.as<float>().data[i] = s.queries.as<uint8_t>().data[i];
  const cagra::index f32 = build({}, ip, base_f);
  ip.storage = storage_type::f16;
  const cagra::index f16 = build({}, ip, base_f);
  const auto truth = s.truth.as<uint32_t>();
  for (uint32_t m : {32u, 64u, 128u, 256u})
    run_case({"u8", &u8, &s.queries, m, 10000, m <= 64}, truth);
  run_case({"u8", &u8, &s.queries, 64, 100, true}, truth);
  run_case({"u8", &u8, &s.queries, 64, 100000, false}, truth);
  run_case({"f32", &f32, &q_f, 64, 10000, true}, truth);
  run_case({"f16", &f16, &q_f, 64, 10000, false}, truth);
  // Team sizes above the automatic one (u8 4, f16 4, f32 8 at 128-d): fewer lanes per distance
  // = fewer shuffles per candidate, more loads per lane.
  for (uint32_t t : {8u, 16u}) run_case({"u8", &u8, &s.queries, 64, 10000, false, t}, truth);
  for (uint32_t t : {16u, 32u}) run_case({"f32", &f32, &q_f, 64, 10000, false, t}, truth);
  for (uint32_t t : {8u, 16u}) run_case({"f16", &f16, &q_f, 64, 10000, false, t}, truth);
  run_case({"u8", &u8, &s.queries, 512, 10000, false}, truth);
}

TEST(CudaThroughput, DISABLED_ProfileTarget) {
  // One launch of 65,535 queries (u8, itopk 64) after the index build: the kernel to profile.
  const real_set s = bigann10k();
  index_params ip;
  ip.graph_degree = 32;
  ip.intermediate_graph_degree = 64;
  const cagra::index u8 = build({}, ip, s.base);
  search_params p;
  p.itopk_size = 64;
  const host_matrix q = repeat(s.queries, 65535);
  std::vector<uint32_t> ids(size_t(q.rows()) * 10);
  cuda::search(u8, q, gpu_plan(u8, p, 10, q.rows()), ids.data(), nullptr, 0);
  EXPECT_GE(recall({ids.data(), 100, 10}, s.truth.as<uint32_t>(), 10), 0.98);
}

}  // namespace
}  // namespace cagra::test
