// The int8 traversal on the GPU (search_params::traversal = int8) against the CPU oracle: the
// GPU re-ranking equals the CPU's on the same candidates (f32 and f16 rows, l2 and cosine), and
// the whole search (int8 walk + re-ranking) keeps the CPU's recall, for single-CTA batches
// (through the copy pipeline, past one 65,535-query grid) and multi-CTA batch-1 calls; a large
// batch encoded, walked and re-ranked on the device answers as small batches do (walked on the
// device, re-ranked on the host).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "bigann_fixture.hpp"
#include "core/backend.hpp"
#include "cuda/testing.hpp"
#include "device_bytes.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

resources on(backend b) {
  resources r;
  r.target = b;
  return r;
}

host_matrix as_f32(const host_matrix& u8) {
  host_matrix f(dtype::f32, u8.rows(), u8.cols());
  const uint8_t* s = static_cast<const uint8_t*>(u8.data());
  for (int64_t i = 0; i < u8.rows() * u8.cols(); ++i) f.as<float>().data[i] = s[i];
  return f;
}

/** Unit rows (what a cosine index compares queries as). */
host_matrix normalized(const host_matrix& f) {
  host_matrix out = host_matrix::copy_of(f);
  float* v = out.as<float>().data;
  for (int64_t i = 0; i < f.rows(); ++i) {
    double s = 0;
    for (int64_t j = 0; j < f.cols(); ++j) s += double(v[i * f.cols() + j]) * v[i * f.cols() + j];
    const float inv = float(1.0 / std::sqrt(s));
    for (int64_t j = 0; j < f.cols(); ++j) v[i * f.cols() + j] *= inv;
  }
  return out;
}

/** Two answers to the same queries: equal for L2 (integer-valued rows: exact sums either way),
 *  within f32 rounding of the sum order for cosine (near-ties may swap). */
void expect_same_answers(metric m, const std::vector<uint32_t>& ids, const std::vector<float>& d,
                         const std::vector<uint32_t>& ids2, const std::vector<float>& d2) {
  if (m == metric::l2) {
    EXPECT_EQ(ids2, ids);
    EXPECT_EQ(d2, d);
    return;
  }
  size_t same = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    same += ids[i] == ids2[i];
    ASSERT_NEAR(d[i], d2[i], 1e-5f) << i;
  }
  EXPECT_GE(same, ids.size() * 999 / 1000);
}

class CudaInt8Traversal : public bigann_gpu_suite {
 protected:
  static index build_f(metric m, storage_type st) {
    index_params p;
    p.metric = m;
    p.graph_degree = 32;
    p.storage = st;
    return build(on(backend::cpu), p, set_->base);
  }
};

TEST_F(CudaInt8Traversal, RerankEqualsTheCpus) {
  const uint32_t n_cand = 64;
  for (metric m : {metric::l2, metric::cosine}) {
    for (storage_type st : {storage_type::f32, storage_type::f16}) {
      SCOPED_TRACE(std::string(to_string(m)) + (st == storage_type::f16 ? " f16" : " f32"));
      const index idx = build_f(m, st);
      const host_matrix q32 = as_f32(set_->queries);
      const host_matrix q = m == metric::cosine ? normalized(q32) : host_matrix::copy_of(q32);
      // Candidates: a spread of rows, a duplicate-free pattern per query, one kInvalidId.
      std::vector<uint32_t> cand(size_t(q.rows()) * n_cand);
      for (int64_t i = 0; i < q.rows(); ++i)
        for (uint32_t j = 0; j < n_cand; ++j)
          cand[size_t(i) * n_cand + j] =
              j == 5 ? kInvalidId : uint32_t((i * 131 + j * 97) % idx.size());
      std::vector<uint32_t> ids_c(size_t(q.rows()) * kK), ids_g(ids_c.size());
      std::vector<float> d_c(ids_c.size()), d_g(ids_c.size());
      core::cpu_backend().rerank(idx, q, cand.data(), n_cand, kK, ids_c.data(), d_c.data(),
                                 on(backend::cpu));
      core::cuda_backend().rerank(idx, q, cand.data(), n_cand, kK, ids_g.data(), d_g.data(),
                                  on(backend::cuda));
      size_t same = 0;
      for (size_t i = 0; i < ids_c.size(); ++i) {
        same += ids_c[i] == ids_g[i];
        EXPECT_NEAR(d_g[i], d_c[i], 1e-5f * std::max(1.f, std::fabs(d_c[i]))) << i;
      }
      // L2 of integer-valued f32 rows is exact in both: the same ids. Cosine may swap near-ties.
      if (m == metric::l2 && st == storage_type::f32)
        EXPECT_EQ(ids_g, ids_c);
      else
        EXPECT_GE(same, ids_c.size() * 99 / 100);
    }
  }
}

TEST_F(CudaInt8Traversal, SearchKeepsTheCpusRecall) {
  for (storage_type st : {storage_type::f32, storage_type::f16}) {
    SCOPED_TRACE(st == storage_type::f16 ? "f16" : "f32");
    const index idx = build_f(metric::l2, st);
    search_params p;
    p.itopk_size = 64;
    p.traversal = traversal_type::int8;
    for (uint32_t batch : {100u, 1u}) {  // single-CTA, and multi-CTA one query a call
      std::vector<uint32_t> cpu_ids(100 * kK), gpu_ids(100 * kK);
      std::vector<float> gpu_d(100 * kK);
      search(on(backend::cpu), p, idx, set_->queries, kK, {cpu_ids.data(), 100, kK}, {});
      for (uint32_t first = 0; first < 100; first += batch) {
        const host_matrix q = slice(set_->queries, first, batch);
        search(on(backend::cuda), p, idx, q, kK, {gpu_ids.data() + first * kK, batch, kK},
               {gpu_d.data() + first * kK, batch, kK});
      }
      const double r_cpu = recall({cpu_ids.data(), 100, kK}, truth(), kK);
      const double r_gpu = recall({gpu_ids.data(), 100, kK}, truth(), kK);
      std::printf("%s batch %u: recall@10 int8 traversal CPU %.4f GPU %.4f\n",
                  st == storage_type::f16 ? "f16" : "f32", batch, r_cpu, r_gpu);
      EXPECT_GE(r_gpu, r_cpu - 0.01);
      EXPECT_GE(r_gpu, 0.95);
      for (size_t i = 0; i + 1 < gpu_d.size(); ++i)
        ASSERT_TRUE((i + 1) % kK == 0 || gpu_d[i] <= gpu_d[i + 1]) << i;
    }
  }
}

TEST_F(CudaInt8Traversal, DeviceBatchEqualsSmallBatches) {
  for (metric m : {metric::l2, metric::cosine}) {
    for (storage_type st : {storage_type::f32, storage_type::f16}) {
      SCOPED_TRACE(std::string(to_string(m)) + (st == storage_type::f16 ? " f16" : " f32"));
      const index idx = build_f(m, st);
      const int64_t nq = 4000;  // the copy pipeline: encoded, walked and re-ranked on the device
      host_matrix q(dtype::f32, nq, 128);
      const host_matrix base = as_f32(set_->base);
      for (int64_t i = 0; i < nq; ++i)  // rows of the base, slightly moved: new queries
        for (int j = 0; j < 128; ++j)
          q.as<float>().data[i * 128 + j] =
              base.as<float>().data[(i * 7 % base.rows()) * 128 + j] + float((i + j) % 5) - 2.f;
      search_params p;
      p.traversal = traversal_type::int8;
      ASSERT_TRUE(cuda::int8_on_device(plan_search(on(backend::cuda), p, idx, kK, nq), nq));
      std::vector<uint32_t> ids(size_t(nq) * kK), ids_steps(ids.size());
      std::vector<float> d(ids.size()), d_steps(ids.size());
      search(on(backend::cuda), p, idx, q, kK, {ids.data(), nq, kK}, {d.data(), nq, kK});
      for (int64_t first = 0; first < nq; first += 200) {  // 200 a call: the steps
        const host_matrix part = slice(q, first, 200);
        ASSERT_FALSE(cuda::int8_on_device(plan_search(on(backend::cuda), p, idx, kK, 200), 200));
        search(on(backend::cuda), p, idx, part, kK, {ids_steps.data() + first * kK, 200, kK},
               {d_steps.data() + first * kK, 200, kK});
      }
      // Small batches re-rank on the host (cpu::rerank).
      expect_same_answers(m, ids, d, ids_steps, d_steps);
    }
  }
}

// Cosine rows of a large batch are normalized on the device (search_plan::normalize_on_device),
// with the host's arithmetic: the same answers as small batches normalized on the host, exact
// walk or int8, and bad rows refused with their row number.
TEST_F(CudaInt8Traversal, CosineRowsNormalizedOnTheDeviceAnswerAsOnTheHost) {
  const index idx = build_f(metric::cosine, storage_type::f32);
  const int64_t nq = 3000;
  host_matrix q(dtype::f32, nq, 128);
  const uint8_t* b = static_cast<const uint8_t*>(set_->base.data());
  for (int64_t i = 0; i < nq; ++i)
    for (int j = 0; j < 128; ++j)
      q.as<float>().data[i * 128 + j] = 0.37f * float(b[(i * 13 % 9900) * 128 + j]) + 0.5f;
  for (traversal_type t : {traversal_type::exact, traversal_type::int8}) {
    search_params p;
    p.traversal = t;
    std::vector<uint32_t> ids(size_t(nq) * kK), ids_small(ids.size());
    std::vector<float> d(ids.size()), d_small(ids.size());
    search(on(backend::cuda), p, idx, q, kK, {ids.data(), nq, kK}, {d.data(), nq, kK});
    for (int64_t first = 0; first < nq; first += 200)
      search(on(backend::cuda), p, idx, slice(q, first, 200), kK,
             {ids_small.data() + first * kK, 200, kK}, {d_small.data() + first * kK, 200, kK});
    size_t same = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      same += ids[i] == ids_small[i];
      ASSERT_NEAR(d[i], d_small[i], 1e-5f) << i;
    }
    if (t == traversal_type::exact) {
      EXPECT_EQ(ids, ids_small);  // the same kernel on the same bits
      EXPECT_EQ(d, d_small);
    } else {
      EXPECT_GE(same, ids.size() * 999 / 1000);  // re-ranked on the host for small batches
    }
  }
  std::vector<uint32_t> ids(size_t(nq) * kK);
  host_matrix bad = host_matrix::copy_of(q);
  bad.as<float>().data[2500 * 128 + 3] = NAN;
  try {
    search(on(backend::cuda), search_params{}, idx, bad, kK, {ids.data(), nq, kK}, {});
    ADD_FAILURE() << "a NaN row was searched";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("row 2500 contains NaN"), std::string::npos) << e.what();
  }
  bad = host_matrix::copy_of(q);
  std::fill_n(bad.as<float>().data + 2999 * 128, 128, 0.f);
  search_params p8;
  p8.traversal = traversal_type::int8;
  try {
    search(on(backend::cuda), p8, idx, bad, kK, {ids.data(), nq, kK}, {});
    ADD_FAILURE() << "an all-zero row was searched";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("row 2999 is all zeros"), std::string::npos) << e.what();
  }
}

// Queries in device memory (cupy, torch): encoded, walked and re-ranked on the device, with the
// answers of the same rows from host memory.
TEST_F(CudaInt8Traversal, DeviceMemoryQueriesAnswerAsHostQueries) {
  for (metric m : {metric::l2, metric::cosine}) {
    SCOPED_TRACE(to_string(m));
    const index idx = build_f(m, storage_type::f32);
    const int64_t nq = 500;  // single-CTA either way
    host_matrix q(dtype::f32, nq, 128);
    const uint8_t* b = static_cast<const uint8_t*>(set_->base.data());
    for (int64_t i = 0; i < nq; ++i)
      for (int j = 0; j < 128; ++j)
        q.as<float>().data[i * 128 + j] = float(b[(i * 17 % 9900) * 128 + j]) + float(j % 3);
    search_params p;
    p.traversal = traversal_type::int8;
    std::vector<uint32_t> ids(size_t(nq) * kK);
    std::vector<float> d(ids.size());
    search(on(backend::cuda), p, idx, q, kK, {ids.data(), nq, kK}, {d.data(), nq, kK});
    device_bytes dq(q.size_bytes()), di(ids.size() * 4), dd(d.size() * 4);
    cuda::testing::copy_memory(dq.p, q.data(), q.size_bytes());
    search(on(backend::cuda), p, idx,
           matrix_view<const float>{static_cast<const float*>(dq.p), nq, 128, memory_space::device},
           kK, matrix_view<uint32_t>{static_cast<uint32_t*>(di.p), nq, kK, memory_space::device},
           matrix_view<float>{static_cast<float*>(dd.p), nq, kK, memory_space::device});
    std::vector<uint32_t> ids_dev(ids.size());
    std::vector<float> d_dev(d.size());
    cuda::testing::copy_memory(ids_dev.data(), di.p, ids.size() * 4);
    cuda::testing::copy_memory(d_dev.data(), dd.p, d.size() * 4);
    // Host rows of 500 queries are re-ranked on the host.
    expect_same_answers(m, ids, d, ids_dev, d_dev);
  }
}

// extend() on the GPU keeps the int8 copy (and its device index) in step: the new rows are found.
TEST_F(CudaInt8Traversal, CopyFollowsExtendOnTheDevice) {
  index_params ip;
  ip.graph_degree = 32;
  ip.storage = storage_type::f32;
  index idx = build(on(backend::cuda), ip, head(set_->base, 6000));
  search_params p;
  p.traversal = traversal_type::int8;
  std::vector<uint32_t> ids(100 * kK);
  std::vector<float> d(100 * kK);
  search(on(backend::cuda), p, idx, set_->queries, kK, {ids.data(), 100, kK}, {d.data(), 100, kK});
  const host_matrix more = slice(set_->base, 6000, 3900);
  extend(on(backend::cuda), extend_params{}, idx, more);
  ASSERT_NE(idx.derived_cache(), nullptr);  // followed, not dropped (9,900 <= 2 x 6,000)
  const host_matrix q = head(more, 100);
  search(on(backend::cuda), p, idx, q, kK, {ids.data(), 100, kK}, {d.data(), 100, kK});
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(d[size_t(i) * kK], 0.f) << i;
}

TEST_F(CudaInt8Traversal, LargeBatchPastOneGrid) {
  const index idx = build_f(metric::l2, storage_type::f32);
  const int64_t nq = 70000;  // the copy pipeline's chunks, and re-ranking past 65,535 CTAs
  host_matrix q(dtype::u8, nq, 128);
  for (int64_t i = 0; i < nq; ++i)
    std::memcpy(static_cast<uint8_t*>(q.data()) + i * 128, set_->queries.row_bytes(i % 100), 128);
  search_params p;
  p.traversal = traversal_type::int8;
  std::vector<uint32_t> ids(size_t(nq) * kK);
  search(on(backend::cuda), p, idx, q, kK, {ids.data(), nq, kK}, {});
  // Each query's answer is the same wherever it sits in the batch.
  for (int64_t i = 100; i < nq; ++i)
    for (uint32_t j = 0; j < kK; ++j)
      ASSERT_EQ(ids[size_t(i) * kK + j], ids[size_t(i % 100) * kK + j]) << i;
}

}  // namespace
}  // namespace cagra::test
