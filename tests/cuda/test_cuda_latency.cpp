// Where the time of one batch-1 GPU search goes (a print for the logs, nothing asserted but the
// answer): the whole cagra::search call, cuda::search on an already converted query, the same
// with a one-iteration search (kernel work nearly nil: what is left is the fixed cost of a call),
// and the CUDA runtime pieces such a call is made of (small pageable copies, a memset launch, a
// stream synchronize, the device queries), each the mean of many calls after a warm-up.
#include <chrono>
#include <cstdio>
#include <vector>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "bigann_fixture.hpp"
#include "core/convert.hpp"
#include "cpu/backend.hpp"

namespace cagra::test {
namespace {

using clk = std::chrono::steady_clock;

template <typename F>
double mean_us(int reps, F&& f) {
  for (int r = 0; r < reps / 10 + 1; ++r) f();  // warm-up
  const auto t0 = clk::now();
  for (int r = 0; r < reps; ++r) f();
  return std::chrono::duration<double, std::micro>(clk::now() - t0).count() / reps;
}

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
      const cpu::search_plan plan = cpu::make_search_plan(p, k, idx.size(), idx.graph_degree());
      cpu::search_plan one = plan;
      one.max_iterations = 1;
      one.min_iterations = 0;
      const double api = mean_us(reps, [&] {
        search(res, p, idx, q1, k, {ids.data(), 1, k}, {dist.data(), 1, k});
      });
      const double direct = mean_us(reps, [&] { cuda::search(idx, hq, k, p, plan, ids.data(), dist.data(), 0); });
      const double direct_ids = mean_us(reps, [&] { cuda::search(idx, hq, k, p, plan, ids.data(), nullptr, 0); });
      search_params p1 = p;
      p1.max_iterations = 1;  // explicit: each CTA's cap (the automatic budget has a floor)
      const double fixed = mean_us(reps, [&] { cuda::search(idx, hq, k, p1, one, ids.data(), dist.data(), 0); });
      std::printf("[ latency  ] itopk %3u width %2u: cagra::search %7.1f us, cuda::search %7.1f us (ids only "
                  "%7.1f), one iteration %7.1f us\n", itopk, width, api, direct, direct_ids, fixed);
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
      const cpu::search_plan plan = cpu::make_search_plan(p, k, idx.size(), idx.graph_degree());
      std::printf(" %u: %.1f us", iters,
                  mean_us(reps, [&] { cuda::search(idx, hq, k, p, plan, ids.data(), nullptr, 0); }));
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
  const double attr_us = mean_us(reps, [&] { cudaDeviceGetAttribute(&attr, cudaDevAttrMultiProcessorCount, 0); });
  const double count_us = mean_us(reps, [&] { (void)cuda::device_count(); });
  std::printf("[ latency  ] runtime: H2D 128 B pageable + sync %.1f us; D2H 80 B pageable + sync %.1f us, pinned "
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

}  // namespace
}  // namespace cagra::test
