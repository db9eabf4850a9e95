// The GPU backend under stress (issue 17): a device that runs out of memory gives a clear error,
// keeps nothing half-built and works again once memory is back; eight host threads searching
// one GPU index at once get the answers a single thread gets, with the persistent kernel on and
// off. Needs a GPU: label `cuda` (scripts/dev/device-check.sh runs it, also under
// compute-sanitizer).
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/cagra.hpp>

#include "bigann_fixture.hpp"
#include "cuda/testing.hpp"
#include "search_results.hpp"

namespace cagra::test {
namespace {

class CudaRobustness : public bigann_gpu_suite {};

resources gpu() {
  resources r;
  r.target = backend::cuda;
  return r;
}

/** Takes device memory in blocks (256 MiB, then 16 MiB, then 1 MiB) until an allocation fails:
 *  what is left is less than 1 MiB. Frees it all on destruction. */
class device_hog {
 public:
  device_hog() {
    for (size_t block : {size_t{256} << 20, size_t{16} << 20, size_t{1} << 20}) {
      for (;;) {
        try {
          blocks_.push_back(cuda::testing::device_alloc(block, 0));
        } catch (const cagra::error&) {
          break;
        }
      }
    }
  }
  ~device_hog() { release(); }
  void release() {
    for (void* p : blocks_) cuda::testing::device_free(p);
    blocks_.clear();
  }

 private:
  std::vector<void*> blocks_;
};

TEST_F(CudaRobustness, OutOfDeviceMemoryIsAClearErrorAndRecovers) {
  const host_matrix& q = set_->queries;
  const uint32_t k = 10;
  // A fresh index (its device copy is made on first search) and its answer with memory to spare.
  index_params ip;
  ip.graph_degree = 32;
  resources cpu;
  cpu.target = backend::cpu;
  const cagra::index idx = build(cpu, ip, set_->base);
  const search_params p = itopk(64);
  search_params single = p;
  single.algo = search_algo::single_cta;
  // The 100-query batch: multi-CTA, forced so that it keeps 2 CTAs a query (the automatic count
  // is 8 on 132 SMs): `got == want` below needs the CTAs' races for nodes to stay rare.
  search_params multi = p;
  multi.algo = search_algo::multi_cta;
  std::vector<uint32_t> want(size_t(q.rows()) * k), got(want.size(), 12345u);
  std::vector<uint32_t> want_single(want.size());
  {
    const cagra::index other = build(cpu, ip, set_->base);  // the same graph (CPU build)
    search(gpu(), multi, other, q, k, {want.data(), q.rows(), k}, {});
  }
  search(gpu(), single, *u8_, q, k, {want_single.data(), q.rows(), k}, {});  // small workspace
  const host_matrix big = repeat_rows(q, 100000);  // single-CTA (a batch above the SM count)
  std::vector<uint32_t> big_ids(size_t(big.rows()) * k);
  {
    device_hog hog;
    try {
      search(gpu(), multi, idx, q, k, {got.data(), q.rows(), k}, {});
      ADD_FAILURE() << "a search with < 1 MiB of device memory left should fail";
    } catch (const cagra::error& e) {
      const std::string m = e.what();
      std::printf("[ cuda     ] expected error: %s\n", m.c_str());
      EXPECT_NE(m.find("out of device memory"), std::string::npos) << m;
      EXPECT_NE(m.find("MiB free"), std::string::npos) << m;
    }
    // A large batch on an index already on the device: its workspace cannot grow.
    EXPECT_THROW(search(gpu(), p, *u8_, big, k, {big_ids.data(), big.rows(), k}, {}), cagra::error);
  }
  // Memory is back: the same calls work and give the answers of searches that never failed.
  search(gpu(), multi, idx, q, k, {got.data(), q.rows(), k}, {});
  EXPECT_EQ(got, want);
  search(gpu(), p, *u8_, big, k, {big_ids.data(), big.rows(), k}, {});
  for (int64_t r = 0; r < big.rows(); r += 997)
    ASSERT_TRUE(std::equal(big_ids.begin() + r * k, big_ids.begin() + (r + 1) * k,
                           want_single.begin() + (r % q.rows()) * k))
        << "row " << r;
}

/** Each of `threads` threads searches every query of q one at a time (batch 1) and in one batch,
 *  `rounds` times; every answer must equal `want` (single thread, same parameters). */
void hammer(const cagra::index& idx, const host_matrix& q, uint32_t k, const search_params& p,
            const std::vector<uint32_t>& want, int threads, int rounds) {
  std::vector<std::string> failures(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        std::vector<uint32_t> ids(want.size());
        for (int r = 0; r < rounds; ++r) {
          for (int64_t i = 0; i < q.rows(); ++i) {
            const int64_t row = (i + t * 7) % q.rows();  // threads start at different queries
            const dataset_view one(q.row_bytes(row), q.type(), 1, q.cols());
            search(gpu(), p, idx, one, k, {ids.data() + row * k, 1, k}, {});
          }
          if (ids != want) failures[t] = "batch-1 answers differ from the single thread's";
          search(gpu(), p, idx, q, k, {ids.data(), q.rows(), k}, {});
          if (ids != want) failures[t] = "batch answers differ from the single thread's";
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  for (std::thread& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST_F(CudaRobustness, EightThreadsOneIndex) {
  const host_matrix& q = set_->queries;
  const uint32_t k = 10;
  // Deterministic plans, so "the same answer" is exact: a multi-CTA search of one CTA per query
  // (itopk 32, k 10: ceil(max(32, 2k) / 32) = 1 list; the kernel forced, which keeps that count
  // instead of the automatic one that grows with the SMs), for the batch and for batch 1,
  // launched per query or through the persistent kernel.
  for (bool persistent : {false, true}) {
    search_params p = itopk(32);
    p.algo = search_algo::multi_cta;
    p.persistent = persistent;
    std::vector<uint32_t> batch_want(size_t(q.rows()) * k), one_want(batch_want.size());
    search(gpu(), p, *u8_, q, k, {batch_want.data(), q.rows(), k}, {});
    for (int64_t i = 0; i < q.rows(); ++i) {
      const dataset_view one(q.row_bytes(i), q.type(), 1, q.cols());
      search(gpu(), p, *u8_, one, k, {one_want.data() + i * k, 1, k}, {});
    }
    ASSERT_EQ(gpu_plan(*u8_, p, k, 1).ctas_per_query, 1u);
    EXPECT_EQ(one_want, batch_want) << "one CTA per query: the kernels agree";
    hammer(*u8_, q, k, p, batch_want, 8, 3);
  }
}

}  // namespace
}  // namespace cagra::test
