// 64-bit offsets at scale: 100M rows x degree 64 = 6.4e9 graph entries, above 2^32. The library
// forms rows x degree, rows x dim and query x bitset-words in 64 bits; these tests check it at
// row ids near 2^31 without the tens of GB such an index needs:
//  - views over a reserved address range (MAP_NORESERVE: only the pages touched get memory);
//  - index files whose header claims sizes above 2^32, which load must refuse with a clear
//    error before it allocates anything.
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/cagra.hpp>
#include <cagra/filter.hpp>

#include "core/filter.hpp"
#include "test_data.hpp"

using cagra::test::read_bytes;
using cagra::test::temp_path;
using cagra::test::write_bytes;

namespace {

constexpr uint64_t kTwo32 = uint64_t{1} << 32;

// An anonymous mapping of `bytes` that reserves no memory: pages get memory when written, and
// read as zeros before. Null when the system refuses (strict overcommit): the test then skips.
class sparse_mapping {
 public:
  explicit sparse_mapping(uint64_t bytes) : bytes_(bytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    data_ = p == MAP_FAILED ? nullptr : p;
  }
  ~sparse_mapping() {
    if (data_) ::munmap(data_, bytes_);
  }
  sparse_mapping(const sparse_mapping&) = delete;
  sparse_mapping& operator=(const sparse_mapping&) = delete;
  void* data() const { return data_; }

 private:
  uint64_t bytes_;
  void* data_ = nullptr;
};

TEST(WideOffsets, GraphViewRowsNear2To31) {
  const int64_t rows = cagra::kMaxRows;  // 2^31 - 1
  const int64_t degree = 64;
  sparse_mapping m(uint64_t(rows) * degree * sizeof(uint32_t));  // 512 GiB of address space
  if (!m.data()) GTEST_SKIP() << "no sparse mapping of 512 GiB here (strict overcommit)";
  cagra::matrix_view<uint32_t> g{static_cast<uint32_t*>(m.data()), rows, degree};
  EXPECT_EQ(uint64_t(g.size()), uint64_t(rows) * 64);
  EXPECT_GT(uint64_t(g.size()), kTwo32);
  const auto* base = static_cast<const uint8_t*>(m.data());
  for (int64_t r : {int64_t{1} << 26, (int64_t{1} << 31) - 2, rows - 1}) {
    const uint64_t want = uint64_t(r) * 64 * sizeof(uint32_t);
    EXPECT_EQ(uint64_t(reinterpret_cast<const uint8_t*>(g.row(r)) - base), want) << "row " << r;
    g.row(r)[63] = uint32_t(r);
    uint32_t back = 0;
    std::memcpy(&back, base + want + 63 * sizeof(uint32_t), sizeof back);
    EXPECT_EQ(back, uint32_t(r)) << "row " << r;
  }
  // The const view a search takes.
  cagra::matrix_view<const uint32_t> c = g;
  EXPECT_EQ(c.row(rows - 1)[63], uint32_t(rows - 1));
}

TEST(WideOffsets, PerQueryFilterBitsetsPast2To32Words) {
  const int64_t rows = cagra::kMaxRows;
  const int64_t words = cagra::row_filter::words_for(rows);  // 2^26
  const int64_t queries = 80;  // query 79's bitset starts at word 79 * 2^26 > 2^32
  ASSERT_GT(uint64_t(queries - 1) * uint64_t(words), kTwo32);
  sparse_mapping m(uint64_t(queries) * uint64_t(words) * sizeof(uint32_t));  // 20 GiB
  if (!m.data()) GTEST_SKIP() << "no sparse mapping of 20 GiB here (strict overcommit)";
  auto* w = static_cast<uint32_t*>(m.data());
  const int64_t q = queries - 1;
  const int64_t allowed[] = {0, 12345, rows - 1};
  for (int64_t r : allowed) w[uint64_t(q) * uint64_t(words) + uint64_t(r >> 5)] |= 1u << (r & 31);
  const cagra::row_filter f = cagra::row_filter::per_query(w, queries, rows);
  for (int64_t r : allowed) {
    EXPECT_TRUE(f.allows(q, r)) << "row " << r;
    EXPECT_FALSE(f.allows(q - 1, r)) << "row " << r;
    // Where a 32-bit product of q x words would have landed: nothing there.
    EXPECT_FALSE(f.allows(0, r)) << "row " << r;
  }
  EXPECT_EQ(cagra::core::allowed_count(f, q), 3);
  EXPECT_EQ(cagra::core::allowed_count(f, q - 1), 0);
}

// --- Index files whose header claims more than 2^32 graph entries --------------------------------

void put_u32(std::vector<uint8_t>& f, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) f[off + size_t(i)] = uint8_t(v >> (8 * i));
}
void put_u64(std::vector<uint8_t>& f, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) f[off + size_t(i)] = uint8_t(v >> (8 * i));
}

// A small valid index file (64 x 8 f32, degree 4) as bytes.
std::vector<uint8_t> small_index_file() {
  const int64_t rows = 64, dim = 8;
  const uint32_t degree = 4;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  cagra::host_matrix v(cagra::dtype::f32, rows, dim);
  auto* x = static_cast<float*>(v.data());
  for (int64_t i = 0; i < rows * dim; ++i) x[i] = u(rng);
  std::vector<uint32_t> graph(size_t(rows) * degree);
  for (int64_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < degree; ++j)
      graph[size_t(r) * degree + j] = uint32_t((r + j + 1) % rows);
  const std::string p = temp_path("wide_offsets_small.cagra");
  cagra::save(cagra::index(cagra::metric::l2, std::move(v), std::move(graph), degree), p);
  return read_bytes(p);
}

// A header of `rows` x `dim` f32 vectors and degree `degree`, with the given size fields (offsets
// in docs/index_format.md), over the small file's body.
std::vector<uint8_t> claimed(uint64_t rows, uint32_t dim, uint32_t degree, uint64_t vector_bytes,
                             uint64_t graph_bytes) {
  std::vector<uint8_t> f = small_index_file();
  put_u32(f, 28, degree);
  put_u64(f, 32, rows);
  put_u32(f, 40, dim);
  put_u64(f, 48, vector_bytes);
  put_u64(f, 56, graph_bytes);
  return f;
}

// load() must throw cagra::error (not bad_alloc, not a crash) with every part of `what`.
void expect_refused(const std::vector<uint8_t>& bytes, const std::string& name,
                    const std::vector<std::string>& what) {
  const std::string p = temp_path(name);
  write_bytes(p, bytes);
  try {
    cagra::load(p);
    ADD_FAILURE() << name << ": load succeeded";
  } catch (const cagra::error& e) {
    const std::string msg = e.what();
    for (const std::string& w : what)
      EXPECT_NE(msg.find(w), std::string::npos) << "expected '" << w << "' in: " << msg;
  }
}

TEST(WideOffsets, ConsistentHugeHeaderIsRefusedBeforeAllocating) {
  // 2^31 - 1 rows x degree 64: 1.4e11 graph entries, 550 GB of graph; the file has a few KB.
  const uint64_t rows = uint64_t(cagra::kMaxRows);
  const uint64_t graph_bytes = rows * 64 * 4, vector_bytes = rows * 8 * 4;
  ASSERT_GT(rows * 64, kTwo32);
  expect_refused(claimed(rows, 8, 64, vector_bytes, graph_bytes), "wide_consistent.cagra",
                 {"truncated payload", std::to_string(graph_bytes), std::to_string(vector_bytes)});
}

TEST(WideOffsets, SizesThatWrappedIn32BitsAreRefused) {
  // 2^26 rows x degree 64 = 2^32 entries: a 32-bit product is 0. The fields hold what a writer
  // that multiplied in 32 bits would have stored; load computes in 64 bits and names the truth.
  const uint64_t rows = uint64_t{1} << 26;
  const uint64_t graph_bytes = rows * 64 * 4, vector_bytes = rows * 8 * 4;  // 2^34, 2^31
  expect_refused(claimed(rows, 8, 64, vector_bytes, uint32_t(graph_bytes)), "wide_wrapped_g.cagra",
                 {"graph_bytes field 0", std::to_string(graph_bytes)});
  // rows x dim x 4 wraps too: 2^26 x 64 x 4 = 2^34.
  const uint64_t wide_vectors = rows * 64 * 4;
  expect_refused(claimed(rows, 64, 64, uint32_t(wide_vectors), graph_bytes), "wide_wrapped_v.cagra",
                 {"vector_bytes field 0", std::to_string(wide_vectors)});
  // Rows past the id space (ids are uint32 with the top bit reserved).
  expect_refused(
      claimed(uint64_t{1} << 31, 8, 64, (uint64_t{1} << 31) * 32, (uint64_t{1} << 31) * 256),
      "wide_rows.cagra", {"rows field 2147483648"});
  // Degree near rows: rows x degree x 4 close to 2^64, still computed without wrapping.
  const uint32_t degree = uint32_t(cagra::kMaxRows - 1);
  const uint64_t near_max = uint64_t(cagra::kMaxRows) * degree * 4;
  expect_refused(
      claimed(uint64_t(cagra::kMaxRows), 8, degree, uint64_t(cagra::kMaxRows) * 32, near_max),
      "wide_degree.cagra", {"truncated payload", std::to_string(near_max)});
}

}  // namespace
