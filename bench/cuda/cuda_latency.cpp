// Where the time of one batch-1 GPU search goes (a measurement for the logs, in bench/: nothing
// asserted but the answer; `cagra_cuda_bench --gtest_filter=CudaLatency*`): the whole cagra::search
// call, cuda::search on an already converted query, the same with a one-iteration search (kernel
// work nearly nil: what is left is the fixed cost of a call), and the CUDA runtime pieces such a
// call is made of (small pageable copies, a memset launch, a stream synchronize, the device
// queries), each the mean of many calls after a warm-up.
#include <cstdio>
#include <numeric>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include <cagra/io.hpp>

#include "bigann_fixture.hpp"
#include "core/convert.hpp"
#include "cuda/search/multi_cta.hpp"
#include "cuda/testing.hpp"
#include "latency_data.hpp"
#include "multi_cta_trace.hpp"
#include "search_results.hpp"

namespace cagra::test {
namespace {

class CudaLatency : public bigann_gpu_suite {};

TEST_F(CudaLatency, BatchOneBreakdown) {
  const int reps = 2000;
  const uint32_t k = 10;
  const cagra::index& idx = *u8_;
  const dataset_view q1(set_->queries.row_bytes(0), dtype::u8, 1, set_->queries.cols());
  const host_matrix hq = core::queries_for(q1, idx.storage_dtype(), idx.metric(), 1);
  std::vector<uint32_t> ids(k);
  std::vector<float> dist(k);
  resources res;
  res.target = backend::cuda;
  res.num_threads = 1;
  std::printf("[ latency  ] device: %s\n", cuda::describe(cuda::cuda_info(0)).c_str());
  for (uint32_t itopk : {32u, 64u}) {
    for (uint32_t width : {1u, 8u}) {
      search_params p;
      p.itopk_size = itopk;
      p.search_width = width;
      p.persistent = false;  // the pieces of a launch per call
      const search_plan plan = gpu_plan(idx, p, k, 1);
      const double api = mean_us(reps, [&] {
        search(res, p, idx, q1, k, {ids.data(), 1, k}, {dist.data(), 1, k});
      });
      const double direct =
          mean_us(reps, [&] { cuda::search(idx, hq, plan, ids.data(), dist.data(), 0); });
      const double direct_ids =
          mean_us(reps, [&] { cuda::search(idx, hq, plan, ids.data(), nullptr, 0); });
      search_params p1 = p;
      p1.max_iterations = 1;  // explicit: each CTA's cap (the automatic budget has a floor)
      const search_plan one = gpu_plan(idx, p1, k, 1);
      const double fixed =
          mean_us(reps, [&] { cuda::search(idx, hq, one, ids.data(), dist.data(), 0); });
      std::printf(
          "[ latency  ] itopk %3u width %2u: cagra::search %7.1f us, cuda::search %7.1f us (ids "
          "only "
          "%7.1f), one iteration %7.1f us\n",
          itopk, width, api, direct, direct_ids, fixed);
    }
  }

  // Cost per iteration: a sweep of the per-CTA iteration cap at 16 CTAs (the slope is one
  // iteration's latency, the intercept the rest of the call).
  for (uint32_t width : {4u, 16u}) {
    std::printf("[ latency  ] %u CTAs, itopk 32, latency by iterations per CTA:", width);
    for (uint32_t iters : {1u, 2u, 4u, 8u, 16u, 32u}) {
      search_params p;
      p.itopk_size = 32;
      p.search_width = width;
      p.max_iterations = iters;
      p.persistent = false;
      const search_plan plan = gpu_plan(idx, p, k, 1);
      std::printf(" %u: %.1f us", iters,
                  mean_us(reps, [&] { cuda::search(idx, hq, plan, ids.data(), nullptr, 0); }));
    }
    std::printf("\n");
  }

  // The runtime pieces.
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 1 << 20), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  std::vector<uint8_t> h(4096);
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, 4096), cudaSuccess);
  const double h2d = mean_us(reps, [&] {
    cudaMemcpyAsync(d, h.data(), 128, cudaMemcpyHostToDevice, s);
    cudaStreamSynchronize(s);
  });
  const double d2h = mean_us(reps, [&] {
    cudaMemcpyAsync(h.data(), d, 80, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
  });
  const double d2h_pinned = mean_us(reps, [&] {
    cudaMemcpyAsync(pinned, d, 80, cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
  });
  const double memset_sync = mean_us(reps, [&] {
    cudaMemsetAsync(d, 0xFF, 1 << 16, s);
    cudaStreamSynchronize(s);
  });
  const double sync_idle = mean_us(reps, [&] { cudaStreamSynchronize(s); });
  const double three_memsets = mean_us(reps, [&] {
    for (int i = 0; i < 3; ++i) cudaMemsetAsync(d, 0xFF, 1 << 16, s);
    cudaStreamSynchronize(s);
  });
  int attr = 0;
  const double attr_us =
      mean_us(reps, [&] { cudaDeviceGetAttribute(&attr, cudaDevAttrMultiProcessorCount, 0); });
  const double count_us = mean_us(reps, [&] { (void)cuda::device_count(); });
  std::printf(
      "[ latency  ] runtime: H2D 128 B pageable + sync %.1f us; D2H 80 B pageable + sync %.1f us, "
      "pinned "
      "%.1f us; memset 64 KB + sync %.1f us, three %.1f us; idle stream sync %.1f us; "
      "cudaDeviceGetAttribute %.2f us; device_count %.2f us\n",
      h2d, d2h, d2h_pinned, memset_sync, three_memsets, sync_idle, attr_us, count_us);
  cudaFreeHost(pinned);
  cudaStreamDestroy(s);
  cudaFree(d);
  search_params p;
  search({}, p, idx, q1, k, {ids.data(), 1, k}, {dist.data(), 1, k});
  EXPECT_LT(ids[0], idx.size());
}

/** The host's share of a default batch-1 call (the persistent kernel): the public search (what a
 *  user and `cagra bench` call: checks, the plan, the backend) against cuda::search with the plan
 *  made once, and the plan alone, on SIFT-wall-1M where CAGRA_LATENCY_INDEX names it. */
TEST_F(CudaLatency, PersistentHostPath) {
  const latency_data data = latency_data_or(u8_, &set_->queries);
  const cagra::index& idx = *data.idx;
  const std::vector<host_matrix> hq = one_row_queries(data, 1000);
  const uint32_t k = 10, n_q = uint32_t(hq.size());
  std::vector<dataset_view> q1;
  for (uint32_t i = 0; i < n_q; ++i)
    q1.emplace_back(data.queries->row_bytes(i), data.queries->type(), 1, data.queries->cols());
  std::vector<uint32_t> ids(k);
  std::vector<float> dist(k);
  resources res;  // as `cagra bench --batch 1` has it
  res.num_threads = 1;
  const search_params p;  // the defaults
  const search_plan plan = plan_search(res, p, idx, k, 1);
  ASSERT_EQ(plan.io, search_io::persistent);
  const int reps = 20000;
  for (int round = 0; round < 3; ++round) {
    uint32_t a = 0, b = 0;
    const double api = mean_us(reps, [&] {
      search(res, p, idx, q1[a++ % n_q], k, {ids.data(), 1, k}, {dist.data(), 1, k});
    });
    const double direct =
        mean_us(reps, [&] { cuda::search(idx, hq[b++ % n_q], plan, ids.data(), dist.data(), 0); });
    const double planning = mean_us(reps, [&] { (void)plan_search(res, p, idx, k, 1); });
    std::printf(
        "[ latency  ] %s, defaults, batch 1 (persistent): cagra::search %.2f us, cuda::search "
        "with the plan made once %.2f us (the public path's share %.2f), plan_search alone "
        "%.2f us\n",
        data.name.c_str(), api, direct, api - direct, planning);
  }
  EXPECT_LT(ids[0], idx.size());
}

// Is a persistent call's time quantized by CTA 0's polls? CTA 0 restarts its two polls of the
// host after each job, one every 750 ns (persistent.cuh), and the host posts the next job a fixed
// time after the last one's lists: a post is seen by the first poll read that reaches the host
// after it, so the host's own time before the post would count only where it moves the post past
// a poll. Here the host waits `delay` more before each call (spinning), from 0 to 1.5 us in
// 100 ns steps, interleaved over rounds; "call" is the time a call takes, the wait not counted.
// Quantized, it falls by the delay until a poll's arrival is crossed, then jumps by a poll's
// spacing; not quantized, it stays flat.
TEST_F(CudaLatency, PersistentPostDelay) {
  const latency_data data = latency_data_or(u8_, &set_->queries);
  const cagra::index& idx = *data.idx;
  const std::vector<host_matrix> hq = one_row_queries(data, 1000);
  const uint32_t k = 10, n_q = uint32_t(hq.size());
  std::vector<uint32_t> ids(k);
  std::vector<float> dist(k);
  resources res;
  res.num_threads = 1;
  const search_plan plan = plan_search(res, search_params{}, idx, k, 1);
  ASSERT_EQ(plan.io, search_io::persistent);
  constexpr int kDelays = 16, kRounds = 5, kCalls = 4000;
  std::vector<std::vector<double>> by_round(kDelays);
  uint32_t q = 0;
  for (int i = 0; i < 2000; ++i) cuda::search(idx, hq[q++ % n_q], plan, ids.data(), dist.data(), 0);
  for (int round = 0; round < kRounds; ++round)
    for (int d = 0; d < kDelays; ++d) {
      const uint64_t delay = uint64_t(d) * 100;
      const uint64_t t0 = cuda::steady_ns();
      for (int i = 0; i < kCalls; ++i) {
        const uint64_t until = cuda::steady_ns() + delay;
        while (cuda::steady_ns() < until) {
        }
        cuda::search(idx, hq[q++ % n_q], plan, ids.data(), dist.data(), 0);
      }
      const double per_call = double(cuda::steady_ns() - t0) / kCalls * 1e-3 - delay * 1e-3;
      by_round[d].push_back(per_call);
    }
  for (int d = 0; d < kDelays; ++d) {
    std::printf(
        "[ latency  ] %s, defaults, batch 1 (persistent): host wait %4d ns before each "
        "call: call %.2f us (rounds",
        data.name.c_str(), d * 100,
        std::accumulate(by_round[d].begin(), by_round[d].end(), 0.0) / kRounds);
    for (double v : by_round[d]) std::printf(" %.2f", v);
    std::printf(")\n");
  }
  EXPECT_LT(ids[0], idx.size());
}

// The batch-1 multi-CTA call taken apart on the GPU's clock (multi_cta.hpp's trace stamps: each
// CTA's phases, the merging CTA's end); the call's host time minus the kernel's span is launch,
// wait and host work. The latency modes are switched on one by one: the CTAs' lists polled as
// tagged words and merged by the host instead of the last CTA merging and a stream synchronize
// ("host merge"), the query inside the launch ("inline"); then
// the persistent kernel (host time only). On bigann10k (L2-resident), and on a 1M-scale index in
// DRAM when CAGRA_LATENCY_INDEX (a saved .cagra) and CAGRA_LATENCY_QUERIES are set
// (scripts/dev/device-latency.sh).
TEST_F(CudaLatency, TracedMultiCta) {
  const latency_data data = latency_data_or(u8_, &set_->queries);
  const cagra::index* idx = data.idx;
  const std::string& name = data.name;
  const std::vector<host_matrix> q1 = one_row_queries(data, 200);
  const uint32_t k = 10, n_q = uint32_t(q1.size());
  std::vector<uint32_t> ids(k);
  std::vector<float> dist(k);
  uint64_t* d_trace = nullptr;
  const uint32_t max_ctas = 128;
  const size_t trace_words = size_t{max_ctas} * cuda::kMultiCtaTraceSlots;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&d_trace), trace_words * 8), cudaSuccess);
  // The two result paths of a small batch (the plan's io): the last CTA merging on the device and
  // the host synchronizing, or each CTA's list polled and merged on the host (the query inside
  // the launch at batch 1).
  struct mode {
    const char* name;
    search_io io;
  };
  const mode modes[] = {{"last-CTA merge", search_io::mapped},
                        {"host merge", search_io::host_merge}};
  std::printf(
      "[ latency  ] traced multi-CTA batch 1 on %s (%lld x %u %s, degree %u), %u queries%s\n",
      name.c_str(), (long long)idx->size(), idx->dim(), to_string(idx->storage_dtype()),
      idx->graph_degree(), n_q,
      CAGRA_MCTA_TRACE ? "" : " (no kernel trace: build with -DCAGRA_TRACE_KERNELS=ON)");
  // One case: the call in each result mode (traced), then the persistent kernel (host time).
  const auto run_case = [&](const std::string& label, const search_params& p) {
    for (const mode& md : modes) {
      search_params pl = p;  // a launch per query: no initial-node pool (the persistent kernel's)
      pl.persistent = false;
      search_plan plan = gpu_plan(*idx, pl, k, 1);
      plan.io = md.io;
      [[maybe_unused]] const uint32_t ctas = plan.ctas_per_query;
      uint32_t qi = 0;
      const double call = mean_us(
          2000, [&] { cuda::search(*idx, q1[qi++ % n_q], plan, ids.data(), dist.data(), 0); });
#if CAGRA_MCTA_TRACE
      cuda::testing::set_multi_cta_trace(d_trace);
      std::vector<std::vector<uint64_t>> calls;
      for (uint32_t i = 0; i < n_q; ++i) {
        ASSERT_EQ(cudaMemset(d_trace, 0, trace_words * 8), cudaSuccess);
        cuda::search(*idx, q1[i], plan, ids.data(), dist.data(), 0);
        ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
        calls.emplace_back(trace_words);
        ASSERT_EQ(cudaMemcpy(calls.back().data(), d_trace, trace_words * 8, cudaMemcpyDeviceToHost),
                  cudaSuccess);
        ASSERT_LT(ids[0], idx->size());
        ASSERT_TRUE(std::is_sorted(dist.begin(), dist.end()));
      }
      cuda::testing::set_multi_cta_trace(nullptr);
      const trace_summary t = summarize(calls, ctas);
      std::printf(
          "[ latency  ] %-22s %-17s call %5.1f us = span %5.1f + launch/wait/host %4.1f | "
          "query %.1f + %.1f, init %.1f, pick %.1f, claim %.1f, iteration0 %.1f, next "
          "%.2f each, all published %.1f, counted +%.1f, merged +%.1f\n",
          label.c_str(), md.name, call, t.span, call - t.span, t.query_copy, t.query_convert,
          t.init, t.pick, t.claim, t.iteration0, t.iteration, t.published, t.counted, t.merged);
#else
      std::printf("[ latency  ] %-22s %-17s call %5.1f us\n", label.c_str(), md.name, call);
#endif
    }
    // The persistent kernel (no launch, no synchronize, warm instruction caches): host time only.
    search_params pp = p;
    pp.persistent = true;
    const search_plan plan = gpu_plan(*idx, pp, k, 1);
    uint32_t qi = 0;
    const double call = mean_us(
        2000, [&] { cuda::search(*idx, q1[qi++ % n_q], plan, ids.data(), dist.data(), 0); });
    std::printf("[ latency  ] %-22s %-17s call %5.1f us\n", label.c_str(), "persistent", call);
#if CAGRA_MCTA_TRACE
    trace_persistent(label, *idx, q1, plan, d_trace, trace_words, ids.data(), dist.data());
#endif
  };
  // The automatic shape (search_width left at 1): what a default call runs.
  for (uint32_t itopk : {32u, 64u}) {
    search_params p;
    p.itopk_size = itopk;
    const search_plan plan = gpu_plan(*idx, p, k, 1);
    run_case("auto itopk " + std::to_string(itopk) + " (" + std::to_string(plan.ctas_per_query) +
                 " x " + std::to_string(plan.max_iterations) + ", " +
                 std::to_string(plan.initial_nodes) + " init)",
             p);
  }
  for (uint32_t ctas : {16u, 32u, 64u}) {
    for (uint32_t iters : {2u, 4u}) {
      search_params p;
      p.itopk_size = 32;
      p.search_width = ctas;
      p.max_iterations = iters;
      p.algo = search_algo::multi_cta;
      run_case(std::to_string(ctas) + " CTAs x " + std::to_string(iters) + " it", p);
    }
  }
  cudaFree(d_trace);
}

}  // namespace
}  // namespace cagra::test
