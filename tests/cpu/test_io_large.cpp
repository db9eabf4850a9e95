// Large matrix bodies (64 MiB and more), which the readers take in 16 MiB pieces over threads
// (io::detail::read_pieces through input_file::read_bulk; read_pieces_in_order, cagra::load's).
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/io.hpp>

#include "core/io/common.hpp"
#include "test_data.hpp"

namespace fs = std::filesystem;
using namespace cagra;
using cagra::test::temp_path;

namespace {

bool same_bytes(const host_matrix& a, const host_matrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && a.size_bytes() == b.size_bytes() &&
         std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

}  // namespace

// Bodies of 64 MiB and more are read in 16 MiB pieces over threads (input_file::read_bulk):
// every byte in its place, a last piece that is not whole, and reads after one (the .ibin's
// distances) continuing where it stopped.
TEST(IoRoundTrip, LargeBodiesReadInPieces) {
  const int64_t rows = 4'500'001;  // x 4 x 4 bytes = 72,000,016: four whole pieces and a part
  // Every 32-bit word holds a hash of its own position (below 2^31: valid ids), so a word read
  // into the wrong place shows; cheaper than drawing every byte (this runs under ASan too).
  const auto positions = [rows](dtype t, uint32_t salt) {
    host_matrix m(t, rows, 4);
    auto* w = static_cast<uint32_t*>(m.data());
    for (int64_t i = 0; i < rows * 4; ++i)
      w[i] = (uint32_t(i) * 2654435761u ^ salt) & 0x3FFFFFFFu;  // also finite as f32
    return m;
  };
  for (const char* ext : {".fbin", ".npy"}) {
    SCOPED_TRACE(ext);
    const std::string path = temp_path(std::string("large") + ext);
    const host_matrix m = positions(dtype::f32, 31);
    io::write_matrix(path, m);
    EXPECT_TRUE(same_bytes(m, io::read_matrix(path)));
    fs::remove(path);
  }
  host_matrix ids = positions(dtype::u32, 32);
  host_matrix dist = positions(dtype::f32, 33);
  const std::string gt = temp_path("large_gt.ibin");
  io::write_neighbors(gt, ids.as<const uint32_t>(), dist.as<const float>());
  const io::neighbors_file back = io::read_neighbors(gt);
  EXPECT_TRUE(same_bytes(back.ids, ids));
  EXPECT_TRUE(same_bytes(back.distances, dist));
  fs::remove(gt);
}

// read_pieces_in_order hands every piece over in file order, on one thread, only once its bytes
// are there, and the whole body when it is read whole; a body that ends early hands over only
// the whole pieces before the end and reports where it ended.
TEST(IoRoundTrip, PiecesHandedOverInOrder) {
  const uint64_t words = 18'000'001;  // 72,000,004 bytes: four whole 16 MiB pieces and a part
  std::vector<uint32_t> body(words);
  for (uint64_t i = 0; i < words; ++i) body[i] = uint32_t(i) * 2654435761u;
  const std::string path = temp_path("pieces.bin");
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(body.data(), 4, words, f), words);
    std::fclose(f);
  }
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const uint64_t n = words * 4;
  std::vector<uint32_t> got(words);
  std::vector<std::pair<uint64_t, uint64_t>> handed;
  bool bytes_there = true;
  const auto consume = [&](uint64_t first, uint64_t bytes) {
    handed.emplace_back(first, bytes);
    bytes_there =
        bytes_there && std::memcmp(reinterpret_cast<uint8_t*>(got.data()) + first,
                                   reinterpret_cast<uint8_t*>(body.data()) + first, bytes) == 0;
  };
  io::detail::pieces_read r = io::detail::read_pieces_in_order(fd, got.data(), n, 0, consume);
  EXPECT_EQ(r.done, n);
  EXPECT_EQ(r.error, 0);
  EXPECT_TRUE(bytes_there);
  ASSERT_EQ(handed.size(), 5u);
  uint64_t at = 0;
  for (const auto& [first, bytes] : handed) {
    EXPECT_EQ(first, at);
    at += bytes;
  }
  EXPECT_EQ(at, n);
  // Ask for 40 MiB more than the file holds: the body ends inside the fifth piece.
  std::vector<uint32_t> more(words + (10u << 20));
  handed.clear();
  got.swap(more);
  bytes_there = true;
  r = io::detail::read_pieces_in_order(fd, got.data(), n + (40u << 20), 0, consume);
  EXPECT_EQ(r.done, n);
  EXPECT_EQ(r.error, 0);
  EXPECT_TRUE(bytes_there);
  EXPECT_EQ(handed.size(), 4u);  // the four whole pieces before the end
  ::close(fd);
  fs::remove(path);
}
