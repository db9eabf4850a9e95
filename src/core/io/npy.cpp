// NumPy .npy files (format versions 1.0, 2.0 and 3.0): a magic string, a version, a header
// length, a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)}, then the
// raw C-order data.
//
// The dict is parsed by a small bounds-checked recursive parser rather than by searching for
// substrings, so a garbled header is reported as such instead of being half-understood. Only
// little-endian numeric dtypes that map onto cagra::dtype are read; f8 is narrowed to f32 and
// 64-bit integers are accepted only as neighbor ids (narrowed to u32 with range checks).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/io/common.hpp"

namespace cagra::io::detail {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr uint64_t kMaxHeader = 1 << 16;  // numpy itself writes a few hundred bytes

struct npy_header {
  std::string descr;
  bool fortran_order = false;
  std::vector<uint64_t> shape;
  bool has_descr = false, has_order = false, has_shape = false;
};

// Parser of the dict literal numpy writes. Values: 'str', True/False, tuples of ints.
class dict_parser {
 public:
  dict_parser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  npy_header parse() {
    npy_header h;
    expect('{');
    while (!eat('}')) {
      std::string key = string_value();
      expect(':');
      if (key == "descr") {
        skip_ws();
        // A list here is a structured dtype (record array).
        CAGRA_EXPECTS(peek() != '[',
                      "%s: unsupported dtype: structured arrays are not "
                      "supported",
                      path_.c_str());
        h.descr = string_value();
        h.has_descr = true;
      } else if (key == "fortran_order") {
        h.fortran_order = bool_value();
        h.has_order = true;
      } else if (key == "shape") {
        h.shape = tuple_value();
        h.has_shape = true;
      } else {
        CAGRA_FAIL("%s: bad .npy header: unexpected key '%s'", path_.c_str(),
                   quote_bytes(key, 40).c_str());
      }
      if (!eat(',')) {
        expect('}');
        break;
      }
    }
    CAGRA_EXPECTS(h.has_descr && h.has_order && h.has_shape,
                  "%s: bad .npy header: it must "
                  "define 'descr', 'fortran_order' and 'shape'",
                  path_.c_str());
    return h;
  }

 private:
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool eat(char c) {
    skip_ws();
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  // The header text around offset `at`, escaped and short (quote_bytes): a garbled header may
  // be 64 KB of anything.
  std::string near(size_t at) const {
    const size_t from = at > 30 ? at - 30 : 0;
    return (from > 0 ? "..." : "") + quote_bytes(s_.substr(from, 200), 80);
  }
  void expect(char c) {
    CAGRA_EXPECTS(eat(c), "%s: bad .npy header: expected '%c' at offset %zu, near \"%s\"",
                  path_.c_str(), c, i_, near(i_).c_str());
  }
  std::string string_value() {
    skip_ws();
    char q = peek();
    CAGRA_EXPECTS(q == '\'' || q == '"',
                  "%s: bad .npy header: expected a quoted string at offset %zu, near \"%s\"",
                  path_.c_str(), i_, near(i_).c_str());
    size_t end = s_.find(q, i_ + 1);
    CAGRA_EXPECTS(end != std::string::npos, "%s: bad .npy header: unterminated string",
                  path_.c_str());
    std::string v = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return v;
  }
  bool bool_value() {
    skip_ws();
    if (s_.compare(i_, 4, "True") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "False") == 0) {
      i_ += 5;
      return false;
    }
    CAGRA_FAIL("%s: bad .npy header: fortran_order must be True or False", path_.c_str());
  }
  std::vector<uint64_t> tuple_value() {
    std::vector<uint64_t> v;
    expect('(');
    while (!eat(')')) {
      skip_ws();
      CAGRA_EXPECTS(std::isdigit(static_cast<unsigned char>(peek())),
                    "%s: bad .npy header: "
                    "shape must be a tuple of non-negative integers",
                    path_.c_str());
      uint64_t x = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        uint64_t d = static_cast<uint64_t>(s_[i_++] - '0');
        CAGRA_EXPECTS(!__builtin_mul_overflow(x, 10, &x) && !__builtin_add_overflow(x, d, &x),
                      "%s: bad .npy header: shape value overflows", path_.c_str());
      }
      v.push_back(x);
      CAGRA_EXPECTS(v.size() <= 32, "%s: bad .npy header: too many dimensions", path_.c_str());
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return v;
  }

  const std::string& s_;
  const std::string& path_;
  size_t i_ = 0;
};

// How a descr maps onto what we return. `file_size` is the element size in the file.
struct npy_type {
  char kind = 0;  // 'f', 'i' or 'u'
  size_t file_size = 0;
};

npy_type parse_descr(const std::string& path, const std::string& descr) {
  std::string d = descr;
  char order = '|';
  if (!d.empty() && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) {
    order = d[0];
    d = d.substr(1);
  }
  npy_type t;
  if (d.size() == 2 && (d[0] == 'f' || d[0] == 'i' || d[0] == 'u') && d[1] >= '1' && d[1] <= '8')
    t = {d[0], static_cast<size_t>(d[1] - '0')};
  if (d == "b1") t = {'u', 1};  // numpy bool (a filter mask): bytes 0 / 1, read as u8
  const bool size_ok =
      t.file_size == 4 || t.file_size == 8 || t.file_size == (t.kind == 'f' ? 2u : 1u);
  const bool known = t.kind != 0 && size_ok;
  CAGRA_EXPECTS(known,
                "%s: unsupported dtype '%s' (supported: <f4, <f2, <f8, |u1, |i1, |b1 (as u1), "
                "<i4, <u4; <i8, <u8 for neighbor ids)",
                path.c_str(), quote_bytes(descr, 40).c_str());
  CAGRA_EXPECTS(order != '>' || t.file_size == 1,
                "%s: big-endian dtype '%s' is not supported; "
                "save it little-endian (arr.astype('<%s'))",
                path.c_str(), quote_bytes(descr, 40).c_str(), quote_bytes(d, 40).c_str());
  return t;
}

dtype matrix_dtype(const std::string& path, const std::string& descr, npy_type t) {
  if (t.kind == 'f') return t.file_size == 2 ? dtype::f16 : dtype::f32;
  if (t.file_size == 1) return t.kind == 'u' ? dtype::u8 : dtype::i8;
  CAGRA_EXPECTS(t.file_size == 4,
                "%s: dtype '%s' (64-bit integers) is only read as neighbor ids "
                "(read_neighbors)",
                path.c_str(), quote_bytes(descr, 40).c_str());
  return t.kind == 'u' ? dtype::u32 : dtype::i32;
}

// Converts a chunk of file values (`t`) into the matrix type, with range checks.
void convert_chunk(const std::string& path, npy_type t, bool as_ids, const uint8_t* in,
                   uint64_t first, uint64_t n, uint64_t cols, void* out) {
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t* p = in + i * t.file_size;
    const uint64_t at = first + i;
    if (!as_ids) {  // f8 -> f32 (the only conversion outside ids)
      double v;
      std::memcpy(&v, p, 8);
      auto f = static_cast<float>(v);
      CAGRA_EXPECTS(std::isfinite(f) || !std::isfinite(v),
                    "%s: value %g at row %llu, column "
                    "%llu does not fit in float32",
                    path.c_str(), v, (unsigned long long)(at / cols),
                    (unsigned long long)(at % cols));
      static_cast<float*>(out)[at] = f;
      continue;
    }
    int64_t v = 0;
    bool ok = true;
    if (t.file_size == 4 && t.kind == 'i') {
      int32_t x;
      std::memcpy(&x, p, 4);
      v = x;
    } else if (t.file_size == 4) {
      uint32_t x;
      std::memcpy(&x, p, 4);
      v = x;
    } else if (t.kind == 'i') {
      std::memcpy(&v, p, 8);
    } else {
      uint64_t x;
      std::memcpy(&x, p, 8);
      ok = x <= UINT32_MAX;
      v = ok ? static_cast<int64_t>(x) : 0;
    }
    if (v == -1) v = int64_t{UINT32_MAX};  // -1: an empty result slot (kInvalidId), as in .ibin
    ok = ok && v >= 0 && v <= int64_t{UINT32_MAX};
    CAGRA_EXPECTS(ok, "%s: neighbor id at row %llu, column %llu is %s (ids must be in [0, 2^32))",
                  path.c_str(), (unsigned long long)(at / cols), (unsigned long long)(at % cols),
                  v < 0 ? "negative" : "too large");
    static_cast<uint32_t*>(out)[at] = static_cast<uint32_t>(v);
  }
}

}  // namespace

host_matrix read_npy(const std::string& path, bool as_ids, std::string* converted_from) {
  input_file f(path);
  char magic[6];
  f.read(magic, 6, "header (.npy magic)");
  CAGRA_EXPECTS(std::memcmp(magic, kMagic, 6) == 0,
                "%s: not a .npy file (bad magic; expected "
                "\\x93NUMPY)",
                path.c_str());
  uint8_t version[2];
  f.read(version, 2, "header (version)");
  uint64_t header_len = 0;
  if (version[0] == 1) {
    uint16_t n;
    f.read(&n, 2, "header (header length)");
    header_len = n;
  } else if (version[0] == 2 || version[0] == 3) {
    uint32_t n;
    f.read(&n, 4, "header (header length)");
    header_len = n;
  } else {
    CAGRA_FAIL("%s: unsupported .npy format version %u.%u (supported: 1.0, 2.0, 3.0)", path.c_str(),
               version[0], version[1]);
  }
  CAGRA_EXPECTS(header_len <= f.remaining(),
                "%s: truncated header: it declares %llu bytes, the "
                "file has %llu left",
                path.c_str(), (unsigned long long)header_len, (unsigned long long)f.remaining());
  CAGRA_EXPECTS(header_len <= kMaxHeader,
                "%s: bad .npy header: %llu bytes long (at most %llu "
                "accepted)",
                path.c_str(), (unsigned long long)header_len, (unsigned long long)kMaxHeader);
  std::string text(static_cast<size_t>(header_len), '\0');
  f.read(text.data(), header_len, "header");
  npy_header h = dict_parser(text, path).parse();

  const npy_type t = parse_descr(path, h.descr);
  CAGRA_EXPECTS(!h.fortran_order,
                "%s: fortran_order is True (column-major); save the array in C "
                "order (np.ascontiguousarray)",
                path.c_str());
  CAGRA_EXPECTS(h.shape.size() == 1 || h.shape.size() == 2,
                "%s: shape has %zu dimensions; "
                "expected a 2-D array (or 1-D for a single row)",
                path.c_str(), h.shape.size());
  const uint64_t rows = h.shape.size() == 2 ? h.shape[0] : 1;
  const uint64_t cols = h.shape.back();
  CAGRA_EXPECTS(rows > 0 && cols > 0, "%s: shape is %llu x %llu; zero rows or columns",
                path.c_str(), (unsigned long long)rows, (unsigned long long)cols);
  const uint64_t count = mul_checked(rows, cols, path, "shape's element count");
  const uint64_t data_bytes = mul_checked(count, t.file_size, path, "shape's data size");
  CAGRA_EXPECTS(f.remaining() >= data_bytes,
                "%s: truncated body: shape %llu x %llu of '%s' needs "
                "%llu bytes of data, the file has %llu",
                path.c_str(), (unsigned long long)rows, (unsigned long long)cols,
                quote_bytes(h.descr, 40).c_str(), (unsigned long long)data_bytes,
                (unsigned long long)f.remaining());
  CAGRA_EXPECTS(f.remaining() == data_bytes, "%s: trailing garbage: %llu bytes after the data",
                path.c_str(), (unsigned long long)(f.remaining() - data_bytes));

  dtype out_type;
  if (as_ids) {
    CAGRA_EXPECTS(t.kind != 'f' && t.file_size >= 4,
                  "%s: neighbor ids must be integers (<i4, "
                  "<u4, <i8, <u8); the file holds '%s'",
                  path.c_str(), quote_bytes(h.descr, 40).c_str());
    out_type = dtype::u32;
  } else {
    out_type = matrix_dtype(path, h.descr, t);
  }
  const bool as_is = dtype_size(out_type) == t.file_size && !(as_ids && t.kind == 'i');
  host_matrix m =
      alloc_matrix(path, out_type, static_cast<int64_t>(rows), static_cast<int64_t>(cols), !as_is);
  if (as_is) {
    f.read_bulk(m.data(), data_bytes, "body");
    return m;
  }
  // Converting read: f8 -> f32, or ids that need sign / range checks.
  if (!as_ids && converted_from != nullptr) *converted_from = "float64";
  const uint64_t chunk = (uint64_t{1} << 20);
  std::vector<uint8_t> buf(static_cast<size_t>(std::min(count, chunk) * t.file_size));
  for (uint64_t i = 0; i < count; i += chunk) {
    const uint64_t n = std::min(chunk, count - i);
    f.read(buf.data(), n * t.file_size, "body");
    convert_chunk(path, t, as_ids, buf.data(), i, n, cols, m.data());
  }
  return m;
}

void write_npy(const std::string& path, const dataset_view& m) {
  check_writable(path, m, "matrix");
  const char* descr = "<f4";
  switch (m.type) {
    case dtype::f32: descr = "<f4"; break;
    case dtype::f16: descr = "<f2"; break;
    case dtype::u8: descr = "|u1"; break;
    case dtype::i8: descr = "|i1"; break;
    case dtype::u32: descr = "<u4"; break;
    case dtype::i32: descr = "<i4"; break;
  }
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, " +
                       "'shape': (" + std::to_string(m.rows) + ", " + std::to_string(m.cols) +
                       "), }";
  // Version 1.0: magic(6) + version(2) + uint16 length; pad with spaces and end with '\n' so the
  // data starts on a 64-byte boundary, as numpy does.
  const size_t preamble = 10;
  size_t total = preamble + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  const auto len = static_cast<uint16_t>(header.size());
  const uint8_t version[2] = {1, 0};
  output_file out(path);
  out.write(kMagic, 6);
  out.write(version, 2);
  out.write(&len, 2);
  out.write(header.data(), header.size());
  out.write(m.data, m.row_bytes() * static_cast<size_t>(m.rows));
  out.commit();
}

}  // namespace cagra::io::detail
