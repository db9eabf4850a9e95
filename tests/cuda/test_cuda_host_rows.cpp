// Stored rows left in host memory (search_params::stored_rows = host, with the int8 traversal):
// the GPU holds the codes and the graph, and the re-ranking reads the candidates' rows from the
// index's own pinned host rows. The answers equal those of rows copied to the device bit for bit
// (the same kernel on the same bits), for large host batches (copy pipeline) and device-memory
// queries, f32 and f16 rows, l2 and cosine; `automatic` keeps the copy there is, and takes host
// rows when the device has no room for them; extend, the exact filtered path and an exact walk
// after a host-rows search answer as with device rows; the device holds the rows' bytes less.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "bigann_fixture.hpp"
#include "cuda/testing.hpp"
#include "device_bytes.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

resources on_gpu() {
  resources r;
  r.target = backend::cuda;
  return r;
}

struct answers {
  std::vector<uint32_t> ids;
  std::vector<float> d;
  bool operator==(const answers& o) const { return ids == o.ids && d == o.d; }
};

/** f32 queries near base rows (new rows, not copies). */
host_matrix queries_near(const host_matrix& base_u8, int64_t nq) {
  host_matrix q(dtype::f32, nq, base_u8.cols());
  const auto* b = static_cast<const uint8_t*>(base_u8.data());
  const int64_t d = base_u8.cols();
  for (int64_t i = 0; i < nq; ++i)
    for (int64_t j = 0; j < d; ++j)
      q.as<float>().data[i * d + j] =
          float(b[(i * 7 % base_u8.rows()) * d + j]) + float((i + j) % 5) - 2.f;
  return q;
}

answers search_host(const index& idx, const host_matrix& q, rows_location where,
                    const row_filter& filter = {}) {
  search_params p;
  p.traversal = traversal_type::int8;
  p.stored_rows = where;
  if (!filter.empty()) p.filter = filter_algo::exact;
  answers a{std::vector<uint32_t>(size_t(q.rows()) * kK),
            std::vector<float>(size_t(q.rows()) * kK)};
  search(on_gpu(), p, idx, q, kK, {a.ids.data(), q.rows(), kK}, {a.d.data(), q.rows(), kK}, filter);
  return a;
}

answers search_device_memory(const index& idx, const host_matrix& q, rows_location where) {
  search_params p;
  p.traversal = traversal_type::int8;
  p.stored_rows = where;
  const int64_t nq = q.rows();
  device_bytes dq(q.size_bytes()), di(size_t(nq) * kK * 4), dd(size_t(nq) * kK * 4);
  cuda::testing::copy_memory(dq.p, q.data(), q.size_bytes());
  search(
      on_gpu(), p, idx,
      matrix_view<const float>{static_cast<const float*>(dq.p), nq, q.cols(), memory_space::device},
      kK, matrix_view<uint32_t>{static_cast<uint32_t*>(di.p), nq, kK, memory_space::device},
      matrix_view<float>{static_cast<float*>(dd.p), nq, kK, memory_space::device});
  answers a{std::vector<uint32_t>(size_t(nq) * kK), std::vector<float>(size_t(nq) * kK)};
  cuda::testing::copy_memory(a.ids.data(), di.p, a.ids.size() * 4);
  cuda::testing::copy_memory(a.d.data(), dd.p, a.d.size() * 4);
  return a;
}

/** Free device memory on device 0, bytes. */
size_t free_device_memory() { return cuda::free_memory(0); }

/** u8 rows as f32 (the f32 index's own rows: a search for them finds them at distance 0). */
host_matrix as_f32_rows(const host_matrix& u8) {
  host_matrix f(dtype::f32, u8.rows(), u8.cols());
  const auto* s = static_cast<const uint8_t*>(u8.data());
  for (int64_t i = 0; i < u8.rows() * u8.cols(); ++i) f.as<float>().data[i] = s[i];
  return f;
}

class CudaHostRows : public bigann_gpu_suite {
 protected:
  static index build_f(metric m, storage_type st, int64_t rows = 0) {
    index_params p;
    p.metric = m;
    p.graph_degree = 32;
    p.storage = st;
    return build(on_gpu(), p, rows ? head(set_->base, rows) : set_->base);
  }
};

TEST_F(CudaHostRows, AnswersEqualDeviceRows) {
  const host_matrix q = queries_near(set_->base, 4000);  // the copy pipeline
  for (metric m : {metric::l2, metric::cosine}) {
    for (storage_type st : {storage_type::f32, storage_type::f16}) {
      SCOPED_TRACE(std::string(to_string(m)) + (st == storage_type::f16 ? " f16" : " f32"));
      const index idx = build_f(m, st);
      const answers on_device = search_host(idx, q, rows_location::device);
      EXPECT_FALSE(cuda::testing::rows_on_host(idx));
      const answers on_host = search_host(idx, q, rows_location::host);
      EXPECT_TRUE(cuda::testing::rows_on_host(idx));
      EXPECT_TRUE(on_host == on_device);
      // Device-memory queries: encoded, walked and re-ranked on the device.
      const host_matrix small = head(q, 500);
      const answers dev_host = search_device_memory(idx, small, rows_location::host);
      EXPECT_TRUE(cuda::testing::rows_on_host(idx));
      const answers dev_device = search_device_memory(idx, small, rows_location::device);
      EXPECT_FALSE(cuda::testing::rows_on_host(idx));
      EXPECT_TRUE(dev_host == dev_device);
    }
  }
}

TEST_F(CudaHostRows, AutomaticKeepsTheCopyThereIs) {
  const host_matrix q = queries_near(set_->base, 3000);
  const index idx = build_f(metric::l2, storage_type::f32);
  const answers first = search_host(idx, q, rows_location::host);
  const answers again = search_host(idx, q, rows_location::automatic);
  EXPECT_TRUE(cuda::testing::rows_on_host(idx));
  EXPECT_TRUE(again == first);

  // The exact filtered path reads the same host rows, with the answers of device rows.
  const index fresh = build_f(metric::l2, storage_type::f32);
  std::vector<uint32_t> words(size_t(row_filter::words_for(idx.size())), 0u);
  for (int64_t r = 0; r < idx.size(); r += 97) words[size_t(r / 32)] |= 1u << (r % 32);
  const row_filter allow = row_filter::shared(words.data(), idx.size());
  for (int64_t nq : {int64_t{4}, int64_t{300}}) {  // exact_rows, then the brute force
    SCOPED_TRACE(nq);
    const host_matrix part = head(q, nq);
    const answers filtered = search_host(idx, part, rows_location::automatic, allow);
    EXPECT_TRUE(cuda::testing::rows_on_host(idx));
    const answers filtered_device = search_host(fresh, part, rows_location::device, allow);
    EXPECT_TRUE(filtered == filtered_device);
  }

  // An exact walk needs the rows and the graph on the device: the copy is made anew.
  std::vector<uint32_t> ids(size_t(q.rows()) * kK), ids_fresh(ids.size());
  search(on_gpu(), search_params{}, idx, q, kK, {ids.data(), q.rows(), kK}, {});
  EXPECT_FALSE(cuda::testing::rows_on_host(idx));
  search(on_gpu(), search_params{}, fresh, q, kK, {ids_fresh.data(), q.rows(), kK}, {});
  EXPECT_EQ(ids, ids_fresh);
}

TEST_F(CudaHostRows, ExtendThenSearchHostRows) {
  index idx = build_f(metric::l2, storage_type::f32, 6000);
  const host_matrix q = queries_near(set_->base, 3000);
  search_host(idx, q, rows_location::host);
  ASSERT_TRUE(cuda::testing::rows_on_host(idx));
  // Enough rows that the stored rows grow (and may move) more than once.
  for (int64_t first = 6000; first < 9900; first += 1300) {
    extend(on_gpu(), extend_params{}, idx, slice(set_->base, first, 1300));
    const answers on_host = search_host(idx, q, rows_location::host);
    ASSERT_TRUE(cuda::testing::rows_on_host(idx));
    const answers on_device = search_host(idx, q, rows_location::device);
    EXPECT_TRUE(on_host == on_device) << first;
  }
  // New rows are found from the host rows.
  const host_matrix added = as_f32_rows(slice(set_->base, 9000, 100));
  const answers found = search_host(idx, added, rows_location::host);
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(found.d[size_t(i) * kK], 0.f) << i;
}

// SYNTHETIC rows (uniform random f32): an index large enough that the device memory the rows
// take is clear of the workspaces' allocations.
TEST_F(CudaHostRows, DeviceHoldsNoRowsAndTakesHostRowsWhenShort) {
  const int64_t n = 200000, dim = 128;
  host_matrix x(dtype::f32, n, dim);
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < n * dim; ++i) x.as<float>().data[i] = u(gen);
  index_params ip;
  ip.graph_degree = 32;
  const index a = build(on_gpu(), ip, x);
  const index b(a.metric(), host_matrix::copy_of(a.vectors()),
                std::vector<uint32_t>(a.graph().data, a.graph().data + n * a.graph_degree()),
                a.graph_degree());
  const index c(a.metric(), host_matrix::copy_of(a.vectors()),
                std::vector<uint32_t>(a.graph().data, a.graph().data + n * a.graph_degree()),
                a.graph_degree());
  host_matrix q(dtype::f32, 4000, dim);
  for (int64_t i = 0; i < q.rows() * dim; ++i) q.as<float>().data[i] = u(gen);
  const size_t rows_and_graph = size_t(n) * dim * 4 + size_t(n) * a.graph_degree() * 4;

  size_t before = free_device_memory();
  const answers on_host = search_host(a, q, rows_location::host);
  const size_t used_host = before - free_device_memory();
  before = free_device_memory();
  const answers on_device = search_host(b, q, rows_location::device);
  const size_t used_device = before - free_device_memory();
  std::printf(
      "device memory taken by a first search: rows on the host %.1f MiB, on the device "
      "%.1f MiB (rows and graph %.1f MiB)\n",
      used_host / 1048576.0, used_device / 1048576.0, rows_and_graph / 1048576.0);
  EXPECT_GE(used_device, used_host + rows_and_graph * 9 / 10);
  EXPECT_TRUE(on_host == on_device);

  // No room for the rows: `automatic` leaves them on the host. The int8 copy's walk index is
  // made first (a small batch walks it and re-ranks on the host), then the ballast leaves less
  // than the rows need.
  search_host(c, head(q, 10), rows_location::automatic);
  ASSERT_FALSE(cuda::testing::rows_on_host(c));
  const size_t room = (size_t{512} << 20) + rows_and_graph / 2;
  const size_t free_now = free_device_memory();
  ASSERT_GT(free_now, room + (size_t{1} << 30));
  device_bytes ballast(free_now - room);
  const answers automatic = search_host(c, q, rows_location::automatic);
  EXPECT_TRUE(cuda::testing::rows_on_host(c));
  EXPECT_TRUE(automatic == on_device);
}

TEST_F(CudaHostRows, RowsThatAreNotWholeChunksAreRefused) {
  host_matrix x(dtype::f32, 2000, 6);  // 24-byte rows
  for (int64_t i = 0; i < x.rows() * 6; ++i) x.as<float>().data[i] = float(i % 251);
  index_params ip;
  ip.graph_degree = 16;
  const index idx = build(on_gpu(), ip, x);
  host_matrix q(dtype::f32, 3000, 6);
  std::memcpy(q.data(), x.data(), 2000 * 6 * 4);
  std::memcpy(static_cast<float*>(q.data()) + 2000 * 6, x.data(), 1000 * 6 * 4);
  try {
    search_host(idx, q, rows_location::host);
    ADD_FAILURE() << "24-byte rows were read from the host";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of 16 bytes"), std::string::npos) << e.what();
  }
  // `automatic` copies them to the device (padded) instead.
  const answers a = search_host(idx, q, rows_location::automatic);
  EXPECT_FALSE(cuda::testing::rows_on_host(idx));
  EXPECT_TRUE(a == search_host(idx, q, rows_location::device));
}

}  // namespace
}  // namespace cagra::test
