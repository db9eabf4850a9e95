// Where a single-CTA search's time goes, by batch size (a measurement for the logs, in bench/:
// `cagra_cuda_bench --gtest_filter=CudaSingleCtaTrace*` in a build with -DCAGRA_TRACE_KERNELS=ON,
// scripts/dev/device-latency.sh). Issue 19's replicated split gives each GPU a slice of the
// batch, and a slice of 2,500 queries runs at ~63% of a 10K call's rate because one search lasts
// ~0.1 ms even on an idle GPU (docs/benchmarks.md "One GPU by batch size"). Here each query's
// kernel time is split into the kernel's phases (single_cta.hpp's trace slots: SM cycles summed
// over the iterations at the CTA's barriers) for calls of 132 (one CTA per SM on an H100) to
// 10,000 queries, next to the call's host time, the kernel's span and each query's own span
// (global timer). On a 1M index in DRAM when CAGRA_LATENCY_INDEX (a saved .cagra) and
// CAGRA_LATENCY_QUERIES are set, else bigann10k.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cagra/io.hpp>

#include "bigann_fixture.hpp"
#include "core/convert.hpp"
#include "cuda/search/single_cta.hpp"
#include "cuda/testing.hpp"
#include "latency_data.hpp"
#include "search_results.hpp"

namespace cagra::test {
namespace {

using clk = std::chrono::steady_clock;

class CudaSingleCtaTrace : public bigann_gpu_suite {};

#if CAGRA_MCTA_TRACE
/** Per-query means of a traced call, in microseconds (cycles at the SM clock `khz`). */
struct phases {
  double setup = 0, init = 0, init_merge = 0, dist = 0, merge = 0, reset = 0, expand = 0, write = 0;
  double iterations = 0, query_p50 = 0, query_p99 = 0, query_max = 0, span = 0;
};

phases summarize(const std::vector<uint64_t>& t, int64_t nq, double khz) {
  constexpr uint32_t S = cuda::kSingleCtaTraceSlots;
  phases m;
  std::vector<double> own(static_cast<size_t>(nq));
  uint64_t t0 = ~0ull, t1 = 0;
  const double us = 1e3 / khz;  // microseconds a cycle
  for (int64_t q = 0; q < nq; ++q) {
    const uint64_t* r = t.data() + size_t(q) * S;
    m.setup += r[cuda::kScTraceSetup] * us;
    m.init += r[cuda::kScTraceInitDist] * us;
    m.init_merge += r[cuda::kScTraceInitMerge] * us;
    m.dist += r[cuda::kScTraceDistances] * us;
    m.merge += r[cuda::kScTraceMerge] * us;
    m.reset += r[cuda::kScTraceReset] * us;
    m.expand += r[cuda::kScTraceExpand] * us;
    m.write += r[cuda::kScTraceWrite] * us;
    m.iterations += double(r[cuda::kScTraceIterations]);
    own[size_t(q)] = (r[cuda::kScTraceEndNs] - r[cuda::kScTraceStartNs]) * 1e-3;
    t0 = std::min(t0, r[cuda::kScTraceStartNs]);
    t1 = std::max(t1, r[cuda::kScTraceEndNs]);
  }
  for (double* v :
       {&m.setup, &m.init, &m.dist, &m.merge, &m.reset, &m.expand, &m.write, &m.iterations})
    *v /= double(nq);
  std::sort(own.begin(), own.end());
  m.query_p50 = own[own.size() / 2];
  m.query_p99 = own[std::min(own.size() - 1, own.size() * 99 / 100)];
  m.query_max = own.back();
  m.span = (t1 - t0) * 1e-3;
  return m;
}
#endif

TEST_F(CudaSingleCtaTrace, PhasesByBatch) {
  const latency_data data = latency_data_or(u8_, &set_->queries);
  const cagra::index* idx = data.idx;
  const host_matrix* queries = data.queries;
  const std::string& name = data.name;
  const uint32_t k = 10;
  int khz = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0), cudaSuccess);
  std::printf("[ trace    ] single-CTA phases on %s (%lld x %u %s, degree %u), SM clock %d MHz%s\n",
              name.c_str(), (long long)idx->size(), idx->dim(), to_string(idx->storage_dtype()),
              idx->graph_degree(), khz / 1000,
              CAGRA_MCTA_TRACE ? "" : " (no kernel trace: build with -DCAGRA_TRACE_KERNELS=ON)");
  for (int64_t batch : {int64_t{132}, int64_t{1056}, int64_t{2500}, int64_t{10000}}) {
    batch = std::min<int64_t>(batch, queries->rows());
    const dataset_view v(queries->data(), queries->type(), batch, queries->cols());
    const host_matrix q = core::queries_for(v, idx->storage_dtype(), idx->metric(), 1);
    std::vector<uint32_t> ids(size_t(batch) * k);
    std::vector<float> dist(ids.size());
    for (uint32_t itopk : {16u, 32u, 64u}) {
      search_params p;
      p.itopk_size = itopk;
      const search_plan plan = gpu_plan(*idx, p, k, batch);
      if (plan.algo != search_algo::single_cta) continue;
      const auto call = [&] { cuda::search(*idx, q, plan, ids.data(), dist.data(), 0); };
      call();  // warm-up
      const auto c0 = clk::now();
      for (int r = 0; r < 5; ++r) call();
      const double call_us = std::chrono::duration<double, std::micro>(clk::now() - c0).count() / 5;
#if CAGRA_MCTA_TRACE
      const size_t words = size_t(batch) * cuda::kSingleCtaTraceSlots;
      uint64_t* d_trace = nullptr;
      ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_trace), words * 8), cudaSuccess);
      ASSERT_EQ(cudaMemset(d_trace, 0, words * 8), cudaSuccess);
      cuda::testing::set_single_cta_trace(d_trace);
      call();
      cuda::testing::set_single_cta_trace(nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<uint64_t> t(words);
      ASSERT_EQ(cudaMemcpy(t.data(), d_trace, words * 8, cudaMemcpyDeviceToHost), cudaSuccess);
      cudaFree(d_trace);
      const phases m = summarize(t, batch, double(khz));
      const double it = std::max(m.iterations - 1.0, 1.0);  // the merges after iteration 0
      std::printf(
          "[ trace    ] batch %5lld itopk %2u block %3u: call %6.1f us, kernel span %6.1f us; a "
          "query p50 / p99 / max %5.1f / %5.1f / %5.1f us, %.1f merges: setup %.2f, initial "
          "distances %.2f + merge %.2f, then an iteration distances %.2f + merge %.2f + reset "
          "%.2f + expand %.2f = %.2f us, write %.2f\n",
          (long long)batch, itopk, plan.block_size, call_us, m.span, m.query_p50, m.query_p99,
          m.query_max, m.iterations, m.setup, m.init, m.init_merge, m.dist / it, m.merge / it,
          m.reset / it, m.expand / it, (m.dist + m.merge + m.reset + m.expand) / it, m.write);
#else
      std::printf("[ trace    ] batch %5lld itopk %2u block %3u: call %6.1f us\n", (long long)batch,
                  itopk, plan.block_size, call_us);
#endif
      EXPECT_LT(ids[0], idx->size());
    }
  }
}

}  // namespace
}  // namespace cagra::test
