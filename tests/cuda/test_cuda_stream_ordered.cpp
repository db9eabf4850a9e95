// resources::stream_ordered: a search of device memory that returns once its work is queued. The
// caller's stream is held by a host function while the queries are copied on it, so the search
// cannot have run when the call returns: the call must return at once, with the stream still
// busy, and the results, read on that stream, must be those of a search that waits for them
// (single-CTA bit for bit; multi-CTA by recall: its CTAs race for nodes). Bad rows (NaN, Inf,
// cosine all zeros) get kInvalidId and NaN instead of an exception, the other rows their answers.
// An extend or the index's end while such a search is queued waits for it. Needs a GPU.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bigann_fixture.hpp"
#include "device_bytes.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;
constexpr auto kHold = std::chrono::milliseconds(300);

struct answers {
  std::vector<uint32_t> ids;
  std::vector<float> d;
};

host_matrix f32_rows(const host_matrix& u8) {
  host_matrix out(dtype::f32, u8.rows(), u8.cols());
  const auto* b = static_cast<const uint8_t*>(u8.data());
  for (int64_t i = 0; i < u8.rows() * u8.cols(); ++i) out.as<float>().data[i] = float(b[i]);
  return out;
}

/** A search of `q` copied to the device on a stream that a host function holds for kHold:
 *  `stream_ordered` or waiting. The stream-ordered call must return before the hold ends, with
 *  the stream still busy; the results are read on the stream afterwards. `before_reading` runs
 *  between the call and the read (an extend, the index's end). */
answers held_search(const index& idx, const host_matrix& q, const search_params& p,
                    bool stream_ordered, const std::function<void()>& before_reading = {}) {
  const int64_t nq = q.rows();
  const size_t n = size_t(nq) * kK;
  cudaStream_t s = nullptr;
  EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  void* pinned = nullptr;
  EXPECT_EQ(cudaMallocHost(&pinned, q.size_bytes()), cudaSuccess);
  std::memcpy(pinned, q.data(), q.size_bytes());
  device_bytes dq(q.size_bytes()), ids(n * 4), dist(n * 4);
  resources r;
  r.target = backend::cuda;
  r.cuda_stream = s;
  r.stream_ordered = stream_ordered;
  const auto run = [&] {
    search(r, p, idx, dataset_view(dq.p, q.type(), nq, q.cols(), memory_space::device), kK,
           {ids.as<uint32_t>(), nq, int64_t{kK}, memory_space::device},
           {dist.as<float>(), nq, int64_t{kK}, memory_space::device});
  };
  if (stream_ordered) {  // once unheld: a kernel's first launch loads it, which may wait for
    // the device (CUDA's lazy module loading; seen under compute-sanitizer)
    EXPECT_EQ(cudaMemcpy(dq.p, pinned, q.size_bytes(), cudaMemcpyHostToDevice), cudaSuccess);
    run();
    EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  }
  EXPECT_EQ(cudaMemset(dq.p, 0, q.size_bytes()), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto hold = [](void*) { std::this_thread::sleep_for(kHold); };
  EXPECT_EQ(cudaLaunchHostFunc(s, hold, nullptr), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(dq.p, pinned, q.size_bytes(), cudaMemcpyHostToDevice, s), cudaSuccess);
  const auto t0 = std::chrono::steady_clock::now();
  run();
  const auto took = std::chrono::steady_clock::now() - t0;
  if (stream_ordered) {
    EXPECT_LT(took, kHold * 2 / 3) << "a stream-ordered search waited for its stream";
    EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady) << "the caller's stream was not held";
  } else {
    EXPECT_GE(took, kHold / 2) << "a waiting search returned before its queries were copied";
  }
  if (before_reading) before_reading();
  answers a{std::vector<uint32_t>(n), std::vector<float>(n)};
  EXPECT_EQ(cudaMemcpyAsync(a.ids.data(), ids.p, n * 4, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(a.d.data(), dist.p, n * 4, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  return a;
}

search_params with(search_algo algo, traversal_type t = traversal_type::exact) {
  search_params p;
  p.algo = algo;
  p.traversal = t;
  return p;
}

/** Rows answered: (recall@kK of `a` against the exact neighbors of idx for q). */
double recall_of(const index& idx, const host_matrix& q, const answers& a) {
  resources cpu;
  cpu.target = backend::cpu;
  const knn_graph gt = brute_force_knn(cpu, idx.metric(), idx.vectors().view(), q, kK);
  return recall({a.ids.data(), q.rows(), int64_t{kK}}, gt.view(), kK);
}

class CudaStreamOrdered : public bigann_gpu_suite {
 protected:
  static index build_f32(metric m) {
    index_params p;
    p.metric = m;
    p.graph_degree = 32;
    p.intermediate_graph_degree = 64;
    return build({}, p, f32_rows(set_->base));
  }
  /** Stream-ordered and waiting, the same queries: equal answers (multi-CTA: equal recall). */
  static void expect_as_waiting(const char* what, const index& idx, const host_matrix& q,
                                const search_params& p) {
    SCOPED_TRACE(what);
    const answers waiting = held_search(idx, q, p, false);
    const answers ordered = held_search(idx, q, p, true);
    if (p.algo == search_algo::multi_cta) {
      EXPECT_GE(recall_of(idx, q, ordered), recall_of(idx, q, waiting) - 0.01);
    } else {
      EXPECT_EQ(ordered.ids, waiting.ids);
      EXPECT_EQ(ordered.d, waiting.d);
    }
  }
};

TEST_F(CudaStreamOrdered, AnswersAsAWaitingSearch) {
  expect_as_waiting("u8 single-CTA", *u8_, set_->queries, with(search_algo::single_cta));
  expect_as_waiting("u8 multi-CTA", *u8_, set_->queries, with(search_algo::multi_cta));
  const host_matrix qf = f32_rows(set_->queries);
  const index l2 = build_f32(metric::l2), cosine = build_f32(metric::cosine);
  expect_as_waiting("f32 l2, queries in place", l2, qf, with(search_algo::single_cta));
  expect_as_waiting("f32 cosine, queries normalized", cosine, qf, with(search_algo::single_cta));
  expect_as_waiting("f32 l2, int8 traversal", l2, qf,
                    with(search_algo::single_cta, traversal_type::int8));
  expect_as_waiting("f32 cosine, int8 traversal", cosine, qf,
                    with(search_algo::single_cta, traversal_type::int8));
}

TEST_F(CudaStreamOrdered, BadRowsGetInvalidIdsAndNaN) {
  const host_matrix qf = f32_rows(set_->queries);
  const int64_t nq = qf.rows(), d = qf.cols();
  host_matrix bad = host_matrix::copy_of(qf);
  float* b = bad.as<float>().data;
  b[3 * d + 17] = std::numeric_limits<float>::quiet_NaN();
  b[7 * d] = std::numeric_limits<float>::infinity();
  host_matrix zero = host_matrix::copy_of(bad);
  std::fill(zero.as<float>().data + 5 * d, zero.as<float>().data + 6 * d, 0.f);
  const index l2 = build_f32(metric::l2), cosine = build_f32(metric::cosine);
  struct job {
    const char* what;
    const index& idx;
    const host_matrix& q;
    search_params p;
    std::vector<int64_t> bad_rows;
  };
  const job jobs[] = {
      {"l2 single-CTA", l2, bad, with(search_algo::single_cta), {3, 7}},
      {"l2 multi-CTA", l2, bad, with(search_algo::multi_cta), {3, 7}},
      {"l2 int8", l2, bad, with(search_algo::single_cta, traversal_type::int8), {3, 7}},
      {"cosine", cosine, zero, with(search_algo::single_cta), {3, 5, 7}},
      {"cosine int8", cosine, zero, with(search_algo::single_cta, traversal_type::int8), {3, 5, 7}},
  };
  for (const job& j : jobs) {
    SCOPED_TRACE(j.what);
    const answers good = held_search(j.idx, qf, j.p, false);
    const answers a = held_search(j.idx, j.q, j.p, true);
    for (int64_t r = 0; r < nq; ++r) {
      const bool is_bad = std::find(j.bad_rows.begin(), j.bad_rows.end(), r) != j.bad_rows.end();
      for (uint32_t i = 0; i < kK; ++i) {
        const size_t at = size_t(r) * kK + i;
        if (is_bad) {
          ASSERT_EQ(a.ids[at], kInvalidId) << "row " << r;
          ASSERT_TRUE(std::isnan(a.d[at])) << "row " << r;
        } else if (j.p.algo == search_algo::multi_cta) {
          ASSERT_NE(a.ids[at], kInvalidId) << "row " << r;
        } else {  // a row's walk depends on its own bytes only
          ASSERT_EQ(a.ids[at], good.ids[at]) << "row " << r;
          ASSERT_EQ(a.d[at], good.d[at]) << "row " << r;
        }
      }
    }
  }
  // A waiting search of the same rows still throws.
  EXPECT_THROW(held_search(l2, bad, with(search_algo::single_cta), false), cagra::error);
}

TEST_F(CudaStreamOrdered, ExtendAndTheIndexEndWaitForAQueuedSearch) {
  const host_matrix qf = f32_rows(set_->queries);
  const search_params p = with(search_algo::single_cta);
  auto idx = std::make_unique<index>(build_f32(metric::l2));
  const answers before = held_search(*idx, qf, p, false);
  // Rows added while the search waits on the caller's stream: it answers from the rows it had.
  const host_matrix added = f32_rows(slice(set_->queries, 0, 50));
  resources gpu;
  gpu.target = backend::cuda;
  const answers during_extend = held_search(*idx, qf, p, true, [&] {
    extend(gpu, {}, *idx, added);
    EXPECT_EQ(idx->size(), set_->base.rows() + 50);
  });
  EXPECT_EQ(during_extend.ids, before.ids);
  EXPECT_EQ(during_extend.d, before.d);
  // The index destroyed while its search is queued: its device copy waits for the search.
  const answers grown = held_search(*idx, qf, p, false);
  const answers during_end = held_search(*idx, qf, p, true, [&] { idx.reset(); });
  EXPECT_EQ(during_end.ids, grown.ids);
  EXPECT_EQ(during_end.d, grown.d);
}

}  // namespace
}  // namespace cagra::test
