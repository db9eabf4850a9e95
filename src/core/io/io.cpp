// The public entry points of include/cagra/io.hpp: pick the format from the file name and hand
// over to the format family's reader or writer (vecs.cpp, bin.cpp, npy.cpp, idx.cpp, hdf5.cpp).
//
// Writers check that the matrix's element type fits the format here, before any file is
// created, so a mismatch never leaves a temporary file behind or touches an existing target.
#include "core/io/common.hpp"

namespace cagra::io {

namespace {

using detail::format;

// The formats that can hold `t`, for "cannot write" messages.
const char* formats_for(dtype t) {
  switch (t) {
    case dtype::f32: return ".fbin, .fvecs or .npy";
    case dtype::f16: return ".npy";
    case dtype::u8: return ".u8bin, .bvecs or .npy";
    case dtype::i8: return ".i8bin or .npy";
    case dtype::i32: return ".ibin, .ivecs or .npy";
    case dtype::u32: return ".npy, or .ibin / .ivecs when every id < 2^31";
  }
  return ".npy";
}

bool accepts(format f, dtype t) {
  switch (f) {
    case format::fbin:
    case format::fvecs: return t == dtype::f32;
    case format::u8bin:
    case format::bvecs: return t == dtype::u8;
    case format::i8bin: return t == dtype::i8;
    case format::ibin:
    case format::ivecs: return t == dtype::i32 || t == dtype::u32;
    case format::npy: return true;
    case format::idx:
    case format::hdf5: return false;
  }
  return false;
}

const char* stored_type(format f) {
  switch (f) {
    case format::fbin:
    case format::fvecs: return "f32";
    case format::u8bin:
    case format::bvecs: return "u8";
    case format::i8bin: return "i8";
    case format::ibin:
    case format::ivecs: return "i32 (or u32 ids < 2^31)";
    default: return "?";
  }
}

}  // namespace

namespace detail {

host_matrix read_matrix(const std::string& path, const hdf5_options& hdf5,
                        std::string* converted_from) {
  const detail::path_spec s = detail::parse_path(path);
  switch (s.fmt) {
    case format::fvecs: return detail::read_vecs(s.file, dtype::f32);
    case format::ivecs: return detail::read_vecs(s.file, dtype::i32);
    case format::bvecs: return detail::read_vecs(s.file, dtype::u8);
    case format::fbin: return detail::read_bin(s.file, dtype::f32, nullptr);
    case format::u8bin: return detail::read_bin(s.file, dtype::u8, nullptr);
    case format::i8bin: return detail::read_bin(s.file, dtype::i8, nullptr);
    case format::ibin: return detail::read_bin(s.file, dtype::i32, nullptr);
    case format::npy: return detail::read_npy(s.file, false, converted_from);
    case format::idx: return detail::read_idx(s.file);
    case format::hdf5:
      return detail::read_hdf5(s.file, s.dataset.empty() ? "train" : s.dataset, false, false, hdf5,
                               converted_from);
  }
  CAGRA_FAIL("%s: unknown format", path.c_str());
}

neighbors_file read_neighbors(const std::string& path, const hdf5_options& hdf5) {
  const detail::path_spec s = detail::parse_path(path);
  neighbors_file out;
  switch (s.fmt) {
    case format::ibin: {
      host_matrix ids = detail::read_bin(s.file, dtype::i32, &out.distances);
      out.ids = detail::ids_from_i32(s.file, ids);
      return out;
    }
    case format::ivecs:
      out.ids = detail::ids_from_i32(s.file, detail::read_vecs(s.file, dtype::i32));
      return out;
    case format::npy: out.ids = detail::read_npy(s.file, true); return out;
    case format::hdf5:
      if (!s.dataset.empty()) {  // an explicit dataset: ids only
        out.ids = detail::read_hdf5(s.file, s.dataset, true, false, hdf5);
        return out;
      }
      out.ids = detail::read_hdf5(s.file, "neighbors", true, false, hdf5);
      out.distances = detail::read_hdf5(s.file, "distances", false, true, hdf5);
      CAGRA_EXPECTS(out.distances.empty() || (out.distances.type() == dtype::f32 &&
                                              out.distances.rows() == out.ids.rows() &&
                                              out.distances.cols() == out.ids.cols()),
                    "%s: 'distances' is %s %lld x %lld but 'neighbors' is %lld x %lld",
                    s.file.c_str(), to_string(out.distances.type()),
                    (long long)out.distances.rows(), (long long)out.distances.cols(),
                    (long long)out.ids.rows(), (long long)out.ids.cols());
      return out;
    default:
      CAGRA_FAIL(
          "%s: %s files do not hold neighbor ids; read_neighbors reads .ibin, .ivecs, "
          ".npy and .hdf5/.h5",
          path.c_str(), detail::format_name(s.fmt));
  }
}

}  // namespace detail

host_matrix read_matrix(const std::string& path) {
  return detail::read_matrix(path, detail::hdf5_options{});
}

host_matrix read_matrix(const std::string& path, read_notes& notes) {
  notes = read_notes{};
  return detail::read_matrix(path, detail::hdf5_options{}, &notes.converted_from);
}

neighbors_file read_neighbors(const std::string& path) {
  return detail::read_neighbors(path, detail::hdf5_options{});
}

void write_matrix(const std::string& path, dataset_view m) {
  const detail::path_spec s = detail::parse_path(path);
  CAGRA_EXPECTS(s.fmt != format::idx && s.fmt != format::hdf5,
                "%s: writing %s files is not "
                "supported; write_matrix writes .fbin, .u8bin, .i8bin, .ibin, .fvecs, .ivecs, "
                ".bvecs and .npy",
                path.c_str(), detail::format_name(s.fmt));
  CAGRA_EXPECTS(accepts(s.fmt, m.type),
                "%s: %s stores %s, cannot write a %s matrix (a %s matrix "
                "fits %s)",
                path.c_str(), detail::format_name(s.fmt), stored_type(s.fmt), to_string(m.type),
                to_string(m.type), formats_for(m.type));
  switch (s.fmt) {
    case format::fvecs: return detail::write_vecs(s.file, dtype::f32, m);
    case format::ivecs: return detail::write_vecs(s.file, dtype::i32, m);
    case format::bvecs: return detail::write_vecs(s.file, dtype::u8, m);
    case format::npy: return detail::write_npy(s.file, m);
    default: return detail::write_bin(s.file, m, nullptr);
  }
}

void write_neighbors(const std::string& path, matrix_view<const uint32_t> ids,
                     matrix_view<const float> distances) {
  const detail::path_spec s = detail::parse_path(path);
  const bool with_distances = distances.data != nullptr || distances.rows != 0;
  const dataset_view id_view = ids;
  const dataset_view dist_view = distances;
  switch (s.fmt) {
    case format::ibin:
      return detail::write_bin(s.file, id_view, with_distances ? &dist_view : nullptr);
    case format::ivecs:
      CAGRA_EXPECTS(!with_distances,
                    "%s: .ivecs cannot hold distances; write .ibin to keep "
                    "them",
                    path.c_str());
      return detail::write_vecs(s.file, dtype::i32, id_view);
    default:
      CAGRA_FAIL(
          "%s: write_neighbors writes .ibin (ids, then optional f32 distances) or .ivecs "
          "(ids only), not %s",
          path.c_str(), detail::format_name(s.fmt));
  }
}

}  // namespace cagra::io
