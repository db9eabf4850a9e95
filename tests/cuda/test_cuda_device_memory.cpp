// The device-memory path of cagra::search: queries, neighbors and distances in CUDA device memory
// (memory_space::device) are read and written in place by the CUDA backend. Checked against the
// host path on the same GPU: the same ids and distances, bit for bit, for u8/i8/f32/f16 storage,
// l2/ip/cosine (cosine queries are normalized on the device with the host's arithmetic), f32,
// f16 and byte queries, single-CTA; multi-CTA too, exactly where the host path itself repeats
// (its CTAs race for nodes, so two host runs may differ), else by recall. And the errors: a dtype
// the device path does not convert, mixed host/device views, the CPU backend, host memory labelled
// as device memory, wrong shapes, NaN and all-zero cosine rows. And resources::cuda_stream: the
// queries read only after the caller's stream's earlier work. Needs a GPU: label `cuda`.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bigann_fixture.hpp"
#include "cuda/backend.hpp"
#include "cuda/testing.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

/** Owning device copy of a host matrix (or an uninitialized device buffer). */
class device_array {
 public:
  device_array(size_t bytes) : bytes_(bytes), p_(cuda::testing::device_alloc(bytes, 0)) {}
  explicit device_array(const host_matrix& m) : device_array(m.size_bytes()) {
    cuda::testing::copy_memory(p_, m.data(), m.size_bytes());
  }
  ~device_array() { cuda::testing::device_free(p_); }
  device_array(const device_array&) = delete;
  device_array& operator=(const device_array&) = delete;
  void* get() const { return p_; }
  template <typename T>
  std::vector<T> to_host(size_t n) const {
    std::vector<T> v(n);
    cuda::testing::copy_memory(v.data(), p_, n * sizeof(T));
    return v;
  }

 private:
  size_t bytes_;
  void* p_;
};

struct result {
  std::vector<uint32_t> ids;
  std::vector<float> dist;
};

resources on(backend b) {
  resources r;
  r.target = b;
  return r;
}

result host_search(const cagra::index& idx, const host_matrix& q, uint32_t k,
                   const search_params& p) {
  result r{std::vector<uint32_t>(size_t(q.rows()) * k), std::vector<float>(size_t(q.rows()) * k)};
  search(on(backend::cuda), p, idx, q, k, {r.ids.data(), q.rows(), k},
         {r.dist.data(), q.rows(), k});
  return r;
}

/** The same search with the queries copied to the device and device outputs. */
result device_search(const cagra::index& idx, const host_matrix& q, uint32_t k,
                     const search_params& p, backend b = backend::cuda,
                     bool with_distances = true) {
  const int64_t nq = q.rows();
  device_array dq(q), ids(size_t(nq) * k * 4), dist(size_t(nq) * k * 4);
  const dataset_view qv(dq.get(), q.type(), nq, q.cols(), memory_space::device);
  matrix_view<float> dv{};
  if (with_distances) dv = {static_cast<float*>(dist.get()), nq, int64_t{k}, memory_space::device};
  search(on(b), p, idx, qv, k,
         {static_cast<uint32_t*>(ids.get()), nq, int64_t{k}, memory_space::device}, dv);
  result r{ids.to_host<uint32_t>(size_t(nq) * k), {}};
  if (with_distances) r.dist = dist.to_host<float>(size_t(nq) * k);
  return r;
}

int64_t identical_rows(const result& a, const result& b, int64_t nq, uint32_t k) {
  int64_t same = 0;
  for (int64_t q = 0; q < nq; ++q)
    same += std::memcmp(a.ids.data() + q * k, b.ids.data() + q * k, k * 4) == 0 &&
            std::memcmp(a.dist.data() + q * k, b.dist.data() + q * k, k * 4) == 0;
  return same;
}

double recall_of(const result& r, int64_t nq, uint32_t k, matrix_view<const uint32_t> truth) {
  return recall({r.ids.data(), nq, int64_t{k}}, truth, k);
}

index_params params_for(metric m, storage_type s = storage_type::same_as_input) {
  index_params p;
  p.graph_degree = 32;
  p.intermediate_graph_degree = 64;
  p.metric = m;
  p.storage = s;
  return p;
}

search_params with_algo(search_algo a, uint32_t itopk = 64) {
  search_params p;
  p.itopk_size = itopk;
  p.algo = a;
  return p;
}

host_matrix to_type(const host_matrix& u8, dtype t, float scale = 1.0f) {
  host_matrix out(t, u8.rows(), u8.cols());
  const uint8_t* src = static_cast<const uint8_t*>(u8.data());
  for (int64_t i = 0; i < u8.rows() * u8.cols(); ++i) {
    switch (t) {
      case dtype::f32: out.as<float>().data[i] = src[i] * scale; break;
      case dtype::i8: out.as<int8_t>().data[i] = int8_t(src[i] / 2 - 64); break;
      case dtype::f16: {  // exact: small integers times a power of two
        const float f = src[i] * scale;
        uint32_t b;
        std::memcpy(&b, &f, 4);
        uint16_t h = 0;
        if (f != 0.f) {
          const int e = int((b >> 23) & 0xFF) - 127 + 15;
          h = uint16_t((e << 10) | ((b >> 13) & 0x3FF));
        }
        out.as<half>().data[i] = half{h};
        break;
      }
      default: out.as<uint8_t>().data[i] = src[i];
    }
  }
  return out;
}

class CudaDevice : public bigann_gpu_suite {
 protected:
  /** Host path vs device path: exact for single-CTA (and automatic, which is single-CTA for a
   *  batch of >= SM count queries... or multi-CTA for 100 queries on 132 SMs); multi-CTA exact
   *  where two host runs agree, else recall within 1 point. */
  static void expect_same(const std::string& what, const cagra::index& idx,
                          const host_matrix& host_q, const host_matrix& device_q, search_algo algo,
                          uint32_t k = 10) {
    const search_params p = with_algo(algo);
    const int64_t nq = host_q.rows();
    const result h = host_search(idx, host_q, k, p);
    const result d = device_search(idx, device_q, k, p);
    const result h2 = host_search(idx, host_q, k, p);
    const int64_t repeat = identical_rows(h, h2, nq, k), same = identical_rows(h, d, nq, k);
    std::printf(
        "[ cuda     ] device path %-34s %-10s identical rows %lld/%lld (host repeats %lld)\n",
        what.c_str(), algo == search_algo::single_cta ? "single-CTA" : "multi-CTA", (long long)same,
        (long long)nq, (long long)repeat);
    if (algo == search_algo::single_cta || repeat == nq) {
      EXPECT_EQ(d.ids, h.ids) << what;
      EXPECT_EQ(d.dist, h.dist) << what;
    } else {
      const knn_graph gt =
          brute_force_knn(on(backend::cpu), idx.metric(), idx.vectors().view(), host_q, k);
      const double rh = recall_of(h, nq, k, gt.view()), rd = recall_of(d, nq, k, gt.view());
      EXPECT_GE(rd, rh - 0.01) << what;
    }
  }
};

constexpr search_algo kAlgos[] = {search_algo::single_cta, search_algo::multi_cta};

TEST_F(CudaDevice, ByteIndexesMatchHostPath) {
  for (search_algo a : kAlgos) expect_same("u8 l2", *u8_, set_->queries, set_->queries, a);
  cagra::index ip = build({}, params_for(metric::inner_product), set_->base);
  for (search_algo a : kAlgos) expect_same("u8 ip", ip, set_->queries, set_->queries, a);
  const host_matrix base8 = to_type(set_->base, dtype::i8), q8 = to_type(set_->queries, dtype::i8);
  cagra::index i8 = build({}, params_for(metric::l2), base8);
  for (search_algo a : kAlgos) expect_same("i8 l2", i8, q8, q8, a);
}

TEST_F(CudaDevice, FloatIndexesMatchHostPath) {
  const float s = 1.0f / 256;  // powers of two: f16 holds these values exactly
  const host_matrix base = to_type(set_->base, dtype::f32, s);
  const host_matrix qf = to_type(set_->queries, dtype::f32, s),
                    qh = to_type(set_->queries, dtype::f16, s);
  for (metric m : {metric::l2, metric::inner_product, metric::cosine}) {
    for (storage_type st : {storage_type::f32, storage_type::f16}) {
      cagra::index idx = build({}, params_for(m, st), base);
      const std::string what = std::string(to_string(idx.storage_dtype())) + " " + to_string(m);
      for (search_algo a : kAlgos) {
        expect_same(what + " f32 queries", idx, qf, qf, a);
        expect_same(what + " f16 queries", idx, qh, qh, a);
      }
      // Byte queries for a float index are converted on the device too (as on the host).
      expect_same(what + " u8 queries", idx, set_->queries, set_->queries, search_algo::single_cta);
    }
  }
}

TEST_F(CudaDevice, AutomaticBackendNoDistancesAndBigBatch) {
  const search_params p = with_algo(search_algo::single_cta);
  const result h = host_search(*u8_, set_->queries, 10, p);
  const result a =
      device_search(*u8_, set_->queries, 10, p, backend::automatic);  // device views: CUDA
  EXPECT_EQ(a.ids, h.ids);
  const result n = device_search(*u8_, set_->queries, 10, p, backend::cuda, false);
  EXPECT_EQ(n.ids, h.ids);
  // 70,000 queries: the single-CTA grid is chunked by 65,535, query_offset into the caller's
  // buffer.
  host_matrix big(dtype::u8, 70000, 128);
  for (int64_t i = 0; i < big.rows(); ++i)
    std::memcpy(static_cast<uint8_t*>(big.data()) + i * 128, set_->queries.row_bytes(i % 100), 128);
  const result hb = host_search(*u8_, big, 10, p), db = device_search(*u8_, big, 10, p);
  EXPECT_EQ(db.ids, hb.ids);
  EXPECT_EQ(db.dist, hb.dist);
}

/** resources::cuda_stream: the search reads the queries only after the work queued on the
 *  caller's stream. The stream is held 200 ms by a host function, then copies the queries from
 *  pinned memory into a zeroed device buffer; the search, called while that copy still waits,
 *  must return the results of the real queries (the zeros would give others). Both kernels. */
TEST_F(CudaDevice, WaitsForTheCallersStream) {
  const int64_t nq = set_->queries.rows();
  const uint32_t k = 10;
  const size_t bytes = set_->queries.size_bytes();
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  void* pinned = nullptr;
  ASSERT_EQ(cudaMallocHost(&pinned, bytes), cudaSuccess);
  std::memcpy(pinned, set_->queries.data(), bytes);
  for (search_algo a : kAlgos) {
    const search_params p = with_algo(a);
    const result h = host_search(*u8_, set_->queries, k, p);
    device_array dq(bytes), ids(nq * k * 4), dist(nq * k * 4);
    ASSERT_EQ(cudaMemset(dq.get(), 0, bytes), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto hold = [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); };
    ASSERT_EQ(cudaLaunchHostFunc(s, hold, nullptr), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(dq.get(), pinned, bytes, cudaMemcpyHostToDevice, s), cudaSuccess);
    ASSERT_EQ(cudaStreamQuery(s), cudaErrorNotReady);  // the copy is still queued
    resources r = on(backend::cuda);
    r.cuda_stream = s;
    search(r, p, *u8_, dataset_view(dq.get(), dtype::u8, nq, 128, memory_space::device), k,
           {static_cast<uint32_t*>(ids.get()), nq, int64_t{k}, memory_space::device},
           {static_cast<float*>(dist.get()), nq, int64_t{k}, memory_space::device});
    const result d{ids.to_host<uint32_t>(size_t(nq) * k), dist.to_host<float>(size_t(nq) * k)};
    if (a == search_algo::single_cta) {
      EXPECT_EQ(d.ids, h.ids);
      EXPECT_EQ(d.dist, h.dist);
    } else {  // CTAs race for nodes: the answer, not the walk, is compared
      const knn_graph gt =
          brute_force_knn(on(backend::cpu), u8_->metric(), u8_->vectors().view(), set_->queries, k);
      EXPECT_GE(recall_of(d, nq, k, gt.view()), recall_of(h, nq, k, gt.view()) - 0.01);
    }
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  }
  EXPECT_EQ(cudaFreeHost(pinned), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < 2) return;
  // A stream of another device than the search's: an error, before any work.
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  device_array dq(set_->queries), ids(nq * k * 4);
  resources r = on(backend::cuda);
  r.cuda_stream = s;
  std::string msg;
  try {
    search(r, with_algo(search_algo::automatic), *u8_,
           dataset_view(dq.get(), dtype::u8, nq, 128, memory_space::device), k,
           {static_cast<uint32_t*>(ids.get()), nq, int64_t{k}, memory_space::device}, {});
  } catch (const cagra::error& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("resources::cuda_stream is a stream of CUDA device 1"), std::string::npos)
      << msg;
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

/** The message of the cagra::error that `f` throws ("" when it throws none). */
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const cagra::error& e) {
    return e.what();
  }
  return "";
}

TEST_F(CudaDevice, ClearErrors) {
  const int64_t nq = set_->queries.rows();
  const uint32_t k = 10;
  const search_params p = with_algo(search_algo::automatic);
  device_array dq(set_->queries), ids(nq * k * 4), dist(nq * k * 4);
  const host_matrix qf = to_type(set_->queries, dtype::f32);
  device_array dqf(qf);
  const dataset_view q_dev(dq.get(), dtype::u8, nq, 128, memory_space::device);
  const matrix_view<uint32_t> ids_dev{static_cast<uint32_t*>(ids.get()), nq, k,
                                      memory_space::device};
  const matrix_view<float> dist_dev{static_cast<float*>(dist.get()), nq, k, memory_space::device};
  std::vector<uint32_t> hids(nq * k);
  std::vector<float> hdist(nq * k);
  const matrix_view<uint32_t> ids_host{hids.data(), nq, k};
  const matrix_view<float> dist_host{hdist.data(), nq, k};
  const auto contains = [](const std::string& msg, const char* part) {
    EXPECT_NE(msg.find(part), std::string::npos)
        << "message: '" << msg << "' lacks '" << part << "'";
  };

  // f32 device queries for a u8 index: the exactness check is host-only.
  contains(error_of([&] {
             search(on(backend::cuda), p, *u8_,
                    dataset_view(dqf.get(), dtype::f32, nq, 128, memory_space::device), k, ids_dev,
                    dist_dev);
           }),
           "a u8 index takes u8 device queries (got f32)");
  // Mixed spaces.
  contains(error_of([&] { search(on(backend::cuda), p, *u8_, q_dev, k, ids_host, dist_host); }),
           "must all be in host memory or all in device memory");
  contains(
      error_of([&] { search(on(backend::cuda), p, *u8_, set_->queries, k, ids_dev, dist_dev); }),
      "must all be in host memory or all in device memory");
  contains(error_of([&] { search(on(backend::cuda), p, *u8_, q_dev, k, ids_dev, dist_host); }),
           "distances: host");
  // The CPU backend.
  contains(error_of([&] { search(on(backend::cpu), p, *u8_, q_dev, k, ids_dev, dist_dev); }),
           "device memory needs the CUDA backend");
  // Shapes, as on the host path.
  contains(error_of([&] {
             search(on(backend::cuda), p, *u8_,
                    dataset_view(dq.get(), dtype::u8, nq, 64, memory_space::device), k, ids_dev,
                    dist_dev);
           }),
           "queries have dimension 64 but the index has 128");
  contains(error_of([&] {
             search(on(backend::cuda), p, *u8_, q_dev, k,
                    {static_cast<uint32_t*>(ids.get()), nq, 5, memory_space::device}, dist_dev);
           }),
           "neighbors must be a [100, 10] matrix");
  // Host memory labelled as device memory: refused before any kernel touches it.
  std::vector<uint8_t> host_bytes(set_->queries.size_bytes());
  contains(error_of([&] {
             search(on(backend::cuda), p, *u8_,
                    dataset_view(host_bytes.data(), dtype::u8, nq, 128, memory_space::device), k,
                    ids_dev, dist_dev);
           }),
           "is not CUDA device memory");
  // NaN, and all-zero rows under cosine, as on the host path.
  cagra::index cos =
      build({}, params_for(metric::cosine), to_type(set_->base, dtype::f32, 1.0f / 256));
  host_matrix bad = to_type(set_->queries, dtype::f32, 1.0f / 256);
  bad.as<float>().data[7 * 128 + 3] = std::numeric_limits<float>::quiet_NaN();
  std::memset(bad.as<float>().data + 9 * 128, 0, 128 * 4);
  device_array dbad(bad);
  const dataset_view bad_dev(dbad.get(), dtype::f32, nq, 128, memory_space::device);
  contains(error_of([&] { search(on(backend::cuda), p, cos, bad_dev, k, ids_dev, dist_dev); }),
           "queries row 7 contains NaN or Inf");
  bad.as<float>().data[7 * 128 + 3] = 0.5f;
  device_array dzero(bad);
  contains(error_of([&] {
             search(on(backend::cuda), p, cos,
                    dataset_view(dzero.get(), dtype::f32, nq, 128, memory_space::device), k,
                    ids_dev, dist_dev);
           }),
           "queries row 9 is all zeros");
  // After all of these, the device path still works.
  EXPECT_EQ(device_search(*u8_, set_->queries, k, with_algo(search_algo::single_cta)).ids,
            host_search(*u8_, set_->queries, k, with_algo(search_algo::single_cta)).ids);
}

}  // namespace
}  // namespace cagra::test
