// The helpers of the cagra::save / cagra::load tests, declared in serialize_test_helpers.hpp.
#include "serialize_test_helpers.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/cagra.hpp>

#include "test_data.hpp"

namespace cagra::test::serialize {

// Random vectors of `t` (finite values for the float types) and a random graph whose rows hold
// `degree` distinct ids, none equal to the row's own id.
cagra::index random_index(cagra::dtype t, cagra::metric m, int64_t rows, int64_t dim,
                          uint32_t degree, uint32_t seed) {
  std::mt19937 rng(seed);
  cagra::host_matrix v(t, rows, dim);
  auto* bytes = static_cast<uint8_t*>(v.data());
  for (size_t i = 0; i < v.size_bytes(); ++i) bytes[i] = uint8_t(rng());
  if (t == cagra::dtype::f32) {
    std::uniform_real_distribution<float> u(-10.f, 10.f);
    auto* f = static_cast<float*>(v.data());
    for (int64_t i = 0; i < rows * dim; ++i) f[i] = u(rng);
  } else if (t == cagra::dtype::f16) {
    auto* h = static_cast<cagra::half*>(v.data());
    for (int64_t i = 0; i < rows * dim; ++i) h[i].bits &= 0xBBFF;  // exponent < 31: finite
  }
  std::vector<uint32_t> graph(size_t(rows) * degree);
  std::uniform_int_distribution<uint32_t> pick(0, uint32_t(rows - 1));
  for (int64_t r = 0; r < rows; ++r) {
    uint32_t* row = graph.data() + r * degree;
    for (uint32_t j = 0; j < degree;) {
      uint32_t id = pick(rng);
      if (id == uint32_t(r) || std::find(row, row + j, id) != row + j) continue;
      row[j++] = id;
    }
  }
  return cagra::index(m, std::move(v), std::move(graph), degree);
}

// XXH64 with seed 0 (the checksum of docs/index_format.md), one-shot, written from the xxHash
// specification independently of the library's streaming version.
namespace {
uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
uint64_t rd(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
}  // namespace
uint64_t xxh64(const uint8_t* p, size_t n) {
  const uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full, P3 = 0x165667B19E3779F9ull,
                 P4 = 0x85EBCA77C2B2AE63ull, P5 = 0x27D4EB2F165667C5ull;
  auto round = [&](uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; };
  const uint8_t* end = p + n;
  uint64_t h;
  if (n >= 32) {
    uint64_t v[4] = {P1 + P2, P2, 0, 0 - P1};
    for (; end - p >= 32; p += 32)
      for (int i = 0; i < 4; ++i) v[i] = round(v[i], rd(p + 8 * i, 8));
    h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
    for (uint64_t x : v) h = (h ^ round(0, x)) * P1 + P4;
  } else {
    h = P5;
  }
  h += n;
  for (; end - p >= 8; p += 8) h = rotl(h ^ round(0, rd(p, 8)), 27) * P1 + P4;
  if (end - p >= 4) {
    h = rotl(h ^ (rd(p, 4) * P1), 23) * P2 + P3;
    p += 4;
  }
  for (; p < end; ++p) h = rotl(h ^ (*p * P5), 11) * P1;
  h = (h ^ (h >> 33)) * P2;
  h = (h ^ (h >> 29)) * P3;
  return h ^ (h >> 32);
}
uint64_t doc_checksum(const uint8_t* p, size_t n) { return xxh64(p, n); }

void put_u32(std::vector<uint8_t>& f, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) f[off + i] = uint8_t(v >> (8 * i));
}
void put_u64(std::vector<uint8_t>& f, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) f[off + i] = uint8_t(v >> (8 * i));
}
uint64_t get_u64(const std::vector<uint8_t>& f, size_t off) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | f[off + i];
  return v;
}
// Recomputes the trailing checksum after a deliberate edit, so only the edited field is wrong.
void reseal(std::vector<uint8_t>& f) {
  put_u64(f, f.size() - 8, doc_checksum(f.data(), f.size() - 8));
}

sample_file valid_file() {
  std::string p = temp_path("valid_sample.cagra");
  cagra::save(random_index(cagra::dtype::f32, cagra::metric::l2, 100, 8, 4, 7), p);
  sample_file s;
  s.bytes = read_bytes(p);
  return s;
}

// Expects load(bytes) to throw cagra::error whose message names the file and contains `what`.
void expect_load_error(const std::vector<uint8_t>& bytes, const std::string& name,
                       const std::string& what) {
  std::string p = temp_path(name);
  write_bytes(p, bytes);
  try {
    cagra::load(p);
    ADD_FAILURE() << name << ": load succeeded, expected an error about '" << what << "'";
  } catch (const cagra::error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(p), std::string::npos) << "message does not name the file: " << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << "expected '" << what << "' in: " << msg;
  }
}

// Files in `dir` whose name contains ".tmp." (leftover temporaries of save).
int count_temp_files(const std::string& dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    n += e.path().filename().string().find(".tmp.") != std::string::npos;
  return n;
}

}  // namespace cagra::test::serialize
