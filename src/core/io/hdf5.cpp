// ann-benchmarks HDF5 files ("train", "test", "neighbors", "distances" datasets) through the
// HDF5 C API, compiled only when CMake found libhdf5 (CAGRA_HAVE_HDF5).
//
// HDF5 converts element types on read, so float64 arrives as float32 and any integer width as
// the type we ask for. The declared size of a dataset comes from the file's metadata, so it is
// bounded by the file's real size before any allocation, as for the other formats. HDF5's own
// error-stack printing is silenced while we run: every failure becomes one cagra::error.
#include "core/io/common.hpp"

#ifdef CAGRA_HAVE_HDF5
#include <hdf5.h>

#include <vector>
#endif

namespace cagra::io::detail {

#ifndef CAGRA_HAVE_HDF5

host_matrix read_hdf5(const std::string& file, const std::string&, bool, bool) {
  CAGRA_FAIL(
      "%s: cannot read HDF5 files: cagra was built without HDF5 support (install "
      "libhdf5-dev and reconfigure with -DCAGRA_WITH_HDF5=ON)",
      file.c_str());
}

#else

namespace {

class handle {
 public:
  handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~handle() {
    if (id_ >= 0) close_(id_);
  }
  handle(const handle&) = delete;
  handle& operator=(const handle&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// HDF5 prints its whole error stack to stderr by default; we report errors ourselves.
class quiet_errors {
 public:
  quiet_errors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~quiet_errors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (!s->empty()) *s += ", ";
  *s += name;
  return 0;
}

// The root group's members, for "no dataset 'x'" messages.
std::string list_members(hid_t file) {
  std::string names;
  hsize_t idx = 0;
  H5Literate(file, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_name, &names);
  return names.empty() ? "nothing" : names;
}

}  // namespace

host_matrix read_hdf5(const std::string& file, const std::string& dataset, bool as_ids,
                      bool optional) {
  uint64_t file_size = 0;
  {
    input_file check(file);  // the same missing / directory / empty messages as other formats
    file_size = check.size();
  }
  const std::string where = file + ":" + dataset;
  quiet_errors quiet;
  CAGRA_EXPECTS(H5Fis_hdf5(file.c_str()) > 0, "%s: not an HDF5 file (bad signature)", file.c_str());
  handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  CAGRA_EXPECTS(f.ok(), "%s: cannot open HDF5 file (corrupt or truncated?)", file.c_str());
  if (H5Lexists(f.get(), dataset.c_str(), H5P_DEFAULT) <= 0) {
    if (optional) return host_matrix();
    CAGRA_FAIL("%s: no dataset '%s' in the file (it has: %s)", file.c_str(), dataset.c_str(),
               list_members(f.get()).c_str());
  }
  handle d(H5Dopen2(f.get(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
  CAGRA_EXPECTS(d.ok(), "%s: '%s' is not a dataset", file.c_str(), dataset.c_str());
  handle space(H5Dget_space(d.get()), H5Sclose);
  const int rank = space.ok() ? H5Sget_simple_extent_ndims(space.get()) : -1;
  CAGRA_EXPECTS(rank == 1 || rank == 2,
                "%s: dataset has %d dimensions; expected a 2-D array "
                "(or 1-D for a single row)",
                where.c_str(), rank);
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  const uint64_t rows = rank == 2 ? dims[0] : 1;
  const uint64_t cols = rank == 2 ? dims[1] : dims[0];
  CAGRA_EXPECTS(rows > 0 && cols > 0, "%s: dataset is %llu x %llu; zero rows or columns",
                where.c_str(), (unsigned long long)rows, (unsigned long long)cols);

  handle type(H5Dget_type(d.get()), H5Tclose);
  const H5T_class_t cls = type.ok() ? H5Tget_class(type.get()) : H5T_NO_CLASS;
  const size_t size = type.ok() ? H5Tget_size(type.get()) : 0;
  const bool is_signed = cls == H5T_INTEGER && H5Tget_sign(type.get()) == H5T_SGN_2;
  dtype out = dtype::f32;
  hid_t mem = H5T_NATIVE_FLOAT;
  if (as_ids) {
    CAGRA_EXPECTS(cls == H5T_INTEGER && (size == 4 || size == 8),
                  "%s: neighbor ids must be "
                  "32- or 64-bit integers",
                  where.c_str());
    out = dtype::u32;
    mem = is_signed ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64;
  } else if (cls == H5T_FLOAT && (size == 4 || size == 8)) {
    out = dtype::f32;
    mem = H5T_NATIVE_FLOAT;
  } else if (cls == H5T_INTEGER && size == 1) {
    out = is_signed ? dtype::i8 : dtype::u8;
    mem = is_signed ? H5T_NATIVE_INT8 : H5T_NATIVE_UINT8;
  } else if (cls == H5T_INTEGER && size == 4) {
    out = is_signed ? dtype::i32 : dtype::u32;
    mem = is_signed ? H5T_NATIVE_INT32 : H5T_NATIVE_UINT32;
  } else {
    CAGRA_FAIL(
        "%s: unsupported element type (HDF5 class %d, %zu bytes); supported: float32, "
        "float64, uint8, int8, int32, uint32 (and 64-bit integers for neighbor ids)",
        where.c_str(), static_cast<int>(cls), size);
  }

  const uint64_t count = mul_checked(rows, cols, where, "dataset element count");
  const uint64_t file_bytes = mul_checked(count, size, where, "dataset size");
  // Compressed chunks may expand (deflate: at most ~1032:1); beyond that the metadata lies.
  const uint64_t limit = file_size > (UINT64_MAX >> 11) ? UINT64_MAX : file_size * 1032 + (1 << 20);
  CAGRA_EXPECTS(file_bytes <= limit,
                "%s: dataset claims %llu x %llu values of %zu bytes (%llu "
                "bytes), more than a %llu-byte file can hold",
                where.c_str(), (unsigned long long)rows, (unsigned long long)cols, size,
                (unsigned long long)file_bytes, (unsigned long long)file_size);

  host_matrix m = alloc_matrix(file, out, static_cast<int64_t>(rows), static_cast<int64_t>(cols));
  if (!as_ids) {
    CAGRA_EXPECTS(H5Dread(d.get(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, m.data()) >= 0,
                  "%s: cannot read the dataset (corrupt or truncated file)", where.c_str());
    return m;
  }
  std::vector<int64_t> wide;
  try {
    wide.resize(static_cast<size_t>(count));
  } catch (const std::bad_alloc&) {
    CAGRA_FAIL("%s: out of memory reading %llu ids", where.c_str(), (unsigned long long)count);
  }
  CAGRA_EXPECTS(H5Dread(d.get(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, wide.data()) >= 0,
                "%s: cannot read the dataset (corrupt or truncated file)", where.c_str());
  auto* ids = static_cast<uint32_t*>(m.data());
  for (uint64_t i = 0; i < count; ++i) {
    // Unsigned 64-bit values were read into the same bits; compare them as unsigned.
    const bool ok = is_signed ? (wide[i] >= 0 && wide[i] <= int64_t{UINT32_MAX})
                              : static_cast<uint64_t>(wide[i]) <= UINT32_MAX;
    CAGRA_EXPECTS(ok, "%s: neighbor id at row %llu, column %llu is %s (ids must be in [0, 2^32))",
                  where.c_str(), (unsigned long long)(i / cols), (unsigned long long)(i % cols),
                  is_signed && wide[i] < 0 ? "negative" : "too large");
    ids[i] = static_cast<uint32_t>(wide[i]);
  }
  return m;
}

#endif  // CAGRA_HAVE_HDF5

}  // namespace cagra::io::detail
