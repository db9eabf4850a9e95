// The TEXMEX formats .fvecs (f32), .ivecs (i32) and .bvecs (u8): every row is an int32
// little-endian dimension followed by that many values.
//
// The dimension is repeated per row, so a file can be internally inconsistent. The reader takes
// row 0's dimension, requires the file size to be a whole number of such rows (so the
// allocation is bounded by the real file), and checks every row's own dimension while copying.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/io/common.hpp"

namespace cagra::io::detail {

namespace {

constexpr uint64_t kChunkBytes = uint64_t{4} << 20;

// Reads `rows` rows of `dim` values from the current offset, checking each row's dimension;
// `dst` may be null to only check (used to find the first bad row of a mis-sized file).
void scan_rows(input_file& f, int32_t dim, size_t elem, uint64_t rows, uint8_t* dst) {
  const uint64_t value_bytes = static_cast<uint64_t>(dim) * elem;
  const uint64_t row_bytes = 4 + value_bytes;
  const uint64_t chunk_rows = std::max<uint64_t>(1, kChunkBytes / row_bytes);
  std::vector<uint8_t> buf(static_cast<size_t>(std::min(chunk_rows, rows) * row_bytes));
  for (uint64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
    const uint64_t n = std::min(chunk_rows, rows - r0);
    f.read(buf.data(), n * row_bytes, "row data");
    for (uint64_t r = 0; r < n; ++r) {
      const uint8_t* row = buf.data() + r * row_bytes;
      int32_t d = 0;
      std::memcpy(&d, row, 4);
      CAGRA_EXPECTS(d == dim, "%s: row %llu has dim %d, expected %d (the dim of row 0)",
                    f.path().c_str(), (unsigned long long)(r0 + r), d, dim);
      if (dst != nullptr) std::memcpy(dst + (r0 + r) * value_bytes, row + 4, value_bytes);
    }
  }
}

}  // namespace

host_matrix read_vecs(const std::string& path, dtype t) {
  input_file f(path);
  const size_t elem = dtype_size(t);
  int32_t dim = 0;
  f.read(&dim, 4, "header (the int32 dim of row 0)");
  CAGRA_EXPECTS(dim > 0, "%s: row 0 has dim %d, expected a positive dimension", path.c_str(), dim);
  // dim < 2^31 and elem <= 4, so this cannot overflow.
  const uint64_t row_bytes = 4 + static_cast<uint64_t>(dim) * elem;
  CAGRA_EXPECTS(row_bytes <= f.size(),
                "%s: truncated row 0: dim %d needs %llu bytes per row, the "
                "file has %llu bytes",
                path.c_str(), dim, (unsigned long long)row_bytes, (unsigned long long)f.size());
  const uint64_t rows = f.size() / row_bytes;
  const uint64_t tail = f.size() % row_bytes;
  f.seek(0);
  if (tail != 0) {
    // Prefer naming the first row with a different dim over a bare size complaint.
    scan_rows(f, dim, elem, rows, nullptr);
    CAGRA_FAIL(
        "%s: file size %llu is not a whole number of rows (%llu bytes each for dim %d): "
        "%llu complete rows, then %llu extra bytes (truncated last row or trailing "
        "garbage)",
        path.c_str(), (unsigned long long)f.size(), (unsigned long long)row_bytes, dim,
        (unsigned long long)rows, (unsigned long long)tail);
  }
  host_matrix m = alloc_matrix(path, t, static_cast<int64_t>(rows), dim);
  scan_rows(f, dim, elem, rows, static_cast<uint8_t*>(m.data()));
  return m;
}

void write_vecs(const std::string& path, dtype t, const dataset_view& m) {
  check_writable(path, m, "matrix");
  CAGRA_EXPECTS(m.cols <= INT32_MAX,
                "%s: %lld columns do not fit the int32 dim of the vecs "
                "format",
                path.c_str(), (long long)m.cols);
  CAGRA_EXPECTS(dtype_size(m.type) == dtype_size(t), "%s: element size mismatch", path.c_str());
  if (m.type == dtype::u32) check_u32_fits_i32(path, m);
  const int32_t dim = static_cast<int32_t>(m.cols);
  const size_t row_bytes = m.row_bytes();
  const auto* src = static_cast<const uint8_t*>(m.data);
  output_file out(path);
  for (int64_t r = 0; r < m.rows; ++r) {
    out.write(&dim, 4);
    out.write(src + static_cast<size_t>(r) * row_bytes, row_bytes);
  }
  out.commit();
}

}  // namespace cagra::io::detail
