// Large matrix bodies (64 MiB and more), which the readers take in 16 MiB pieces over threads
// (io::detail::read_pieces through input_file::read_bulk).
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include <cagra/io.hpp>

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
