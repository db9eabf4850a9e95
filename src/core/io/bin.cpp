// The big-ann-benchmarks formats .fbin (f32), .u8bin (u8), .i8bin (i8) and .ibin (i32): a
// uint32 row count, a uint32 column count, then rows*cols little-endian values.
//
// A ground-truth .ibin may carry rows*cols f32 distances after the ids, so for .ibin exactly
// two file sizes are valid; anything else (a truncated body, trailing bytes) is an error, since
// silently ignoring extra bytes would hide a file written with the wrong header.
#include "core/io/common.hpp"

namespace cagra::io::detail {

host_matrix read_bin(const std::string& path, dtype t, host_matrix* distances) {
  input_file f(path);
  uint32_t header[2] = {0, 0};
  f.read(header, sizeof header, "header (uint32 rows, uint32 cols)");
  const uint32_t rows = header[0];
  const uint32_t cols = header[1];
  CAGRA_EXPECTS(rows > 0 && cols > 0, "%s: header says %u rows x %u cols; both must be positive",
                path.c_str(), rows, cols);
  // rows * cols < 2^64 always; the byte count may not be.
  const uint64_t count = static_cast<uint64_t>(rows) * cols;
  const uint64_t data_bytes = mul_checked(count, dtype_size(t), path, "header's data size");
  const uint64_t body = f.remaining();
  const bool is_ibin = t == dtype::i32;
  if (is_ibin) {
    const uint64_t with_dist = mul_checked(data_bytes, 2, path, "header's data size");
    CAGRA_EXPECTS(body == data_bytes || body == with_dist,
                  "%s: header says %u x %u ids, so %llu bytes (ids) or %llu bytes (ids + f32 "
                  "distances) must follow the 8-byte header; the file has %llu (%s)",
                  path.c_str(), rows, cols, (unsigned long long)data_bytes,
                  (unsigned long long)with_dist, (unsigned long long)body,
                  body < data_bytes  ? "truncated body"
                  : body < with_dist ? "truncated distances or trailing garbage"
                                     : "trailing garbage");
  } else {
    CAGRA_EXPECTS(body >= data_bytes,
                  "%s: truncated body: header says %u x %u %s (%llu bytes "
                  "after the 8-byte header), the file has %llu",
                  path.c_str(), rows, cols, to_string(t), (unsigned long long)data_bytes,
                  (unsigned long long)body);
    CAGRA_EXPECTS(body == data_bytes,
                  "%s: trailing garbage: %llu bytes after the %u x %u %s "
                  "values the header announces",
                  path.c_str(), (unsigned long long)(body - data_bytes), rows, cols, to_string(t));
  }
  host_matrix m = alloc_matrix(path, t, rows, cols, false);
  f.read_bulk(m.data(), data_bytes, "body");
  if (distances != nullptr) {
    *distances = host_matrix();
    if (is_ibin && body != data_bytes) {
      *distances = alloc_matrix(path, dtype::f32, rows, cols, false);
      f.read_bulk(distances->data(), data_bytes, "distances");
    }
  }
  return m;
}

void write_bin(const std::string& path, const dataset_view& m, const dataset_view* distances) {
  check_writable(path, m, "matrix");
  CAGRA_EXPECTS(m.rows <= UINT32_MAX && m.cols <= UINT32_MAX,
                "%s: %lld x %lld does not fit the "
                "uint32 header of the format",
                path.c_str(), (long long)m.rows, (long long)m.cols);
  if (m.type == dtype::u32) check_u32_fits_i32(path, m);
  if (distances != nullptr) {
    check_writable(path, *distances, "distances");
    CAGRA_EXPECTS(
        distances->type == dtype::f32 && distances->rows == m.rows && distances->cols == m.cols,
        "%s: distances must be f32 %lld x %lld like the "
        "ids, got %s %lld x %lld",
        path.c_str(), (long long)m.rows, (long long)m.cols, to_string(distances->type),
        (long long)distances->rows, (long long)distances->cols);
  }
  const uint32_t header[2] = {static_cast<uint32_t>(m.rows), static_cast<uint32_t>(m.cols)};
  output_file out(path);
  out.write(header, sizeof header);
  out.write(m.data, m.row_bytes() * static_cast<size_t>(m.rows));
  if (distances != nullptr)
    out.write(distances->data, distances->row_bytes() * static_cast<size_t>(distances->rows));
  out.commit();
}

}  // namespace cagra::io::detail
