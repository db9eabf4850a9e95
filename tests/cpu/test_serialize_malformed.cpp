// Tests of cagra::load on malformed files: missing or empty, a bad magic, version, endianness or
// header field, truncated or with trailing bytes, a flipped byte, out-of-range graph ids, NaN or
// infinite vectors, and random damage. Each must throw cagra::error naming the file, never crash.
// The files are forged from a valid one (serialize_test_helpers.hpp), most with a correct
// checksum over the bad field, so that the field's own check is what refuses them.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/cagra.hpp>

#include "serialize_test_helpers.hpp"
#include "test_data.hpp"

namespace fs = std::filesystem;
using cagra::test::read_bytes;
using cagra::test::temp_path;
using cagra::test::write_bytes;
using cagra::test::serialize::expect_load_error;
using cagra::test::serialize::put_u32;
using cagra::test::serialize::put_u64;
using cagra::test::serialize::random_index;
using cagra::test::serialize::reseal;
using cagra::test::serialize::sample_file;
using cagra::test::serialize::valid_file;

TEST(Serialize, MissingAndEmptyFiles) {
  EXPECT_THROW(cagra::load(temp_path("does_not_exist.cagra")), cagra::error);
  expect_load_error({}, "empty.cagra", "empty");
  EXPECT_THROW(cagra::load(fs::path(temp_path("x")).parent_path().string()), cagra::error);
}

TEST(Serialize, BadMagicVersionEndianness) {
  sample_file s = valid_file();
  std::vector<uint8_t> f = s.bytes;
  f[0] = 'X';
  expect_load_error(f, "magic.cagra", "magic");
  expect_load_error(std::vector<uint8_t>(s.bytes.begin(), s.bytes.begin() + 5), "short5.cagra",
                    "magic");

  f = s.bytes;
  put_u32(f, 8, 99);
  reseal(f);
  expect_load_error(f, "v99.cagra", "newer version");
  put_u32(f, 8, 0);
  reseal(f);
  expect_load_error(f, "v0.cagra", "version");

  f = s.bytes;
  put_u32(f, 12, 0x04030201);
  reseal(f);
  expect_load_error(f, "endian.cagra", "endianness");

  f = s.bytes;
  put_u32(f, 16, 72);
  reseal(f);
  expect_load_error(f, "hsize.cagra", "header_size");
}

TEST(Serialize, TruncatedHeaderPayloadAndTrailingBytes) {
  sample_file s = valid_file();
  const std::vector<uint8_t>& f = s.bytes;
  expect_load_error(std::vector<uint8_t>(f.begin(), f.begin() + 30), "hdr30.cagra",
                    "truncated header");
  expect_load_error(std::vector<uint8_t>(f.begin(), f.begin() + 10), "hdr10.cagra",
                    "truncated header");
  expect_load_error(std::vector<uint8_t>(f.begin(), f.begin() + 64), "hdr64.cagra",
                    "truncated payload");
  expect_load_error(std::vector<uint8_t>(f.begin(), f.end() - 100), "payload.cagra",
                    "truncated payload");
  expect_load_error(std::vector<uint8_t>(f.begin(), f.end() - 1), "nosum.cagra",
                    "truncated payload");
  std::vector<uint8_t> longer = f;
  longer.insert(longer.end(), {1, 2, 3, 4, 5});
  expect_load_error(longer, "trailing.cagra", "trailing");
}

TEST(Serialize, FlippedByteFailsChecksum) {
  sample_file s = valid_file();
  for (size_t at : {size_t(20), s.vectors_at + 333, s.graph_at + 17, s.bytes.size() - 3}) {
    std::vector<uint8_t> f = s.bytes;
    f[at] ^= 0x10;
    // A flip inside the header may hit a field that is validated first; that is fine too.
    std::string p = temp_path("flip.cagra");
    write_bytes(p, f);
    EXPECT_THROW(cagra::load(p), cagra::error) << "flip at " << at;
  }
  std::vector<uint8_t> f = s.bytes;
  f[s.vectors_at + 333] ^= 0x01;
  expect_load_error(f, "flipv.cagra", "checksum");
  f = s.bytes;
  f[s.graph_at + 5] ^= 0x80;
  expect_load_error(f, "flipg.cagra", "checksum");
}

TEST(Serialize, BadHeaderFields) {
  sample_file s = valid_file();
  struct field_case {
    const char* name;
    size_t off;
    uint64_t value;
    bool wide;
    const char* what;
  };
  const field_case cases[] = {
      {"dtype77", 20, 77, false, "dtype"},
      {"dtype_u32", 20, uint32_t(cagra::dtype::u32), false, "dtype"},
      {"metric9", 24, 9, false, "metric"},
      {"degree0", 28, 0, false, "graph_degree"},
      {"degree_rows", 28, 100, false, "graph_degree"},
      {"rows0", 32, 0, true, "rows"},
      {"rows_huge", 32, uint64_t(1) << 40, true, "rows"},
      {"dim0", 40, 0, false, "dim"},
      {"dim_huge", 40, 65537, false, "dim"},
      {"flags", 44, 1, false, "flags"},
      {"vbytes", 48, 12345, true, "vector_bytes"},
      {"gbytes", 56, ~uint64_t(0), true, "graph_bytes"},
  };
  for (const field_case& c : cases) {
    std::vector<uint8_t> f = s.bytes;
    if (c.wide) {
      put_u64(f, c.off, c.value);
    } else {
      put_u32(f, c.off, uint32_t(c.value));
    }
    reseal(f);
    expect_load_error(f, std::string(c.name) + ".cagra", c.what);
  }
  // A consistent but enormous header (rows x dim x 4 = 2^47 bytes) in a small file: the size
  // check must reject it before anything is allocated.
  std::vector<uint8_t> f = s.bytes;
  put_u64(f, 32, uint64_t(1) << 30);  // rows
  put_u32(f, 40, 32768);
  put_u64(f, 48, (uint64_t(1) << 30) * 32768 * 4);
  put_u64(f, 56, (uint64_t(1) << 30) * 4 * 4);
  reseal(f);
  expect_load_error(f, "huge.cagra", "truncated payload");
}

TEST(Serialize, GraphIdOutOfRangeWithValidChecksum) {
  sample_file s = valid_file();
  std::vector<uint8_t> f = s.bytes;
  put_u32(f, s.graph_at + 4 * (3 * 4 + 2), 100);  // row 3, slot 2 := rows
  reseal(f);
  expect_load_error(f, "badid.cagra", "row 3, slot 2");
  put_u32(f, s.graph_at + 4 * (3 * 4 + 2), 0xFFFFFFFFu);
  reseal(f);
  expect_load_error(f, "badid2.cagra", "not below rows");
}

// Issue 17, defect 6: vectors that are NaN or infinite under a valid checksum (a file written by
// another tool, or damaged before it was sealed) are refused, naming the row and column. Before,
// such an index loaded and every search returned only invalid ids.
TEST(Serialize, NonFiniteVectorsWithValidChecksum) {
  sample_file s = valid_file();  // 100 x 8 f32
  struct bad_value {
    const char* name;
    uint32_t bits;
    const char* what;
  };
  const bad_value f32_cases[] = {{"nan", 0x7FC00000u, "is NaN"},
                                 {"snan", 0x7F800001u, "is NaN"},
                                 {"neg_nan", 0xFFC00000u, "is NaN"},
                                 {"inf", 0x7F800000u, "is +Inf"},
                                 {"ninf", 0xFF800000u, "is -Inf"}};
  for (const bad_value& c : f32_cases) {
    SCOPED_TRACE(c.name);
    // The first and last elements (the edges of the scan) and one in the middle.
    for (const size_t at : {size_t{0}, size_t{37 * 8 + 5}, size_t{100 * 8 - 1}}) {
      std::vector<uint8_t> f = s.bytes;
      put_u32(f, s.vectors_at + 4 * at, c.bits);
      reseal(f);
      const std::string where =
          "row " + std::to_string(at / 8) + ", column " + std::to_string(at % 8) + " " + c.what;
      expect_load_error(f, std::string("f32_") + c.name + ".cagra", where);
    }
  }
  // f16: exponent all ones is Inf (mantissa 0) or NaN.
  std::string p = temp_path("finite_f16.cagra");
  cagra::save(random_index(cagra::dtype::f16, cagra::metric::l2, 60, 8, 4, 3), p);
  const std::vector<uint8_t> h = read_bytes(p);
  for (const auto& c : {std::pair<uint16_t, const char*>{0x7E00, "row 59, column 7 is NaN"},
                        {0x7C00, "row 59, column 7 is +Inf"},
                        {0xFC00, "row 59, column 7 is -Inf"}}) {
    std::vector<uint8_t> f = h;
    const size_t at = 64 + 2 * (59 * 8 + 7);
    f[at] = uint8_t(c.first);
    f[at + 1] = uint8_t(c.first >> 8);
    reseal(f);
    expect_load_error(f, "f16_bad.cagra", c.second);
  }
  // A damaged file is reported as corrupted (the checksum), not by the value it happens to hold.
  std::vector<uint8_t> f = s.bytes;
  put_u32(f, s.vectors_at, 0x7FC00000u);
  expect_load_error(f, "nan_unsealed.cagra", "checksum mismatch");
  // The extremes of the finite range still load: the largest values and subnormals.
  f = s.bytes;
  put_u32(f, s.vectors_at, 0x7F7FFFFFu);
  put_u32(f, s.vectors_at + 4, 0xFF7FFFFFu);
  put_u32(f, s.vectors_at + 8, 0x00000001u);
  reseal(f);
  p = temp_path("finite_extremes.cagra");
  write_bytes(p, f);
  EXPECT_EQ(cagra::load(p).size(), 100);
  // The input the fuzzer found (a valid checksum over NaN vectors), where the shared data has it
  // (/work/shared/data/regress; the same places as the data sets).
  std::vector<std::string> dirs = {std::string(CAGRA_SOURCE_DIR) + "/data/shared",
                                   std::string(CAGRA_SOURCE_DIR) + "/../shared/data"};
  if (const char* env = std::getenv("CAGRA_DATA_DIR")) dirs.insert(dirs.begin(), env);
  for (const std::string& d : dirs) {
    const std::string found = d + "/regress/vectors_nan.cagra";
    if (!fs::exists(found)) continue;
    try {
      cagra::load(found);
      ADD_FAILURE() << found << " loaded";
    } catch (const cagra::error& e) {
      EXPECT_NE(std::string(e.what()).find("is NaN"), std::string::npos) << e.what();
    }
    break;
  }
}

// Random damage (bytes changed anywhere, header fields mostly, checksum sometimes fixed up, file
// sometimes cut) must always end in a clean cagra::error or a valid index, never a crash.
TEST(Serialize, RandomCorruptionNeverCrashes) {
  sample_file s = valid_file();
  std::mt19937 rng(2024);
  std::string p = temp_path("fuzz.cagra");
  int rejected = 0;
  for (int it = 0; it < 400; ++it) {
    std::vector<uint8_t> f = s.bytes;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % 2 ? rng() % 64 : rng() % f.size();
      f[at] = uint8_t(rng());
    }
    if (rng() % 2) reseal(f);
    if (rng() % 8 == 0) f.resize(rng() % f.size());
    fs::remove(p);  // a fresh file: rewriting a truncated one makes ext4 flush it on close
    write_bytes(p, f);
    try {
      cagra::index idx = cagra::load(p);
      EXPECT_EQ(idx.size(), 100);  // only payload edits with a fixed-up checksum get here
    } catch (const cagra::error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 200);
}
