// ann-benchmarks HDF5 files ("train", "test", "neighbors", "distances" datasets) through the
// HDF5 C API, compiled only when CMake found libhdf5 (CAGRA_HAVE_HDF5). This file runs one read:
// where it runs (hdf5_options), the matrix it fills, and libhdf5's set-up in the reader process.
// The checks and the read itself are in hdf5_dataset.cpp.
//
// libhdf5 (1.10.8, Debian 12) is not safe on corrupt files: fuzzed files of a few KB make it
// dereference NULL while it looks a name up or reads, or allocate gigabytes while it parses the
// metadata. No check of ours can run before that parsing, so the whole job (open, validate,
// read) runs in a child process (isolate.hpp): a crash, a hang or a runaway allocation there
// becomes a cagra::error here. Once the dataset is validated this process allocates the matrix
// from its shape, and the child passes the data through a small shared ring, a few MiB at a
// time, copied once into the matrix. hdf5_options::in_process reads in this process instead
// (tests, debugging; the data then goes straight into the matrix); hdf5_options::timeout_seconds
// is how long the child may go without progress (default 60 s). Both are internal parameters
// (common.hpp), not environment variables: the public read functions use the defaults. HDF5's
// own error-stack printing is silenced: every failure becomes one cagra::error.
#include "core/io/common.hpp"

#ifdef CAGRA_HAVE_HDF5
#include <mutex>

#include "core/io/hdf5_reader.hpp"
#include "core/io/isolate.hpp"
#endif

namespace cagra::io::detail {

#ifndef CAGRA_HAVE_HDF5

host_matrix read_hdf5(const std::string& file, const std::string&, bool, bool, const hdf5_options&,
                      std::string*) {
  CAGRA_FAIL(
      "%s: cannot read HDF5 files: cagra was built without HDF5 support (install "
      "libhdf5-dev and reconfigure with -DCAGRA_WITH_HDF5=ON)",
      file.c_str());
}

#else

namespace {

// Set in the reader process before the first HDF5 call: no error printing and no filter
// plugins (a plugin is code loaded from HDF5_PLUGIN_PATH; only the built-in filters are read).
void setup_child_hdf5() {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  H5PLset_loading_state(0);
}

// In-process reads share the library with the caller's other threads.
std::mutex g_in_process;

isolate_limits limits_from(const hdf5_options& options) {
  CAGRA_EXPECTS(options.timeout_seconds > 0 && options.timeout_seconds <= 1e6,
                "HDF5 reader timeout of %g s is not a number of seconds in (0, 1e6]",
                options.timeout_seconds);
  isolate_limits lim;
#ifdef __linux__
  lim.in_process = options.in_process;
#else
  lim.in_process = true;  // no fork-based reader on this platform (isolate.hpp)
#endif
  lim.stall_seconds = options.timeout_seconds;
  return lim;
}

}  // namespace

host_matrix read_hdf5(const std::string& file, const std::string& dataset, bool as_ids,
                      bool optional, const hdf5_options& options, std::string* converted_from) {
  using namespace h5;
  request q;
  {
    input_file check(file);  // the same missing / directory / empty messages as other formats
    q.file_size = check.size();
  }
  q.file = file;
  q.dataset = dataset;
  q.as_ids = as_ids;
  q.optional = optional;
  const isolate_limits lim = limits_from(options);
  host_matrix m;
  // In the caller's process, once the reader has validated the dataset: the matrix it fills.
  const auto sink = [&](const uint64_t* meta, uint64_t bytes) -> void* {
    const uint64_t type = meta[kMetaType];
    const uint64_t rows = meta[kMetaRows];
    const uint64_t cols = meta[kMetaCols];
    const bool known =
        type == static_cast<uint64_t>(dtype::f32) || type == static_cast<uint64_t>(dtype::u8) ||
        type == static_cast<uint64_t>(dtype::i8) || type == static_cast<uint64_t>(dtype::i32) ||
        type == static_cast<uint64_t>(dtype::u32);
    CAGRA_EXPECTS(
        known && rows > 0 && cols > 0 && rows < (uint64_t{1} << 62) && cols < (uint64_t{1} << 62),
        "%s: the HDF5 reader returned a bad shape", file.c_str());
    m = alloc_matrix(file, static_cast<dtype>(type), static_cast<int64_t>(rows),
                     static_cast<int64_t>(cols));
    CAGRA_EXPECTS(m.size_bytes() == bytes,
                  "%s: the HDF5 reader returned %llu bytes for a %llu x %llu %s matrix",
                  file.c_str(), (unsigned long long)bytes, (unsigned long long)rows,
                  (unsigned long long)cols, to_string(m.type()));
    return m.data();
  };
  const isolate_outcome out = run_isolated(
      file, "libhdf5", lim,
      [&](isolate_context& ctx) {
        if (lim.in_process) {
          std::lock_guard<std::mutex> lock(g_in_process);
          quiet_errors quiet;
          read_dataset(ctx, q);
        } else {
          setup_child_hdf5();
          read_dataset(ctx, q);
        }
      },
      sink);
  if (!out.has_result) return host_matrix();  // an optional dataset that is absent
  if (out.meta[kMetaFromFloat64] != 0 && converted_from != nullptr) *converted_from = "float64";
  return m;
}

#endif  // CAGRA_HAVE_HDF5

}  // namespace cagra::io::detail
