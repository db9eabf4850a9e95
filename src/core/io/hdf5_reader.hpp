// What the pieces of the HDF5 reader share (only with CAGRA_HAVE_HDF5): hdf5.cpp runs the read
// (in the reader process, see isolate.hpp), hdf5_dataset.cpp opens, checks and reads one
// dataset, hdf5_types.cpp picks the element types, hdf5_support.cpp holds the small libhdf5
// helpers (handles, error reporting, names quoted from the file). Split so that the checks on a
// file are apart from the process plumbing that contains libhdf5's failures.
#pragma once

#ifdef CAGRA_HAVE_HDF5
#include <hdf5.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <cagra/error.hpp>
#include <cagra/types.hpp>

#include "core/io/isolate.hpp"

namespace cagra::io::detail::h5 {

// What the reader hands back besides the data (isolate_context::meta).
constexpr int kMetaFound = 0;  // 0: the optional dataset is absent
constexpr int kMetaType = 1;   // the dtype of the result
constexpr int kMetaRows = 2;
constexpr int kMetaCols = 3;
constexpr int kMetaFromFloat64 = 4;  // 1: a 64-bit float dataset, read as f32

/** One dataset to read, and the file's size (its checks bound the metadata by it). */
struct request {
  std::string file;
  std::string dataset;
  bool as_ids = false;
  bool optional = false;
  uint64_t file_size = 0;
};

/** Opens, validates and reads one dataset; runs in the reader process (or in-process). Leaves
 *  kMetaFound 0 and begins no result when `q.optional` and the dataset is absent. */
void read_dataset(isolate_context& ctx, const request& q);

// ---- libhdf5 helpers (hdf5_support.cpp) --------------------------------------------------------

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

/** Text that comes from the file (link, filter and external file names) goes into messages:
 *  printable ASCII is kept, other bytes become \xNN, and long text is cut. */
std::string shown(const char* s, size_t max_len = 120);

/** The root group's members, for "no dataset 'x'" messages. */
std::string list_members(hid_t file);

/** Refuses to traverse external links (a link in this file that names another file); an
 *  H5Pset_elink_cb callback. */
herr_t refuse_external_link(const char*, const char*, const char*, const char*, unsigned*, hid_t,
                            void*);

/** Throws `message`, or, when libhdf5's error stack shows a failed allocation, says that the
 *  file made libhdf5 exceed the memory a file of its size can need. */
[[noreturn]] void fail_hdf5(isolate_context& ctx, const char* doing, const std::string& file,
                            uint64_t file_size, const char* src, int line,
                            const std::string& message);

// CAGRA_EXPECTS for the result of a libhdf5 call (see fail_hdf5). Needs `ctx`, `doing`, `file`
// and `file_size` in scope.
#define CAGRA_H5_EXPECTS(cond, ...)                              \
  do {                                                           \
    if (!(cond))                                                 \
      fail_hdf5(ctx, doing, file, file_size, __FILE__, __LINE__, \
                ::cagra::detail::format(__VA_ARGS__));           \
  } while (0)

// ---- element types (hdf5_types.cpp) ------------------------------------------------------------

struct element_type {
  hid_t mem = -1;          // what we ask HDF5 to convert to
  dtype out = dtype::f32;  // the matrix's type
  bool wide_ids = false;   // ids read as 64-bit integers, then range-checked to u32
  bool ids_signed = false;
};

/** The element types we read. Only HDF5's standard layouts (either byte order) are accepted: an
 *  odd float (custom exponent and mantissa) or an integer with padding bits is refused, not
 *  handed to libhdf5's generic conversion code. */
element_type pick_type(hid_t type, bool as_ids, const std::string& where);

struct conv_state {
  bool overflow = false;
};

/** float64 -> float32: a finite value beyond float32's range is an error (as in the .npy
 *  reader), not a silent infinity. An H5Pset_type_conv_cb callback; `data` is a conv_state. */
H5T_conv_ret_t refuse_overflow(H5T_conv_except_t except, hid_t, hid_t, void*, void*, void* data);

}  // namespace cagra::io::detail::h5

#endif  // CAGRA_HAVE_HDF5
