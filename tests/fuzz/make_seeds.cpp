// Writes the seed corpus of the fuzz targets: small valid files of every format, made by the
// library's own writers (and libhdf5 for .hdf5), with the selector byte each target expects in
// front (fuzz_bin.cpp, fuzz_vecs.cpp, fuzz_idx.cpp). Run once and commit what it writes:
//   build-fuzz/tests/fuzz/cagra_fuzz_seeds tests/fuzz/corpus
// Files are named seed-*; the regression inputs next to them (regress-*, crash-*) are not touched.
// The output is deterministic (fixed values and seeds), so a re-run on the same format version
// rewrites the same bytes.
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz_util.hpp"

#ifdef CAGRA_HAVE_HDF5
#include <hdf5.h>
#endif

namespace {

using namespace cagra;
namespace fs = std::filesystem;

std::string g_out;  // the corpus folder

void put(const std::string& target, const std::string& name, const std::vector<uint8_t>& bytes) {
  fs::create_directories(g_out + "/" + target);
  std::ofstream f(g_out + "/" + target + "/seed-" + name, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  fuzz::check(f.good(), "cannot write a seed file");
}

std::vector<uint8_t> with_selector(uint8_t sel, const std::vector<uint8_t>& file) {
  std::vector<uint8_t> out{sel};
  out.insert(out.end(), file.begin(), file.end());
  return out;
}

/** The bytes write_matrix writes for `m` under a name with extension `ext`. */
std::vector<uint8_t> written(const host_matrix& m, const std::string& ext) {
  const std::string p = fuzz::scratch_dir::path() + "/seed" + ext;
  io::write_matrix(p, m);
  return fuzz::read_back(p);
}

template <typename T>
host_matrix matrix(int64_t rows, int64_t cols, T first, T step) {
  host_matrix m(dtype_of<T>(), rows, cols);
  T* p = static_cast<T*>(m.data());
  for (int64_t i = 0; i < rows * cols; ++i) p[i] = static_cast<T>(first + step * static_cast<T>(i));
  return m;
}

/** A .npy file with any header dict (numpy's layout: magic, version, header padded to 64). */
std::vector<uint8_t> npy(const std::string& dict, const std::vector<uint8_t>& body, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string h = dict;
  while ((prefix + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  const uint32_t len = static_cast<uint32_t>(h.size());
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i)
    out.push_back(static_cast<uint8_t>(len >> (8 * i)));
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<uint8_t> bytes_of(const host_matrix& m) {
  const auto* p = static_cast<const uint8_t*>(m.data());
  return {p, p + m.size_bytes()};
}

/** An IDX file: magic 00 00 type ndims, big-endian dims, then the values (big-endian). */
std::vector<uint8_t> idx(uint8_t type, const std::vector<uint32_t>& dims,
                         const std::vector<uint8_t>& body) {
  std::vector<uint8_t> out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(d >> s));
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

std::vector<uint8_t> gzip(const std::vector<uint8_t>& in) {
  z_stream zs{};
  fuzz::check(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK, "deflate");
  std::vector<uint8_t> out(deflateBound(&zs, in.size()) + 32);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  fuzz::check(deflate(&zs, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::vector<uint8_t> saved_index(const host_matrix& base, metric m, uint32_t degree,
                                 storage_type storage = storage_type::same_as_input) {
  resources res;
  res.target = backend::cpu;
  res.num_threads = 1;
  index_params ip;
  ip.metric = m;
  ip.graph_degree = degree;
  ip.storage = storage;
  const std::string p = fuzz::scratch_dir::path() + "/seed.cagra";
  save(build(res, ip, base), p);
  return fuzz::read_back(p);
}

#ifdef CAGRA_HAVE_HDF5
void h5_dataset(hid_t file, const char* name, hid_t type, const host_matrix& m, bool chunked) {
  const hsize_t dims[2] = {static_cast<hsize_t>(m.rows()), static_cast<hsize_t>(m.cols())};
  const hid_t space = H5Screate_simple(2, dims, nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  H5Pset_obj_track_times(dcpl, false);  // no timestamps: the same bytes on every run
  if (chunked) {
    const hsize_t chunk[2] = {2, dims[1]};
    H5Pset_chunk(dcpl, 2, chunk);
    H5Pset_deflate(dcpl, 1);
  }
  const hid_t d = H5Dcreate2(file, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  fuzz::check(d >= 0, "H5Dcreate2");
  fuzz::check(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.data()) >= 0, "H5Dwrite");
  H5Dclose(d);
  H5Pclose(dcpl);
  H5Sclose(space);
}

std::vector<uint8_t> h5_file(bool chunked, bool u8_train) {
  const std::string p = fuzz::scratch_dir::path() + "/seed.hdf5";
  const hid_t f = H5Fcreate(p.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  fuzz::check(f >= 0, "H5Fcreate");
  if (u8_train)
    h5_dataset(f, "train", H5T_NATIVE_UINT8, matrix<uint8_t>(6, 4, 1, 3), chunked);
  else
    h5_dataset(f, "train", H5T_NATIVE_FLOAT, matrix<float>(6, 4, 0.5f, 0.25f), chunked);
  h5_dataset(f, "test", H5T_NATIVE_FLOAT, matrix<float>(2, 4, 1.0f, 0.5f), chunked);
  h5_dataset(f, "neighbors", H5T_NATIVE_INT32, matrix<int32_t>(2, 3, 0, 1), chunked);
  h5_dataset(f, "distances", H5T_NATIVE_FLOAT, matrix<float>(2, 3, 0.0f, 1.0f), chunked);
  H5Fclose(f);
  return fuzz::read_back(p);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (tests/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  g_out = argv[1];

  // fuzz_bin: selector (0 fbin, 1 u8bin, 2 i8bin, 3 ibin) + file.
  put("bin", "f32_3x4.fbin", with_selector(0, written(matrix<float>(3, 4, -1.0f, 0.5f), ".fbin")));
  put("bin", "u8_5x3.u8bin", with_selector(1, written(matrix<uint8_t>(5, 3, 7, 11), ".u8bin")));
  put("bin", "i8_2x2.i8bin", with_selector(2, written(matrix<int8_t>(2, 2, -3, 2), ".i8bin")));
  put("bin", "ids_2x3.ibin", with_selector(3, written(matrix<int32_t>(2, 3, 0, 1), ".ibin")));
  {
    const host_matrix ids = matrix<uint32_t>(2, 3, 0, 1);
    const host_matrix dist = matrix<float>(2, 3, 0.0f, 0.5f);
    const std::string p = fuzz::scratch_dir::path() + "/gt.ibin";
    io::write_neighbors(p, ids.as<uint32_t>(), dist.as<float>());
    put("bin", "ids_dist_2x3.ibin", with_selector(3, fuzz::read_back(p)));
  }

  // fuzz_vecs: selector (0 fvecs, 1 ivecs, 2 bvecs) + file.
  put("vecs", "f32_3x4.fvecs",
      with_selector(0, written(matrix<float>(3, 4, 0.0f, 0.25f), ".fvecs")));
  put("vecs", "i32_2x3.ivecs", with_selector(1, written(matrix<int32_t>(2, 3, 4, 1), ".ivecs")));
  put("vecs", "u8_4x2.bvecs", with_selector(2, written(matrix<uint8_t>(4, 2, 0, 9), ".bvecs")));

  // fuzz_npy: the file. The library's writer for its dtypes, and by hand the variants it only
  // reads: f8 (narrowed), 64-bit ids, 1-D, format versions 2 and 3, big-endian (refused),
  // Fortran order (refused).
  put("npy", "f4_2x3.npy", written(matrix<float>(2, 3, 1.0f, 0.5f), ".npy"));
  put("npy", "u1_3x2.npy", written(matrix<uint8_t>(3, 2, 1, 2), ".npy"));
  put("npy", "i1_2x2.npy", written(matrix<int8_t>(2, 2, -1, 1), ".npy"));
  put("npy", "i4_2x3.npy", written(matrix<int32_t>(2, 3, 0, 2), ".npy"));
  put("npy", "u4_2x2.npy", written(matrix<uint32_t>(2, 2, 0, 1), ".npy"));
  {
    host_matrix h(dtype::f16, 2, 2);
    half* p = static_cast<half*>(h.data());
    for (int i = 0; i < 4; ++i) p[i] = to_half(0.5f * static_cast<float>(i));
    put("npy", "f2_2x2.npy", written(h, ".npy"));
  }
  {
    std::vector<uint8_t> f8(2 * 2 * 8);
    const double v[4] = {0.5, -1.25, 3.0, 1e-3};
    std::memcpy(f8.data(), v, sizeof v);
    put("npy", "f8_2x2.npy",
        npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", f8));
    std::vector<uint8_t> i8(3 * 8, 0);
    for (int i = 0; i < 3; ++i) i8[8 * i] = static_cast<uint8_t>(i + 1);
    put("npy", "i8_ids_1x3.npy",
        npy("{'descr': '<i8', 'fortran_order': False, 'shape': (1, 3), }", i8));
    put("npy", "u8_ids_3.npy",
        npy("{'descr': '<u8', 'fortran_order': False, 'shape': (3,), }", i8));
    const std::vector<uint8_t> f4 = bytes_of(matrix<float>(2, 2, 1.0f, 1.0f));
    put("npy", "f4_v2.npy",
        npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", f4, 2));
    put("npy", "f4_v3.npy",
        npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", f4, 3));
    put("npy", "f4_fortran.npy",
        npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", f4));
    put("npy", "f4_bigendian.npy",
        npy("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", f4));
  }

  // fuzz_idx: mode byte (bit 0: gzip the rest here) + bytes.
  {
    std::vector<uint8_t> u8(3 * 2 * 2);
    for (size_t i = 0; i < u8.size(); ++i) u8[i] = static_cast<uint8_t>(i * 20);
    const std::vector<uint8_t> images = idx(0x08, {3, 2, 2}, u8);
    const std::vector<uint8_t> labels = idx(0x08, {4}, {1, 2, 3, 4});
    const std::vector<uint8_t> i8 = idx(0x09, {2, 3}, {0xff, 1, 2, 0x80, 4, 5});
    const std::vector<uint8_t> f32 = idx(0x0D, {2, 1}, {0x3f, 0x80, 0, 0, 0xc0, 0, 0, 0});  // 1, -2
    put("idx", "u8_3x2x2.idx", with_selector(0, images));
    put("idx", "u8_labels_4.idx", with_selector(0, labels));
    put("idx", "i8_2x3.idx", with_selector(0, i8));
    put("idx", "f32_2x1.idx", with_selector(0, f32));
    put("idx", "u8_3x2x2.idx.gz", with_selector(0, gzip(images)));  // gzip framing fuzzed
    put("idx", "u8_3x2x2.zmode", with_selector(1, images));         // compressed by the target
    put("idx", "f32_2x1.zmode", with_selector(1, f32));
  }

#ifdef CAGRA_HAVE_HDF5
  put("hdf5", "f32_contiguous.hdf5", h5_file(false, false));
  put("hdf5", "u8_chunked_deflate.hdf5", h5_file(true, true));
#endif

  // fuzz_load and fuzz_load_sealed: small indexes of every storage type and metric.
  for (const char* target : {"load", "load_sealed"}) {
    put(target, "f32_l2_12x4_d4.cagra",
        saved_index(matrix<float>(12, 4, -2.0f, 0.375f), metric::l2, 4));
    put(target, "u8_ip_10x3_d3.cagra",
        saved_index(matrix<uint8_t>(10, 3, 1, 7), metric::inner_product, 3));
    put(target, "i8_l2_9x2_d2.cagra", saved_index(matrix<int8_t>(9, 2, -60, 13), metric::l2, 2));
    put(target, "f16_cosine_8x3_d3.cagra",
        saved_index(matrix<float>(8, 3, 0.5f, 0.75f), metric::cosine, 3, storage_type::f16));
  }

  // fuzz_build_search: inputs that decode to valid builds and searches of every type and metric.
  struct bs_seed {
    const char* name;
    int type, raw, rows, cols, metric, degree, inter, algo, iters, reorder, storage;
    int itopk, width, max_it, min_it, hash_pick, reset, samplings, k, nq, own_rows;
  };
  const bs_seed bs[] = {
      // name                type raw rows cols metric deg inter algo it reord stor
      //                     itopk width maxit minit hash reset samp k nq own
      {"f32_l2_nndescent", 0, 0, 40, 6, 0, 8, 16, 1, 4, 0, 0, 32, 1, 0, 0, 0, 0, 0, 10, 3, 1},
      {"u8_ip_bruteforce", 2, 0, 24, 5, 1, 6, 12, 2, 1, 0, 0, 16, 2, 0, 0, 0, 0, 0, 5, 2, 0},
      {"i8_l2_hash8_reset", 3, 0, 48, 4, 0, 10, 20, 0, 3, 1, 0, 48, 4, 8, 2, 3, 1, 2, 12, 4, 1},
      {"f16_cosine", 1, 0, 20, 3, 2, 4, 8, 1, 2, 0, 2, 12, 1, 0, 0, 0, 0, 1, 4, 1, 1},
      {"f32_ip_f16store", 0, 0, 30, 8, 1, 5, 10, 2, 1, 0, 2, 20, 3, 6, 2, 0, 0, 3, 8, 2, 0},
      {"f32_raw_bits", 0, 1, 16, 2, 0, 3, 6, 2, 1, 0, 0, 8, 1, 0, 0, 0, 0, 0, 3, 2, 0},
      {"u8_k_equals_rows", 2, 0, 5, 2, 0, 2, 3, 2, 1, 0, 0, 4, 1, 0, 0, 0, 0, 0, 5, 1, 1},
      {"i8_cosine_distance_reorder",
       3,
       0,
       18,
       3,
       2,
       4,
       6,
       1,
       2,
       1,
       1,
       16,
       2,
       4,
       0,
       4,
       2,
       0,
       6,
       3,
       0},
  };
  uint64_t x = 0x2545F4914F6CDD1Dull;
  auto next = [&x] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  for (const bs_seed& e : bs) {
    // FuzzedDataProvider takes integers from the end of the input (most significant byte last
    // in the file) and ConsumeBytes from the front: `tail` holds the integer bytes in the order
    // they are consumed, and the input is front + reversed tail.
    std::vector<uint8_t> front, tail;
    auto one = [&tail](int v) { tail.push_back(static_cast<uint8_t>(v)); };  // 1-byte range
    auto u64 = [&tail](uint64_t v) {
      for (int i = 7; i >= 0; --i) tail.push_back(static_cast<uint8_t>(v >> (8 * i)));
    };
    one(e.type), one(e.raw), one(e.rows - 1), one(e.cols - 1);
    one(e.metric), one(e.degree), one(e.inter), one(e.algo), one(e.iters), one(e.reorder);
    one(e.storage), u64(next());
    one(e.itopk), one(e.width), one(e.max_it), one(e.min_it), one(e.hash_pick), one(e.reset);
    one(e.samplings), u64(next()), one(e.k), one(e.nq - 1), one(e.own_rows);
    const int values = e.rows * e.cols + (e.own_rows ? 0 : e.nq * e.cols);
    for (int i = 0; i < values; ++i) {
      const uint64_t r = next();
      if (e.type >= 2) {
        front.push_back(static_cast<uint8_t>(r));  // u8/i8: ConsumeBytes
      } else if (e.raw) {
        for (int b = (e.type == 0 ? 3 : 1); b >= 0; --b)
          tail.push_back(static_cast<uint8_t>(r >> (8 * b)));
      } else {
        one(static_cast<int>(r & 0xff));  // int8 grid value
      }
    }
    front.insert(front.end(), tail.rbegin(), tail.rend());
    put("build_search", e.name, front);
  }
  std::printf("seeds written to %s\n", g_out.c_str());
  return 0;
}
