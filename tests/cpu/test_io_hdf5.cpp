// HDF5 files that must read (src/core/io, libhdf5 in a reader process): every storage layout
// (contiguous, chunked + shuffle + deflate, fletcher32, compact, big-endian, 1-D) bit-exactly, in
// the reader process and in-process alike; neighbor ids narrowed piece by piece; concurrent reads;
// the reader's timeout setting. Files that must be refused: test_io_hdf5_refused.cpp; the reader
// process itself: test_io_isolate.cpp.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/io.hpp>

#include "core/io/common.hpp"
#include "io_hdf5_test_helpers.hpp"
#include "test_data.hpp"

#ifdef CAGRA_HAVE_HDF5
#include <hdf5.h>

using namespace cagra;
using cagra::test::temp_path;
using cagra::test::io_hdf5::chunked;
using cagra::test::io_hdf5::expect_error;
using cagra::test::io_hdf5::h5_put;
using cagra::test::io_hdf5::pattern;

namespace {

template <typename T>
void expect_matrix(const host_matrix& m, dtype t, int64_t rows, int64_t cols,
                   const std::vector<T>& want) {
  ASSERT_EQ(m.type(), t);
  ASSERT_EQ(m.rows(), rows);
  ASSERT_EQ(m.cols(), cols);
  ASSERT_EQ(m.size_bytes(), want.size() * sizeof(T));
  EXPECT_EQ(std::memcmp(m.data(), want.data(), m.size_bytes()), 0);
}

}  // namespace

// Good files read bit-exactly through every storage variant, in the reader process and in this
// process (hdf5_options::in_process).
TEST(IoHdf5, GoodFilesReadIdenticallyInEveryLayout) {
  const int64_t rows = 1000;
  const int64_t cols = 37;
  const auto f32 = pattern<float>(rows * cols, 3);
  const auto u8 = pattern<uint8_t>(rows * cols, 4);
  const auto i8 = pattern<int8_t>(rows * cols, 5);
  const auto u32 = pattern<uint32_t>(rows * cols, 6);
  std::vector<double> f64(f32.begin(), f32.end());
  std::vector<int64_t> ids(100 * 10);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919) % 1000);
  const auto dist = pattern<float>(100 * 10, 7);
  const std::vector<int32_t> one_row = {5, -3, 9, 1000000};

  const std::string path = temp_path("good.h5");
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  h5_put(f, "train", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, f32.data(), rows, cols);
  hid_t gz = chunked(64, 16, true, 6);  // partial chunks at both edges
  h5_put(f, "gzip", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, f32.data(), rows, cols, gz);
  h5_put(f, "gzip_u8", H5T_STD_U8LE, H5T_NATIVE_UINT8, u8.data(), rows, cols, gz);
  H5Pclose(gz);
  hid_t plain = chunked(100, 37, false, -1, true);  // uncompressed, with checksums
  h5_put(f, "fletcher", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, f32.data(), rows, cols, plain);
  H5Pclose(plain);
  hid_t shuffled = chunked(300, 10, true, -1);
  h5_put(f, "shuffled", H5T_STD_U32LE, H5T_NATIVE_UINT32, u32.data(), rows, cols, shuffled);
  H5Pclose(shuffled);
  hid_t compact = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_layout(compact, H5D_COMPACT);
  h5_put(f, "compact", H5T_STD_I8LE, H5T_NATIVE_INT8, i8.data(), 20, cols, compact);
  H5Pclose(compact);
  h5_put(f, "f64be", H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, f64.data(), rows, cols);
  h5_put(f, "row", H5T_STD_I32BE, H5T_NATIVE_INT32, one_row.data(), 1, 4, H5P_DEFAULT, 1);
  hid_t gz_ids = chunked(30, 10, false, 9);
  h5_put(f, "neighbors", H5T_STD_I64LE, H5T_NATIVE_INT64, ids.data(), 100, 10, gz_ids);
  H5Pclose(gz_ids);
  h5_put(f, "distances", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, dist.data(), 100, 10);
  H5Fclose(f);

  const std::vector<uint32_t> ids32(ids.begin(), ids.end());
  const std::vector<int8_t> i8_head(i8.begin(), i8.begin() + 20 * cols);
  for (const bool in_process : {false, true}) {
    SCOPED_TRACE(std::string("in_process=") + (in_process ? "true" : "false"));
    io::detail::hdf5_options opt;
    opt.in_process = in_process;
    const auto read = [&](const std::string& p) { return io::detail::read_matrix(p, opt); };
    expect_matrix(read(path), dtype::f32, rows, cols, f32);
    expect_matrix(read(path + ":gzip"), dtype::f32, rows, cols, f32);
    expect_matrix(read(path + ":gzip_u8"), dtype::u8, rows, cols, u8);
    expect_matrix(read(path + ":fletcher"), dtype::f32, rows, cols, f32);
    expect_matrix(read(path + ":shuffled"), dtype::u32, rows, cols, u32);
    expect_matrix(read(path + ":compact"), dtype::i8, 20, cols, i8_head);
    expect_matrix(read(path + ":f64be"), dtype::f32, rows, cols, f32);
    // The conversion is reported (the CLI's "note: ... is float64, converted to float32").
    std::string converted;
    io::detail::read_matrix(path + ":f64be", opt, &converted);
    EXPECT_EQ(converted, "float64");
    converted.clear();
    io::detail::read_matrix(path + ":gzip", opt, &converted);
    EXPECT_EQ(converted, "");
    expect_matrix(read(path + ":row"), dtype::i32, 1, 4, one_row);
    io::neighbors_file gt = io::detail::read_neighbors(path, opt);
    expect_matrix(gt.ids, dtype::u32, 100, 10, ids32);
    expect_matrix(gt.distances, dtype::f32, 100, 10, dist);
  }
}

// Ids are narrowed piece by piece (a piece is about 1M ids): a bad id is named by its own row
// and column, and every piece lands in its place.
TEST(IoHdf5, IdsAcrossPieces) {
  const int64_t rows = 2000;
  const int64_t cols = 600;  // 1.2M ids: two pieces
  std::vector<uint64_t> ids(rows * cols);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = (i * 2654435761u) % 4000000000u;
  std::vector<int64_t> bad(rows * cols, 1);
  bad[1900 * cols + 5] = -7;
  const std::string path = temp_path("ids.h5");
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  h5_put(f, "neighbors", H5T_STD_U64LE, H5T_NATIVE_UINT64, ids.data(), rows, cols);
  h5_put(f, "bad", H5T_STD_I64LE, H5T_NATIVE_INT64, bad.data(), rows, cols);
  H5Fclose(f);
  const std::vector<uint32_t> want(ids.begin(), ids.end());
  expect_matrix(io::read_neighbors(path).ids, dtype::u32, rows, cols, want);
  expect_error([&] { io::read_neighbors(path + ":bad"); },
               {path + ":bad", "neighbor id at row 1900, column 5 is negative"});
}

// Each read has its own reader process: threads reading at once get the same data.
TEST(IoHdf5, ConcurrentReadsAgree) {
  const auto f32 = pattern<float>(5000 * 24, 8);
  const std::string path = temp_path("shared.h5");
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t gz = chunked(128, 24, true, 4);
  h5_put(f, "train", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, f32.data(), 5000, 24, gz);
  H5Pclose(gz);
  H5Fclose(f);
  std::vector<std::thread> threads;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        host_matrix m = io::read_matrix(path);
        if (m.size_bytes() == f32.size() * 4 &&
            std::memcmp(m.data(), f32.data(), m.size_bytes()) == 0)
          ++good;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(good.load(), 20);
}

TEST(IoHdf5, TimeoutSettingIsChecked) {
  const std::string path = temp_path("t.h5");
  std::vector<float> v = {1, 2};
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  h5_put(f, "train", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, v.data(), 1, 2);
  H5Fclose(f);
  io::detail::hdf5_options opt;
  for (const double bad : {0.0, -1.0, 2e6, std::nan("")}) {
    opt.timeout_seconds = bad;
    expect_error([&] { io::detail::read_matrix(path, opt); },
                 {"HDF5 reader timeout", "is not a number of seconds in (0, 1e6]"});
  }
  opt.timeout_seconds = 2.5;
  EXPECT_EQ(io::detail::read_matrix(path, opt).cols(), 2);
}
#endif  // CAGRA_HAVE_HDF5
