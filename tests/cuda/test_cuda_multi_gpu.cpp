// The multi-device layer (cagra/multi_gpu.hpp) on the GPU. On any machine with a GPU: shards as
// logical parts of device 0 (the CUDA search of every shard, run concurrently on one GPU, must
// give the CPU backend's sharded answer bit for bit with the single-CTA kernel on u8 data, whose
// distances are exact), a copy of an index per device kept up to date by extend, and the
// replicated path's slicing. With two or more GPUs also: shards spread over the devices give the
// same answer as shards on one device, and a replicated search over every device gives the
// single-device answer of each slice, also with several callers at once. A sharded search of
// device queries (NCCL between GPUs) gives the host-query answer. Needs a GPU: label `cuda`.
#include <cstdio>
#include <thread>

#include <gtest/gtest.h>

#include <cagra/multi_gpu.hpp>

#include "bigann_fixture.hpp"
#include "cuda/testing.hpp"
#include "search_results.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

resources on(backend target, std::vector<int> devices = {}) {
  resources r;
  r.target = target;
  r.devices = std::move(devices);
  return r;
}

template <typename Index>
result run(const resources& res, const Index& idx, const host_matrix& q, search_params p) {
  result r{std::vector<uint32_t>(size_t(q.rows()) * kK, 12345u),
           std::vector<float>(size_t(q.rows()) * kK, -1.f), q.rows(), kK};
  search(res, p, idx, q, kK, {r.ids.data(), q.rows(), kK}, {r.dist.data(), q.rows(), kK});
  return r;
}

std::vector<int> all_devices() {
  std::vector<int> d;
  for (int i = 0; i < cuda::device_count(); ++i) d.push_back(i);
  return d;
}

class CudaMultiGpu : public bigann_gpu_suite {
 protected:
  static void SetUpTestSuite() {
    bigann_gpu_suite::SetUpTestSuite();
    if (!set_) return;
    // Built on the CPU: the same graphs whichever GPU searches them.
    resources cpu = on(backend::cpu);
    sharded_ = new sharded_index(build_sharded(cpu, small_params(), set_->base, 4));
  }
  static void TearDownTestSuite() {
    delete sharded_;
    sharded_ = nullptr;
    bigann_gpu_suite::TearDownTestSuite();
  }
  static inline sharded_index* sharded_ = nullptr;
};

TEST_F(CudaMultiGpu, ShardsOnOneGpuEqualTheCpu) {
  ASSERT_NE(sharded_, nullptr);
  search_params p = itopk(64);
  p.algo = search_algo::single_cta;
  const result c = run(on(backend::cpu), *sharded_, set_->queries, p);
  const result g = run(on(backend::cuda), *sharded_, set_->queries, p);
  EXPECT_EQ(c.ids, g.ids);
  EXPECT_EQ(c.dist, g.dist);
  // Automatic (the multi-CTA kernel at 100 queries): recall parity with the CPU's.
  const result ga = run(on(backend::cuda), *sharded_, set_->queries, itopk(64));
  const double rc = recall(c.view(), truth(), kK), rg = recall(ga.view(), truth(), kK);
  std::printf("[ cuda     ] 4 shards on device 0, itopk 64: recall@10 cpu %.4f gpu %.4f\n", rc, rg);
  EXPECT_GE(rg, rc - 0.01);
  expect_well_formed(ga, sharded_->size(), "sharded, automatic");
}

TEST_F(CudaMultiGpu, ShardsOverDevicesEqualShardsOnOne) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two GPUs (one is visible)";
  search_params p = itopk(64);
  p.algo = search_algo::single_cta;
  const result one = run(on(backend::cuda), *sharded_, set_->queries, p);
  const result many = run(on(backend::cuda, all_devices()), *sharded_, set_->queries, p);
  EXPECT_EQ(one.ids, many.ids);
  EXPECT_EQ(one.dist, many.dist);
}

TEST_F(CudaMultiGpu, ReplicatedEqualsOneDevicePerSlice) {
  // 2,048 queries: at least 512 a device on up to 4 devices, so the batch is split.
  const host_matrix q = repeat_rows(set_->queries, 2048);
  search_params p = itopk(64);
  p.algo = search_algo::single_cta;
  const result one = run(on(backend::cuda), *u8_, q, p);
  const std::vector<int> devices = all_devices();
  const result rep = run(on(backend::cuda, devices), *u8_, q, p);
  EXPECT_EQ(one.ids, rep.ids) << devices.size() << " devices";
  EXPECT_EQ(one.dist, rep.dist);
  // Small batches go whole to the least busy device: every call gives the one-device answer.
  const host_matrix few = head(set_->queries, 7);
  const result want = run(on(backend::cuda), *u8_, few, itopk(64));
  for (int call = 0; call < 5; ++call) {
    const result got = run(on(backend::cuda, devices), *u8_, few, itopk(64));
    EXPECT_EQ(recall(got.view(), head(set_->truth, 7).as<uint32_t>(), kK),
              recall(want.view(), head(set_->truth, 7).as<uint32_t>(), kK))
        << "call " << call;
    expect_well_formed(got, u8_->size(), "replicated small batch");
  }
}

TEST_F(CudaMultiGpu, ConcurrentCallersGetTheOneDeviceAnswer) {
  // Callers in parallel on a replicated index: each call takes the idle devices (split) or the
  // least busy one (whole), and every call must still give the one-device answer.
  const host_matrix q = repeat_rows(set_->queries, 2048);
  search_params p = itopk(64);
  p.algo = search_algo::single_cta;
  const result one = run(on(backend::cuda), *u8_, q, p);
  const std::vector<int> devices = all_devices();
  constexpr int kCallers = 4, kCalls = 3;
  std::vector<int> same(kCallers * kCalls, 0);
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      for (int i = 0; i < kCalls; ++i) {
        const result got = run(on(backend::cuda, devices), *u8_, q, p);
        same[size_t(c * kCalls + i)] = got.ids == one.ids && got.dist == one.dist;
      }
    });
  for (auto& t : callers) t.join();
  for (size_t i = 0; i < same.size(); ++i)
    EXPECT_TRUE(same[i]) << "caller " << i / kCalls << " call " << i % kCalls << ", "
                         << devices.size() << " devices";
}

TEST_F(CudaMultiGpu, ExtendUpdatesTheCopyOnEveryDevice) {
  // An index searched on every device, then extended: each device's copy must see the new rows.
  index idx = build(on(backend::cpu), small_params(), head(set_->base, 6000));
  const std::vector<int> devices = all_devices();
  search_params p = itopk(64);
  p.algo = search_algo::single_cta;
  for (int d : devices) {
    resources r = on(backend::cuda);
    r.device = d;
    (void)run(r, idx, set_->queries, p);
  }
  extend(on(backend::cpu), extend_params{}, idx, slice(set_->base, 6000, 3900));
  const result c = run(on(backend::cpu), idx, set_->queries, p);
  for (int d : devices) {
    resources r = on(backend::cuda);
    r.device = d;
    const result g = run(r, idx, set_->queries, p);
    EXPECT_EQ(c.ids, g.ids) << "device " << d;
  }
}

TEST_F(CudaMultiGpu, ShardedDeviceQueriesEqualHostQueries) {
  // Queries in device memory on device 0 (cupy / torch arrays): each shard is searched on its
  // device (with two or more GPUs NCCL carries the queries there and the lists back) and the
  // lists are merged on device 0. Same answer as the host-query sharded search, bit for bit
  // (single-CTA kernel, u8 rows: exact distances, and the same (distance, id) merge order).
  ASSERT_NE(sharded_, nullptr);
  search_params p = itopk(64);
  p.algo = search_algo::single_cta;
  const std::vector<int> devices = all_devices();
  const host_matrix& q = set_->queries;
  const result want = run(on(backend::cuda, devices), *sharded_, q, p);
  const int64_t nq = q.rows();
  const size_t q_bytes = size_t(nq) * size_t(q.cols()) * dtype_size(q.type());
  const size_t n = size_t(nq) * kK;
  void* dq = cuda::testing::device_alloc(q_bytes, 0);
  void* d_ids = cuda::testing::device_alloc(n * sizeof(uint32_t), 0);
  void* d_dist = cuda::testing::device_alloc(n * sizeof(float), 0);
  cuda::testing::copy_memory(dq, q.data(), q_bytes);
  const auto dev = memory_space::device;
  const dataset_view dqv(dq, q.type(), nq, q.cols(), dev);
  const matrix_view<uint32_t> ids_v{static_cast<uint32_t*>(d_ids), nq, kK, dev};
  const matrix_view<float> dist_v{static_cast<float*>(d_dist), nq, kK, dev};
  search(on(backend::cuda, devices), p, *sharded_, dqv, kK, ids_v, dist_v);
  result got{std::vector<uint32_t>(n), std::vector<float>(n), nq, kK};
  cuda::testing::copy_memory(got.ids.data(), d_ids, n * sizeof(uint32_t));
  cuda::testing::copy_memory(got.dist.data(), d_dist, n * sizeof(float));
  EXPECT_EQ(want.ids, got.ids) << devices.size() << " devices";
  EXPECT_EQ(want.dist, got.dist);
  // Without distances, too; and mixed memory spaces or the CPU backend are errors.
  search(on(backend::cuda, devices), p, *sharded_, dqv, kK, ids_v, {});
  std::vector<uint32_t> again(n);
  cuda::testing::copy_memory(again.data(), d_ids, n * sizeof(uint32_t));
  EXPECT_EQ(want.ids, again);
  std::vector<uint32_t> host_ids(n);
  EXPECT_THROW(
      search(on(backend::cuda, devices), p, *sharded_, dqv, kK, {host_ids.data(), nq, kK}, {}),
      error);
  EXPECT_THROW(search(on(backend::cpu), p, *sharded_, dqv, kK, ids_v, {}), error);
  cuda::testing::device_free(dq);
  cuda::testing::device_free(d_ids);
  cuda::testing::device_free(d_dist);
}

TEST_F(CudaMultiGpu, DeviceQueriesNeedOneDevice) {
  if (cuda::device_count() < 2) GTEST_SKIP() << "needs two GPUs (one is visible)";
  void* q = cuda::testing::device_alloc(128, 0);
  void* ids = cuda::testing::device_alloc(kK * 4, 0);
  resources r = on(backend::cuda, {0, 1});
  EXPECT_THROW(
      search(r, {}, *u8_, dataset_view(q, dtype::u8, 1, 128, memory_space::device), kK,
             matrix_view<uint32_t>{static_cast<uint32_t*>(ids), 1, kK, memory_space::device}, {}),
      error);
  cuda::testing::device_free(q);
  cuda::testing::device_free(ids);
}

}  // namespace
}  // namespace cagra::test
