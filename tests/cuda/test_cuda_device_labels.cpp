// cagra::search into labels in device memory (cuda::search_into_labels): the labels equal those
// of the same search into host memory, for an index with labels, one without (row numbers), after
// an extend and after set_labels (the device copy of the labels is made again when they change);
// a stream-ordered call returns before its stream runs and gives the same labels; host labels with
// device queries, and the CPU backend, are refused; the C interface's device searches
// (cagra_index_search_device, cagra_index_search_labels_device) answer as its host ones. Needs a
// GPU.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/c_api.h>

#include "bigann_fixture.hpp"
#include "device_bytes.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

search_params single_cta() {
  search_params p;
  p.algo = search_algo::single_cta;
  return p;
}

struct labelled {
  std::vector<int64_t> labels;
  std::vector<float> d;
};

/** The search of `q` into host labels (host queries). */
labelled on_host(const index& idx, const host_matrix& q) {
  const int64_t nq = q.rows();
  labelled out{std::vector<int64_t>(size_t(nq) * kK), std::vector<float>(size_t(nq) * kK)};
  resources r;
  r.target = backend::cuda;
  search(r, single_cta(), idx, q, kK, matrix_view<int64_t>{out.labels.data(), nq, int64_t{kK}},
         {out.d.data(), nq, int64_t{kK}});
  return out;
}

/** The search of `q` (copied to the device) into device labels and distances; `stream` the
 *  caller's stream (null: the legacy default stream). */
labelled on_device(const index& idx, const host_matrix& q, cudaStream_t stream = nullptr,
                   bool stream_ordered = false) {
  const int64_t nq = q.rows();
  const size_t n = size_t(nq) * kK;
  device_bytes dq(q.size_bytes()), labels(n * 8), dist(n * 4);
  EXPECT_EQ(cudaMemcpy(dq.p, q.data(), q.size_bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  resources r;
  r.target = backend::cuda;
  r.cuda_stream = stream;
  r.stream_ordered = stream_ordered;
  search(r, single_cta(), idx, dataset_view(dq.p, q.type(), nq, q.cols(), memory_space::device), kK,
         matrix_view<int64_t>{labels.as<int64_t>(), nq, int64_t{kK}, memory_space::device},
         {dist.as<float>(), nq, int64_t{kK}, memory_space::device});
  if (stream) {
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  return {labels.to_host<int64_t>(n), dist.to_host<float>(n)};
}

void expect_same(const labelled& device, const labelled& host) {
  EXPECT_EQ(device.labels, host.labels);
  EXPECT_EQ(device.d, host.d);
}

class CudaDeviceLabels : public bigann_gpu_suite {
 protected:
  static index build_half(int64_t rows) {
    index_params p;
    p.graph_degree = 32;
    p.intermediate_graph_degree = 64;
    return build({}, p, slice(set_->base, 0, rows));
  }
  static std::vector<int64_t> spread(int64_t first, int64_t n, int64_t step) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = (first + i) * step + 3;
    return v;
  }
};

TEST_F(CudaDeviceLabels, AsOnTheHost) {
  const host_matrix& q = set_->queries;
  const int64_t half = set_->base.rows() / 2;
  index idx = build_half(half);
  {
    SCOPED_TRACE("no labels: row numbers");
    const labelled got = on_device(idx, q);
    expect_same(got, on_host(idx, q));
    EXPECT_LT(got.labels[0], half);
  }
  idx.set_labels(spread(0, half, 7));
  {
    SCOPED_TRACE("labels");
    const labelled got = on_device(idx, q);
    expect_same(got, on_host(idx, q));
    EXPECT_EQ(got.labels[0] % 7, 3);
  }
  const std::vector<int64_t> added = spread(half, set_->base.rows() - half, 7);
  extend({}, {}, idx, slice(set_->base, half, set_->base.rows() - half), added.data());
  {
    SCOPED_TRACE("after extend: the device copy of the labels made again");
    expect_same(on_device(idx, q), on_host(idx, q));
  }
  idx.set_labels(spread(0, idx.size(), 11));
  {
    SCOPED_TRACE("after set_labels");
    const labelled got = on_device(idx, q);
    expect_same(got, on_host(idx, q));
    EXPECT_EQ(got.labels[0] % 11, 3);
  }
}

TEST_F(CudaDeviceLabels, StreamOrderedReturnsBeforeItsStreamRuns) {
  index idx = build_half(set_->base.rows());
  idx.set_labels(spread(0, idx.size(), 5));
  const labelled waiting = on_device(idx, set_->queries);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  on_device(idx, set_->queries, s, true);  // once unheld: kernels loaded, the labels' copy made
  const auto hold = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); };
  ASSERT_EQ(cudaLaunchHostFunc(s, hold, nullptr), cudaSuccess);
  expect_same(on_device(idx, set_->queries, s, true), waiting);  // (it synchronizes s)
  // The call itself: queued behind the hold, it must return while the stream is still busy.
  const int64_t nq = set_->queries.rows();
  device_bytes dq(set_->queries.size_bytes()), labels(size_t(nq) * kK * 8);
  ASSERT_EQ(
      cudaMemcpy(dq.p, set_->queries.data(), set_->queries.size_bytes(), cudaMemcpyHostToDevice),
      cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, hold, nullptr), cudaSuccess);
  resources r;
  r.target = backend::cuda;
  r.cuda_stream = s;
  r.stream_ordered = true;
  const auto start = std::chrono::steady_clock::now();
  search(r, single_cta(), idx,
         dataset_view(dq.p, set_->queries.type(), nq, set_->queries.cols(), memory_space::device),
         kK, matrix_view<int64_t>{labels.as<int64_t>(), nq, int64_t{kK}, memory_space::device}, {});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(200));
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady) << "the caller's stream was not held";
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(labels.to_host<int64_t>(size_t(nq) * kK), waiting.labels);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST_F(CudaDeviceLabels, MixedMemoryAndTheCpuAreRefused) {
  const host_matrix& q = set_->queries;
  const int64_t nq = q.rows();
  device_bytes dq(q.size_bytes()), labels(size_t(nq) * kK * 8);
  std::vector<int64_t> host_labels(size_t(nq) * kK);
  const dataset_view device_q(dq.p, q.type(), nq, q.cols(), memory_space::device);
  resources r;
  r.target = backend::cuda;
  EXPECT_THROW(search(r, {}, *u8_, device_q, kK,
                      matrix_view<int64_t>{host_labels.data(), nq, int64_t{kK}}, {}),
               cagra::error);
  EXPECT_THROW(
      search(r, {}, *u8_, q, kK,
             matrix_view<int64_t>{labels.as<int64_t>(), nq, int64_t{kK}, memory_space::device}, {}),
      cagra::error);
  r.target = backend::cpu;
  EXPECT_THROW(
      search(r, {}, *u8_, device_q, kK,
             matrix_view<int64_t>{labels.as<int64_t>(), nq, int64_t{kK}, memory_space::device}, {}),
      cagra::error);
}

TEST_F(CudaDeviceLabels, TheCInterfaceAnswersAsOnTheHost) {
  const host_matrix& base = set_->base;
  const host_matrix& q = set_->queries;
  const int64_t nq = q.rows(), dim = q.cols();
  const size_t n = size_t(nq) * kK;
  cagra_build_params_t bp;
  ASSERT_EQ(cagra_build_params_default(&bp), CAGRA_OK);
  bp.graph_degree = 32;
  bp.intermediate_graph_degree = 64;
  cagra_index_t* h = nullptr;
  ASSERT_EQ(cagra_index_build(&bp, base.data(), CAGRA_DTYPE_U8, base.rows(), dim, &h), CAGRA_OK);
  const std::vector<int64_t> labels = spread(0, base.rows(), 9);
  ASSERT_EQ(cagra_index_set_labels(h, labels.data(), base.rows()), CAGRA_OK);
  cagra_search_params_t sp;
  ASSERT_EQ(cagra_search_params_default(&sp), CAGRA_OK);
  sp.algo = CAGRA_SEARCH_ALGO_SINGLE_CTA;
  sp.resources.backend = CAGRA_BACKEND_CUDA;
  device_bytes dq(q.size_bytes()), d_ids(n * 4), d_labels(n * 8), d_dist(n * 4);
  ASSERT_EQ(cudaMemcpy(dq.p, q.data(), q.size_bytes(), cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<uint32_t> ids(n);
  std::vector<int64_t> host_labels(n);
  std::vector<float> dist(n), labels_dist(n);
  ASSERT_EQ(cagra_index_search(h, &sp, q.data(), CAGRA_DTYPE_U8, nq, dim, kK, ids.data(),
                               dist.data(), nullptr),
            CAGRA_OK);
  ASSERT_EQ(cagra_index_search_labels(h, &sp, q.data(), CAGRA_DTYPE_U8, nq, dim, kK,
                                      host_labels.data(), labels_dist.data(), nullptr),
            CAGRA_OK);
  ASSERT_EQ(cagra_index_search_device(h, &sp, dq.p, CAGRA_DTYPE_U8, nq, dim, kK,
                                      d_ids.as<uint32_t>(), d_dist.as<float>(), nullptr),
            CAGRA_OK)
      << cagra_last_error();
  EXPECT_EQ(d_ids.to_host<uint32_t>(n), ids);
  EXPECT_EQ(d_dist.to_host<float>(n), dist);
  for (int ordered = 0; ordered < 2; ++ordered) {
    sp.stream_ordered = ordered;
    ASSERT_EQ(cudaMemset(d_labels.p, 0, n * 8), cudaSuccess);
    ASSERT_EQ(cagra_index_search_labels_device(h, &sp, dq.p, CAGRA_DTYPE_U8, nq, dim, kK,
                                               d_labels.as<int64_t>(), nullptr, nullptr),
              CAGRA_OK)
        << cagra_last_error();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(d_labels.to_host<int64_t>(n), host_labels) << "stream_ordered " << ordered;
  }
  EXPECT_NE(cagra_index_search_labels_device(h, &sp, q.data(), CAGRA_DTYPE_U8, nq, dim, kK,
                                             d_labels.as<int64_t>(), nullptr, nullptr),
            CAGRA_OK);  // host queries
  EXPECT_EQ(cagra_index_free(h), CAGRA_OK);
}

}  // namespace
}  // namespace cagra::test
