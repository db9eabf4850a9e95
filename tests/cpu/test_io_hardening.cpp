// Readers facing hostile files (issue 17): error messages that quote bytes from a file are
// escaped and truncated (defect 7), and gzip IDX files with bytes after the gzip member are
// rejected like every other format with trailing bytes (defect 8b).
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/io.hpp>

#include "test_data.hpp"

namespace fs = std::filesystem;

namespace cagra::test {
namespace {

// A .npy file (version 1.0) whose header is `header` byte for byte (the length field computed).
std::vector<uint8_t> npy_with_header(const std::string& header) {
  std::vector<uint8_t> b = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  b.push_back(static_cast<uint8_t>(header.size() & 0xFF));
  b.push_back(static_cast<uint8_t>(header.size() >> 8));
  b.insert(b.end(), header.begin(), header.end());
  return b;
}

// The message of the cagra::error that `f` throws ("" and a failure when it throws none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const cagra::error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no cagra::error";
  return "";
}

// A fuzzer-found input of /work/shared/data/regress (README.md there): looked for next to the
// shared data sets ($CAGRA_DATA_DIR, <repo>/data/shared, <repo>/../shared/data); "" when absent.
std::string regress_input(const std::string& name) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("CAGRA_DATA_DIR")) dirs.emplace_back(env);
  dirs.push_back(std::string(CAGRA_SOURCE_DIR) + "/data/shared");
  dirs.push_back(std::string(CAGRA_SOURCE_DIR) + "/../shared/data");
  for (const auto& d : dirs)
    if (fs::exists(d + "/regress/" + name)) return d + "/regress/" + name;
  return "";
}

// Printable ASCII only: no control or escape bytes, nothing that is not valid UTF-8.
bool printable_ascii(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7E) return false;
  return true;
}

// ---- defect 7: file bytes in messages are escaped and truncated --------------------------------

TEST(ReaderMessages, NpyHeaderBytesAreEscapedAndTruncated) {
  // 60,000 bytes of header: terminal escape sequences, control bytes, non-UTF-8 bytes, and text.
  std::string junk = "{'descr': \x1b[2J\x1b]0;owned\x07\r\n\xff\xfe\x80 ";
  while (junk.size() < 60000) junk += "\x1b[31mred\xc3(";
  const std::string p = temp_path("escape_header.npy");
  write_bytes(p, npy_with_header(junk));
  const std::string msg = error_of([&] { io::read_matrix(p); });
  EXPECT_TRUE(printable_ascii(msg)) << msg;
  EXPECT_LT(msg.size(), 400u) << "the quoted header must be truncated";
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("\\x1b"), std::string::npos) << "escapes shown as \\xNN: " << msg;
  EXPECT_NE(msg.find("..."), std::string::npos) << "truncation marked: " << msg;
}

TEST(ReaderMessages, NpyValuesFromTheFileAreEscaped) {
  struct bad_case {
    const char* name;
    std::string header;
  };
  const std::string long_descr(5000, 'f');
  const bad_case cases[] = {
      {"descr", "{'descr': '\x1b[31m<f4\xff', 'fortran_order': False, 'shape': (2, 2), }"},
      {"big_endian", "{'descr': '>f4\x07\x80', 'fortran_order': False, 'shape': (2, 2), }"},
      {"long_descr", "{'descr': '" + long_descr + "', 'fortran_order': False, 'shape': (1,), }"},
      {"key", "{'descr': '<f4', '\x1b]0;title\x07\xfe': 1, 'shape': (2, 2), }"},
      {"unterminated", "{'descr\x01\x02\x03\xff"},
  };
  for (const bad_case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = temp_path(std::string("escape_") + c.name + ".npy");
    write_bytes(p, npy_with_header(c.header));
    const std::string msg = error_of([&] { io::read_matrix(p); });
    EXPECT_TRUE(printable_ascii(msg)) << msg;
    EXPECT_LT(msg.size(), 400u) << msg;
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
  }
}

// The input the fuzzer found (non-UTF-8 bytes in the header), when the shared data has it.
TEST(ReaderMessages, FuzzedNonUtf8Npy) {
  const std::string found = regress_input("nonutf8.npy");
  if (found.empty()) GTEST_SKIP() << "regress/nonutf8.npy is not here";
  const std::string msg = error_of([&] { io::read_matrix(found); });
  EXPECT_TRUE(printable_ascii(msg)) << msg;
  EXPECT_NE(msg.find("bad .npy header"), std::string::npos) << msg;
}

// ---- defect 8b: bytes after the gzip member of an IDX file
// ---------------------------------------

// The gzip member (RFC 1952) of `data`, made with zlib.
std::vector<uint8_t> gzip(const std::vector<uint8_t>& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<uint8_t> out(deflateBound(&z, data.size()) + 64);
  z.next_in = const_cast<uint8_t*>(data.data());
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// A u8 IDX file: 3 rows of 2 x 2 values.
std::vector<uint8_t> small_idx() {
  std::vector<uint8_t> b = {0, 0, 0x08, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 2};
  for (uint8_t v = 0; v < 12; ++v) b.push_back(v * 10);
  return b;
}

std::vector<uint8_t> operator+(std::vector<uint8_t> a, const std::vector<uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(ReaderGzip, BytesAfterTheGzipMemberAreRejected) {
  const std::vector<uint8_t> gz = gzip(small_idx());
  const struct {
    const char* name;
    std::vector<uint8_t> tail;
  } cases[] = {{"text", {'g', 'a', 'r', 'b', 'a', 'g', 'e', '!'}},
               {"one_byte", {0x42}},
               {"zeros", std::vector<uint8_t>(16, 0)},
               {"lone_magic", {0x1f}}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = temp_path(std::string("tail_") + c.name + ".idx.gz");
    write_bytes(p, gz + c.tail);
    const std::string msg = error_of([&] { io::read_matrix(p); });
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
    EXPECT_NE(msg.find("trailing"), std::string::npos) << msg;
  }
  // A second gzip member that is damaged is corrupt data, not a valid continuation.
  const std::string p = temp_path("tail_bad_member.idx.gz");
  write_bytes(p, gz + std::vector<uint8_t>{0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3, 0xde, 0xad});
  EXPECT_FALSE(error_of([&] { io::read_matrix(p); }).empty());
}

TEST(ReaderGzip, ValidFilesStillRead) {
  const std::vector<uint8_t> raw = small_idx();
  // One member, and the same bytes split over two members (`cat a.gz b.gz`, valid gzip).
  const std::vector<uint8_t> head(raw.begin(), raw.begin() + 20), tail(raw.begin() + 20, raw.end());
  for (const auto& file : {gzip(raw), gzip(head) + gzip(tail)}) {
    const std::string p = temp_path("valid.idx.gz");
    write_bytes(p, file);
    const host_matrix m = io::read_matrix(p);
    ASSERT_EQ(m.rows(), 3);
    ASSERT_EQ(m.cols(), 4);
    EXPECT_EQ(m.as<uint8_t>().data[11], 110);
  }
  // Truncated and damaged streams are still reported.
  const std::vector<uint8_t> gz = gzip(raw);
  const std::string cut = temp_path("cut.idx.gz"), flipped = temp_path("flipped.idx.gz");
  write_bytes(cut, std::vector<uint8_t>(gz.begin(), gz.end() - 5));
  EXPECT_NE(error_of([&] { io::read_matrix(cut); }).find("truncated"), std::string::npos);
  std::vector<uint8_t> bad = gz;
  bad[bad.size() - 6] ^= 0xFF;  // the CRC32 of the trailer
  write_bytes(flipped, bad);
  EXPECT_NE(error_of([&] { io::read_matrix(flipped); }).find("corrupt"), std::string::npos);
}

// The input the fuzzer found, when the shared data has it.
TEST(ReaderGzip, FuzzedGarbageAfterMember) {
  const std::string found = regress_input("gz_garbage_after.idx.gz");
  if (found.empty()) GTEST_SKIP() << "regress/gz_garbage_after.idx.gz is not here";
  EXPECT_NE(error_of([&] { io::read_matrix(found); }).find("trailing"), std::string::npos);
}

}  // namespace
}  // namespace cagra::test
