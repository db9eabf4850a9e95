// Dataset I/O (include/cagra/io.hpp): bit-exact round trips of every writable format, the real
// data files (bigann10k, sift5k, Fashion-MNIST IDX.gz), HDF5 when the test is built with it,
// and a table of malformed files that must each give a cagra::error naming the file.
#include <signal.h>
#include <sys/resource.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include <cagra/io.hpp>

#include "test_data.hpp"

#ifdef CAGRA_HAVE_HDF5
#include <hdf5.h>
#endif

namespace fs = std::filesystem;
using namespace cagra;
using cagra::test::read_bytes;
using cagra::test::temp_path;
using cagra::test::write_bytes;

namespace {

// Little byte-string builder for hand-made files.
struct bytes {
  std::vector<uint8_t> v;
  bytes& raw(const void* p, size_t n) {
    v.insert(v.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
    return *this;
  }
  bytes& str(const std::string& s) { return raw(s.data(), s.size()); }
  bytes& u8(uint8_t x) { return raw(&x, 1); }
  bytes& le32(uint32_t x) { return raw(&x, 4); }
  bytes& le64(uint64_t x) { return raw(&x, 8); }
  bytes& be32(uint32_t x) { return u8(x >> 24).u8(x >> 16).u8(x >> 8).u8(x); }
  bytes& fill(size_t n, uint8_t x = 7) {
    v.insert(v.end(), n, x);
    return *this;
  }
};

// A .npy file with the given dict text (the preamble's length field is computed).
bytes npy(const std::string& dict, int version = 1) {
  bytes b;
  b.str("\x93NUMPY").u8(static_cast<uint8_t>(version)).u8(0);
  std::string h = dict + "\n";
  if (version == 1) {
    b.u8(h.size() & 0xFF).u8(h.size() >> 8);
  } else {
    b.le32(static_cast<uint32_t>(h.size()));
  }
  return b.str(h);
}

host_matrix random_matrix(dtype t, int64_t rows, int64_t cols, uint32_t seed) {
  host_matrix m(t, rows, cols);
  std::mt19937 rng(seed);
  auto* p = static_cast<uint8_t*>(m.data());
  for (size_t i = 0; i < m.size_bytes(); ++i) p[i] = static_cast<uint8_t>(rng());
  if (t == dtype::u32) {  // ids: keep them < 2^31 so that .ibin/.ivecs accept them
    auto* q = static_cast<uint32_t*>(m.data());
    for (int64_t i = 0; i < rows * cols; ++i) q[i] &= 0x7FFFFFFFu;
  }
  return m;
}

bool same_bytes(const host_matrix& a, const host_matrix& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && a.size_bytes() == b.size_bytes() &&
         std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// Runs f, expecting a cagra::error whose message contains every needle.
void expect_error(const std::function<void()>& f, const std::vector<std::string>& needles) {
  try {
    f();
  } catch (const cagra::error& e) {
    const std::string what = e.what();
    for (const auto& n : needles)
      EXPECT_NE(what.find(n), std::string::npos) << "message: " << what << "\nlacks: " << n;
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a cagra::error: " << e.what();
    return;
  }
  ADD_FAILURE() << "no exception; expected one mentioning '" << needles.back() << "'";
}

std::set<std::string> listing(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

void gz_write(const std::string& path, const std::vector<uint8_t>& data) {
  gzFile g = gzopen(path.c_str(), "wb");
  ASSERT_NE(g, nullptr);
  ASSERT_EQ(gzwrite(g, data.data(), static_cast<unsigned>(data.size())), int(data.size()));
  gzclose(g);
}

}  // namespace

TEST(IoRoundTrip, EveryWritableFormatIsBitExact) {
  struct fmt_case {
    const char* ext;
    dtype write, read;
  };
  const fmt_case cases[] = {
      {".fbin", dtype::f32, dtype::f32},  {".u8bin", dtype::u8, dtype::u8},
      {".i8bin", dtype::i8, dtype::i8},   {".ibin", dtype::i32, dtype::i32},
      {".ibin", dtype::u32, dtype::i32},  {".fvecs", dtype::f32, dtype::f32},
      {".ivecs", dtype::i32, dtype::i32}, {".ivecs", dtype::u32, dtype::i32},
      {".bvecs", dtype::u8, dtype::u8},   {".npy", dtype::f32, dtype::f32},
      {".npy", dtype::f16, dtype::f16},   {".npy", dtype::u8, dtype::u8},
      {".npy", dtype::i8, dtype::i8},     {".npy", dtype::i32, dtype::i32},
      {".npy", dtype::u32, dtype::u32},
  };
  const int64_t shapes[][2] = {{37, 13}, {1, 5}, {9, 1}, {300, 128}};
  uint32_t seed = 1;
  for (const auto& c : cases) {
    for (const auto& s : shapes) {
      SCOPED_TRACE(std::string(c.ext) + " " + to_string(c.write) + " " + std::to_string(s[0]) +
                   "x" + std::to_string(s[1]));
      const std::string path = temp_path("rt_" + std::to_string(seed) + c.ext);
      host_matrix m = random_matrix(c.write, s[0], s[1], seed++);
      io::write_matrix(path, m);
      host_matrix back = io::read_matrix(path);
      EXPECT_EQ(back.type(), c.read);
      EXPECT_TRUE(same_bytes(m, back));
    }
  }
  // The extension is case-insensitive.
  host_matrix m = random_matrix(dtype::f32, 4, 3, 99);
  io::write_matrix(temp_path("UPPER.FBIN"), m);
  EXPECT_TRUE(same_bytes(m, io::read_matrix(temp_path("UPPER.FBIN"))));
}

TEST(IoRoundTrip, NeighborsWithAndWithoutDistances) {
  host_matrix ids = random_matrix(dtype::u32, 20, 7, 5);
  host_matrix dist = random_matrix(dtype::f32, 20, 7, 6);
  const std::string with = temp_path("gt_dist.ibin"), without = temp_path("gt.ibin");
  io::write_neighbors(with, ids.as<const uint32_t>(), dist.as<const float>());
  io::write_neighbors(without, ids.as<const uint32_t>());
  EXPECT_EQ(read_bytes(with).size(), 8u + 20 * 7 * 8);
  io::neighbors_file a = io::read_neighbors(with);
  EXPECT_EQ(a.ids.type(), dtype::u32);
  EXPECT_TRUE(same_bytes(a.ids, ids));
  EXPECT_TRUE(same_bytes(a.distances, dist));
  io::neighbors_file b = io::read_neighbors(without);
  EXPECT_TRUE(same_bytes(b.ids, ids));
  EXPECT_TRUE(b.distances.empty());
  EXPECT_EQ(io::read_matrix(with).type(), dtype::i32);  // ids only; distances skipped
  const std::string iv = temp_path("gt.ivecs");
  io::write_neighbors(iv, ids.as<const uint32_t>());
  EXPECT_TRUE(same_bytes(io::read_neighbors(iv).ids, ids));
}

TEST(IoRoundTrip, HandMadeNpyVariants) {
  // v2 header, 1-D (= one row), f8 narrowed to f32.
  bytes b = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 2);
  for (double d : {1.5, -2.0, 0.25}) b.raw(&d, 8);
  write_bytes(temp_path("v2.npy"), b.v);
  host_matrix m = io::read_matrix(temp_path("v2.npy"));
  ASSERT_EQ(m.type(), dtype::f32);
  ASSERT_EQ(m.rows(), 1);
  ASSERT_EQ(m.cols(), 3);
  EXPECT_EQ(m.as<const float>().data[2], 0.25f);
  // The overload with notes says that the values were converted; an f4 file needs no note.
  io::read_notes notes;
  EXPECT_EQ(io::read_matrix(temp_path("v2.npy"), notes).type(), dtype::f32);
  EXPECT_EQ(notes.converted_from, "float64");
  io::write_matrix(temp_path("f4.npy"), m.view());
  io::read_matrix(temp_path("f4.npy"), notes);
  EXPECT_EQ(notes.converted_from, "");
  // 64-bit ids for read_neighbors, in range.
  bytes ids = npy("{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (2, 2)}", 3);
  ids.le64(0).le64(5).le64(4000000000ull).le64(~uint64_t{0});
  write_bytes(temp_path("ids.npy"), ids.v);
  host_matrix got = io::read_neighbors(temp_path("ids.npy")).ids;
  ASSERT_EQ(got.type(), dtype::u32);
  EXPECT_EQ(got.as<const uint32_t>().data[2], 4000000000u);
  // -1 (an empty slot of a search that found fewer than k rows) reads as kInvalidId, as in .ibin.
  EXPECT_EQ(got.as<const uint32_t>().data[3], kInvalidId);
}

TEST(IoRoundTrip, IdxPlainGzipAndFloat) {
  // 3-D u8 (2 x 2 x 3 -> 2 x 6), plain and gzipped; gzip also found by magic without ".gz".
  bytes b;
  b.u8(0).u8(0).u8(0x08).u8(3).be32(2).be32(2).be32(3);
  for (int i = 0; i < 12; ++i) b.u8(static_cast<uint8_t>(i * 20));
  write_bytes(temp_path("a-idx3-ubyte"), b.v);
  gz_write(temp_path("a-idx3-ubyte.gz"), b.v);
  gz_write(temp_path("hidden-gzip.idx"), b.v);
  for (const char* name : {"a-idx3-ubyte", "a-idx3-ubyte.gz", "hidden-gzip.idx"}) {
    SCOPED_TRACE(name);
    host_matrix m = io::read_matrix(temp_path(name));
    ASSERT_EQ(m.type(), dtype::u8);
    ASSERT_EQ(m.rows(), 2);
    ASSERT_EQ(m.cols(), 6);
    EXPECT_EQ(std::memcmp(m.data(), b.v.data() + 16, 12), 0);
  }
  // 1-D big-endian f32 -> rows x 1.
  bytes f;
  f.u8(0).u8(0).u8(0x0D).u8(1).be32(2);
  float vals[2] = {3.5f, -1.0f};
  for (float v : vals) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    f.be32(u);
  }
  write_bytes(temp_path("f.IDX"), f.v);
  host_matrix m = io::read_matrix(temp_path("f.IDX"));
  ASSERT_EQ(m.type(), dtype::f32);
  ASSERT_EQ(m.rows(), 2);
  ASSERT_EQ(m.cols(), 1);
  EXPECT_EQ(m.as<const float>().data[0], 3.5f);
  EXPECT_EQ(m.as<const float>().data[1], -1.0f);
}

TEST(IoPaths, ColonInDirectoryNameIsNotADatasetSuffix) {
  // Even a folder named like "<something>.h5:<more>" is a folder, not an HDF5 dataset suffix.
  for (const char* sub : {"with:colon", "runs.h5:old/deeper"}) {
    const std::string dir = temp_path(sub);
    fs::create_directories(dir);
    host_matrix m = random_matrix(dtype::u8, 3, 4, 11);
    io::write_matrix(dir + "/x.u8bin", m);
    EXPECT_TRUE(same_bytes(m, io::read_matrix(dir + "/x.u8bin"))) << sub;
  }
}

TEST(IoRealData, Bigann10kAndSift5k) {
  const std::string d = test::shared_data_dir();
  host_matrix base = io::read_matrix(d + "/bigann10k/base.u8bin");
  EXPECT_EQ(base.type(), dtype::u8);
  EXPECT_EQ(base.rows(), 9900);
  EXPECT_EQ(base.cols(), 128);
  host_matrix q = io::read_matrix(d + "/bigann10k/query.u8bin");
  EXPECT_EQ(q.rows(), 100);
  EXPECT_EQ(q.cols(), 128);
  io::neighbors_file gt = io::read_neighbors(d + "/bigann10k/groundtruth.ibin");
  ASSERT_EQ(gt.ids.rows(), 100);
  ASSERT_EQ(gt.ids.cols(), 100);
  ASSERT_EQ(gt.distances.rows(), 100);
  ASSERT_EQ(gt.distances.cols(), 100);
  auto ids = gt.ids.as<const uint32_t>();
  auto dist = gt.distances.as<const float>();
  for (int64_t i = 0; i < 100; ++i) {
    for (int64_t j = 0; j < 100; ++j) {
      ASSERT_LT(ids.row(i)[j], 9900u) << i << "," << j;
      if (j > 0) {
        ASSERT_LE(dist.row(i)[j - 1], dist.row(i)[j]) << i << "," << j;
      }
    }
  }
  host_matrix s5 = io::read_matrix(d + "/sift5k/base.u8bin");
  EXPECT_EQ(s5.rows(), 5000);
  EXPECT_EQ(s5.cols(), 128);
}

TEST(IoRealData, FashionMnistIdxGz) {
  const std::string d = test::fashion_dir();
  host_matrix train = io::read_matrix(d + "/train-images-idx3-ubyte.gz");
  EXPECT_EQ(train.type(), dtype::u8);
  EXPECT_EQ(train.rows(), 60000);
  EXPECT_EQ(train.cols(), 784);
  host_matrix test = io::read_matrix(d + "/t10k-images-idx3-ubyte.gz");
  EXPECT_EQ(test.rows(), 10000);
  EXPECT_EQ(test.cols(), 784);
  host_matrix labels = io::read_matrix(d + "/t10k-labels-idx1-ubyte.gz");
  EXPECT_EQ(labels.rows(), 10000);
  EXPECT_EQ(labels.cols(), 1);
  const auto* l = static_cast<const uint8_t*>(labels.data());
  for (int64_t i = 0; i < 10000; ++i) ASSERT_LT(l[i], 10) << i;
}

#ifdef CAGRA_HAVE_HDF5
namespace {
void h5_put(hid_t file, const char* name, hid_t file_type, hid_t mem_type, const void* data,
            hsize_t rows, hsize_t cols) {
  hsize_t dims[2] = {rows, cols};
  hid_t space = H5Screate_simple(2, dims, nullptr);
  hid_t d = H5Dcreate2(file, name, file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(d, 0);
  ASSERT_GE(H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0);
  H5Dclose(d);
  H5Sclose(space);
}
}  // namespace

TEST(IoHdf5, AnnBenchmarksStyleFile) {
  const std::string path = temp_path("ann.hdf5");
  std::vector<double> train(6 * 4);
  for (size_t i = 0; i < train.size(); ++i) train[i] = 0.5 * static_cast<double>(i) - 3.0;
  std::vector<float> test = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<int32_t> nb = {0, 5, 3, 2, 1, 4};
  std::vector<float> dist = {0.f, 1.f, 2.f, 0.5f, 0.75f, 9.f};
  std::vector<int64_t> bad = {1, -2};
  std::vector<uint8_t> small = {1, 2, 3, 250};
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(f, 0);
  h5_put(f, "train", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, train.data(), 6, 4);
  h5_put(f, "test", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, test.data(), 2, 4);
  h5_put(f, "neighbors", H5T_STD_I32LE, H5T_NATIVE_INT32, nb.data(), 2, 3);
  h5_put(f, "distances", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, dist.data(), 2, 3);
  h5_put(f, "bad_ids", H5T_STD_I64LE, H5T_NATIVE_INT64, bad.data(), 1, 2);
  h5_put(f, "small", H5T_STD_U8LE, H5T_NATIVE_UINT8, small.data(), 2, 2);
  H5Fclose(f);

  host_matrix m = io::read_matrix(path);  // default "train", f64 -> f32
  ASSERT_EQ(m.type(), dtype::f32);
  ASSERT_EQ(m.rows(), 6);
  ASSERT_EQ(m.cols(), 4);
  for (size_t i = 0; i < train.size(); ++i)
    EXPECT_EQ(m.as<const float>().data[i], static_cast<float>(train[i]));
  host_matrix t = io::read_matrix(path + ":test");
  EXPECT_EQ(std::memcmp(t.data(), test.data(), 32), 0);
  host_matrix u = io::read_matrix(path + ":small");
  EXPECT_EQ(u.type(), dtype::u8);
  EXPECT_EQ(std::memcmp(u.data(), small.data(), 4), 0);
  io::neighbors_file gt = io::read_neighbors(path);
  ASSERT_EQ(gt.ids.type(), dtype::u32);
  EXPECT_EQ(std::memcmp(gt.ids.data(), nb.data(), 24), 0);
  EXPECT_EQ(std::memcmp(gt.distances.data(), dist.data(), 24), 0);
  expect_error([&] { io::read_neighbors(path + ":bad_ids"); }, {"ann.hdf5", "negative"});
  expect_error([&] { io::read_matrix(path + ":nope"); },
               {"ann.hdf5", "no dataset 'nope'", "train"});
}
#endif

TEST(IoErrors, MalformedFilesNameTheFileAndTheProblem) {
  struct bad_file {
    const char* name;
    std::vector<uint8_t> content;
    const char* expect;
    bool neighbors = false;
  };
  bytes gz_bytes;  // a valid gzip IDX, then damaged copies of it
  {
    bytes idx;
    idx.u8(0).u8(0).u8(8).u8(2).be32(4).be32(4).fill(16, 1);
    gz_write(temp_path("src.idx.gz"), idx.v);
    gz_bytes.v = read_bytes(temp_path("src.idx.gz"));
  }
  std::vector<uint8_t> gz_corrupt = gz_bytes.v;
  for (size_t i = 12; i < gz_corrupt.size() - 8; ++i) gz_corrupt[i] ^= 0x5A;
  std::vector<uint8_t> gz_cut(gz_bytes.v.begin(), gz_bytes.v.end() - 12);
  // A small gzip whose IDX header claims 2^31 x 2^31 bytes.
  gz_write(temp_path("liar.gz"), bytes().u8(0).u8(0).u8(8).u8(2).be32(1u << 31).be32(1u << 31).v);
  const std::vector<uint8_t> gz_liar = read_bytes(temp_path("liar.gz"));

  const bad_file cases[] = {
      {"empty.fbin", {}, "file is empty"},
      {"short_header.fbin", bytes().le32(3).u8(1).v, "truncated header"},
      {"short_body.fbin", bytes().le32(10).le32(4).fill(20).v, "truncated body"},
      {"trailing.u8bin", bytes().le32(2).le32(2).fill(5).v, "trailing garbage"},
      {"zero_rows.fbin", bytes().le32(0).le32(4).v, "both must be positive"},
      {"zero_cols.i8bin", bytes().le32(4).le32(0).v, "both must be positive"},
      {"huge_header.fbin", bytes().le32(0xFFFFFFFF).le32(0xFFFFFFFF).fill(8).v, "overflows"},
      {"big_header.u8bin", bytes().le32(1u << 16).le32(1u << 16).fill(8).v, "truncated body"},
      {"odd_size.ibin", bytes().le32(2).le32(2).fill(24).v, "(ids + f32"},
      {"negative.ibin", bytes().le32(1).le32(2).le32(3).le32(0xFFFFFFFE).v, "negative", true},
      {"dims.fvecs", bytes().le32(2).fill(8).le32(2).fill(8).le32(3).fill(12).v,
       "row 2 has dim 3, expected 2"},
      {"neg_dim.bvecs", bytes().le32(0xFFFFFFFF).fill(4).v, "row 0 has dim -1"},
      {"tail.ivecs", bytes().le32(1).le32(7).le32(1).le32(8).u8(0).v, "not a whole number"},
      {"huge_dim.fvecs", bytes().le32(0x7FFFFFFF).fill(8).v, "truncated row 0"},
      {"data.txt", bytes().fill(8).v, "unknown file extension"},
      {"base.fbin.gz", gz_bytes.v, "only IDX files may be .gz"},
      {"magic.idx", bytes().u8(1).u8(0).u8(8).u8(1).be32(1).u8(0).v, "bad IDX magic"},
      {"type-idx1-ubyte", bytes().u8(0).u8(0).u8(0x0C).u8(1).be32(1).le32(0).v,
       "unsupported IDX element type 0x0c"},
      {"short-idx2-ubyte", bytes().u8(0).u8(0).u8(8).u8(2).be32(3).be32(3).fill(8).v,
       "truncated body"},
      {"zero-idx2", bytes().u8(0).u8(0).u8(8).u8(2).be32(3).be32(0).v, "dimension 1 is zero"},
      {"corrupt.idx.gz", gz_corrupt, "corrupt gzip"},
      {"cut.idx.gz", gz_cut, "truncated gzip stream"},
      {"liar.idx.gz", gz_liar, "more than a"},
      {"magic.npy", bytes().str("NUMPY!").fill(20).v, "bad magic"},
      {"version.npy", bytes().str("\x93NUMPY").u8(9).u8(0).fill(20).v, "format version 9"},
      {"dtype.npy", npy("{'descr': '<c8', 'fortran_order': False, 'shape': (1, 1), }").fill(8).v,
       "unsupported dtype '<c8'"},
      {"fortran.npy", npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1), }").fill(4).v,
       "fortran_order is True"},
      {"bigend.npy", npy("{'descr': '>f4', 'fortran_order': False, 'shape': (1, 1), }").fill(4).v,
       "big-endian"},
      {"cube.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1), }").fill(4).v,
       "3 dimensions"},
      {"overflow.npy",
       npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }").v,
       "overflows"},
      {"hdrlen.npy", bytes().str("\x93NUMPY").u8(1).u8(0).u8(0xFF).u8(0x7F).fill(10).v,
       "truncated header"},
      {"garbled.npy", npy("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }").fill(4).v,
       "True or False"},
      {"i8matrix.npy", npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }").fill(8).v,
       "only read as neighbor ids"},
      {"neg64.npy",
       npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }").le64(~uint64_t{1}).v,
       "negative", true},
      {"floatids.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }").fill(4).v,
       "must be integers", true},
      {"notgt.fbin", bytes().le32(1).le32(1).fill(4).v, "do not hold neighbor ids", true},
      {"garbage.hdf5", bytes().fill(64).v, "HDF5"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = temp_path(c.name);
    write_bytes(path, c.content);
    if (c.neighbors) {
      expect_error([&] { io::read_neighbors(path); }, {path, c.expect});
    } else {
      expect_error([&] { io::read_matrix(path); }, {path, c.expect});
    }
  }
  expect_error([] { io::read_matrix(temp_path("missing.fbin")); }, {"missing.fbin", "no such"});
  fs::create_directories(temp_path("folder.u8bin"));
  expect_error([] { io::read_matrix(temp_path("folder.u8bin")); },
               {"folder.u8bin", "is a directory"});
  expect_error([] { io::read_matrix(temp_path("x.hdf5:")); }, {"x.hdf5", "empty HDF5 dataset"});
}

TEST(IoWrite, FailedWritesLeaveTheTargetUntouched) {
  const std::string dir = temp_path("writes");
  fs::create_directories(dir);
  const std::string target = dir + "/keep.ibin";
  host_matrix ids = random_matrix(dtype::u32, 50, 10, 21);
  io::write_matrix(target, ids);
  const std::vector<uint8_t> before = read_bytes(target);
  const std::set<std::string> files = listing(dir);

  host_matrix f = random_matrix(dtype::f32, 50, 10, 22);
  expect_error([&] { io::write_matrix(target, f); }, {"keep.ibin", "cannot write a f32"});
  host_matrix big = random_matrix(dtype::u32, 50, 10, 23);
  static_cast<uint32_t*>(big.data())[123] = 0x80000000u;
  expect_error([&] { io::write_matrix(target, big); }, {"keep.ibin", "row 12, column 3"});
  expect_error([&] { io::write_matrix(target, host_matrix(dtype::i32, 0, 4)); },
               {"keep.ibin", "empty"});
  host_matrix dist = random_matrix(dtype::f32, 49, 10, 24);
  expect_error(
      [&] { io::write_neighbors(target, ids.as<const uint32_t>(), dist.as<const float>()); },
      {"keep.ibin", "distances must be f32 50 x 10"});
  expect_error([&] { io::write_matrix(dir + "/keep.idx", ids); }, {"keep.idx", "not supported"});
  expect_error([&] { io::write_matrix(dir, ids); }, {"writes", "unknown file extension"});
  fs::create_directories(dir + "/sub.fbin");
  expect_error([&] { io::write_matrix(dir + "/sub.fbin", f); }, {"sub.fbin", "is a directory"});
  expect_error([&] { io::write_matrix(dir + "/no/such/dir/x.fbin", f); },
               {"x.fbin", "temporary file"});

  // A failure in the middle of writing (file size limit reached): the temp file is removed.
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  if (setrlimit(RLIMIT_FSIZE, &small) == 0) {
    host_matrix large = random_matrix(dtype::i32, 1000, 100, 25);
    expect_error([&] { io::write_matrix(target, large); }, {"keep.ibin", "write failed"});
    setrlimit(RLIMIT_FSIZE, &old);
  }
  signal(SIGXFSZ, old_handler);

  fs::remove(dir + "/sub.fbin");
  EXPECT_EQ(read_bytes(target), before);
  EXPECT_EQ(listing(dir), files);  // no temporary file left behind

  // A successful write replaces the file completely (a smaller matrix leaves no stale tail).
  host_matrix two = random_matrix(dtype::i32, 2, 3, 26);
  io::write_matrix(target, two);
  EXPECT_EQ(read_bytes(target).size(), 8u + 2 * 3 * 4);
  EXPECT_TRUE(same_bytes(two, io::read_matrix(target)));
}
