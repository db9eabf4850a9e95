// The paper's Q-B3 on the GPU: queries per second of each search kernel forced (single-CTA,
// multi-CTA) at batch sizes 1..10K on bigann10k, with recall@10 of each and what the automatic
// choice picks. A measurement for the logs (bench/, not a test): run it on the GPU machine with
// `cagra_cuda_bench --gtest_filter=CudaMultiCtaSweep*`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "bigann_fixture.hpp"
#include "cuda/backend.hpp"
#include "search_results.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

using clk = std::chrono::steady_clock;

/** Median seconds of calls of f after one warm-up: at least 5 calls, until 0.2 s or 2,000 calls. */
template <typename F>
double median_call_seconds(F&& f) {
  f();
  std::vector<double> t;
  const auto start = clk::now();
  while (t.size() < 5 ||
         (t.size() < 2000 && std::chrono::duration<double>(clk::now() - start).count() < 0.2)) {
    const auto t0 = clk::now();
    f();
    t.push_back(std::chrono::duration<double>(clk::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/** The GPU's answer with kernel `algo`. */
result gpu_run(const cagra::index& idx, const host_matrix& q, uint32_t k, search_params p,
               search_algo algo, int64_t batch) {
  p.algo = algo;
  return gpu_search(idx, q, k, p, batch);
}

TEST(CudaMultiCtaSweep, BatchSizesQB3) {
  // The paper's Q-B3 on bigann10k (u8, degree 32, itopk 64 and 256, k 10): queries per second
  // of one cuda::search call (host transfers included; the median call) with each kernel forced,
  // and recall@10 of each on the 100 distinct queries (searched in batches of min(batch, 100)).
  ASSERT_GT(cuda::device_count(), 0) << "no CUDA device: the cuda tests need a GPU";
  const real_set s = bigann10k();
  const cagra::index idx = build({}, small_params(), s.base);
  const uint32_t k = 10;
  const int sm = cuda::cuda_info(0).sm_count;
  std::printf("[ bench    ] Q-B3 sweep on %s: bigann10k u8 l2, degree 32, k 10\n",
              cuda::describe(cuda::cuda_info(0)).c_str());
  std::printf("[ bench    ] %5s %6s | %12s %8s | %12s %8s | %s\n", "itopk", "batch", "single QPS",
              "recall", "multi QPS", "recall", "automatic");
  for (uint32_t it : {64u, 256u}) {
    for (int64_t batch : {1, 10, 100, 1000, 10000}) {
      double qps[2], rec[2];
      for (int a = 0; a < 2; ++a) {
        search_params p = itopk(it);
        p.algo = a == 0 ? search_algo::single_cta : search_algo::multi_cta;
        p.persistent = false;  // both kernels launched per call
        const result r = gpu_run(idx, s.queries, k, p, p.algo, std::min<int64_t>(batch, 100));
        rec[a] = recall(r.view(), s.truth.as<uint32_t>(), k);
        const host_matrix q = repeat_rows(s.queries, batch);  // u8 queries: already the query type
        const search_plan plan = gpu_plan(idx, p, k, batch);
        std::vector<uint32_t> ids(size_t(batch) * k);
        std::vector<float> dist(ids.size());
        qps[a] = batch / median_call_seconds(
                             [&] { cuda::search(idx, q, plan, ids.data(), dist.data(), 0); });
        expect_well_formed(r, idx.size(), "sweep");
      }
      std::printf("[ bench    ] %5u %6lld | %12.0f %8.4f | %12.0f %8.4f | %s\n", it,
                  (long long)batch, qps[0], rec[0], qps[1], rec[1],
                  to_string(gpu_plan(idx, itopk(it), k, batch).algo));
      EXPECT_GE(rec[1], rec[0] - 0.01) << "batch " << batch;
    }
  }
  std::printf("[ bench    ] (automatic: multi-CTA below %d queries, the device's SM count)\n", sm);
}

}  // namespace
}  // namespace cagra::test
