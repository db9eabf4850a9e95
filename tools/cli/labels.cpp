// Label files of the `cagra` tool (docs/cli.md, "Labels"): the labels of new vectors
// (`extend --labels`), the labels to delete (`remove IDS`) and the labels a search returns (`search
// -o X.npy`). Labels are int64, which the library's vector readers and writers (cagra/io.hpp) do
// not hold: .ibin files go through io::read_matrix (int32), .npy files of any integer dtype are
// read here, and search results are written here as .npy of int64, through a temporary file and
// rename like every other output of the tool.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "cli.hpp"

namespace cagra::cli {

namespace {

// The value of `key` in a .npy header dict ({'descr': '<i8', 'fortran_order': False, ...}): the
// text after "'key':" up to the next ',' or '}' outside parentheses, spaces trimmed.
std::string npy_field(const std::string& header, const std::string& key, const std::string& path) {
  const size_t at = header.find("'" + key + "'");
  size_t p = at == std::string::npos ? at : header.find(':', at);
  if (p == std::string::npos) {
    throw cagra::error("labels '" + path + "': bad .npy header (no '" + key + "')");
  }
  ++p;
  int depth = 0;
  size_t end = p;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string v = header.substr(p, end - p);
  const size_t first = v.find_first_not_of(" \t"), last = v.find_last_not_of(" \t");
  return first == std::string::npos ? "" : v.substr(first, last - first + 1);
}

std::vector<int64_t> read_npy_labels(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw cagra::error("cannot read labels '" + path + "'");
  auto fail = [&](const std::string& what) -> void {
    throw cagra::error("labels '" + path + "': " + what);
  };
  char magic[8] = {};
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail("not a .npy file");
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    uint16_t n = 0;
    if (!f.read(reinterpret_cast<char*>(&n), 2)) fail("truncated header");
    header_len = n;
  } else if (magic[6] == 2 || magic[6] == 3) {
    if (!f.read(reinterpret_cast<char*>(&header_len), 4)) fail("truncated header");
  } else {
    fail("unsupported .npy format version " + std::to_string(int(magic[6])));
  }
  if (header_len > (1u << 16)) fail("bad .npy header (too long)");
  std::string header(header_len, '\0');
  if (!f.read(header.data(), header_len)) fail("truncated header");

  std::string descr = npy_field(header, "descr", path);
  if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"') ||
      descr.back() != descr.front()) {
    fail("bad .npy header (descr " + descr + ")");
  }
  descr = descr.substr(1, descr.size() - 2);
  const char order = descr.empty() ? '?' : descr[0];
  const std::string type =
      order == '<' || order == '|' || order == '=' || order == '>' ? descr.substr(1) : descr;
  const bool is_int = type.size() == 2 && (type[0] == 'i' || type[0] == 'u') &&
                      (type[1] == '1' || type[1] == '2' || type[1] == '4' || type[1] == '8');
  if (!is_int) {
    fail("holds '" + descr +
         "' values; labels are integers (int8 .. int64, uint8 .. uint64; "
         "e.g. numpy.save(path, labels.astype(numpy.int64)))");
  }
  const size_t size = static_cast<size_t>(type[1] - '0');
  if (order == '>' && size > 1) fail("big-endian dtype '" + descr + "'; save it little-endian");
  if (npy_field(header, "fortran_order", path) != "False") {
    fail("fortran_order is not False; save the array in C order");
  }
  const std::string shape = npy_field(header, "shape", path);
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')') {
    fail("bad .npy header (shape " + shape + ")");
  }
  uint64_t count = 1;
  std::string dim;
  for (size_t i = 1; i < shape.size(); ++i) {
    const char c = shape[i];
    if (c >= '0' && c <= '9') {
      dim += c;
    } else if (c == ',' || c == ')') {
      if (dim.empty() && c == ',') fail("bad .npy header (shape " + shape + ")");
      if (!dim.empty()) {
        if (dim.size() > 12) fail("bad .npy header (shape " + shape + " too large)");
        // Checked before multiplying: two 12-digit extents would wrap 64 bits.
        const uint64_t extent = std::stoull(dim);
        if (extent != 0 && count > (uint64_t{1} << 40) / extent)
          fail("bad .npy header (shape " + shape + " too large)");
        count *= extent;
      }
      dim.clear();
    } else if (c != ' ') {
      fail("bad .npy header (shape " + shape + ")");
    }
  }
  const auto body = static_cast<uint64_t>(f.tellg());
  f.seekg(0, std::ios::end);
  const auto total = static_cast<uint64_t>(f.tellg());
  f.seekg(static_cast<std::streamoff>(body));
  if (total - body != count * size) {
    fail("shape " + shape + " of '" + descr + "' needs " + std::to_string(count * size) +
         " bytes of data, the file has " + std::to_string(total - body));
  }
  std::vector<uint8_t> raw(static_cast<size_t>(count * size));
  if (!raw.empty() && !f.read(reinterpret_cast<char*>(raw.data()), std::streamsize(raw.size()))) {
    fail("truncated data");
  }
  std::vector<int64_t> out(static_cast<size_t>(count));
  const bool is_signed = type[0] == 'i';
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t* p = raw.data() + i * size;
    int64_t v = 0;
    switch (size) {
      case 1: v = is_signed ? int64_t{int8_t(p[0])} : int64_t{p[0]}; break;
      case 2: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        v = is_signed ? int64_t{int16_t(x)} : int64_t{x};
        break;
      }
      case 4: {
        uint32_t x;
        std::memcpy(&x, p, 4);
        v = is_signed ? int64_t{int32_t(x)} : int64_t{x};
        break;
      }
      default: {
        uint64_t x;
        std::memcpy(&x, p, 8);
        if (!is_signed && x > uint64_t(INT64_MAX)) {
          fail("label " + std::to_string(x) + " at position " + std::to_string(i) +
               " does not fit in int64");
        }
        v = static_cast<int64_t>(x);
      }
    }
    out[i] = v;
  }
  return out;
}

}  // namespace

std::vector<int64_t> read_labels(const std::string& path) {
  std::vector<int64_t> out;
  if (has_extension(path, ".npy")) {
    out = read_npy_labels(path);
  } else if (has_extension(path, ".ibin")) {
    const host_matrix m = io::read_matrix(path);
    const auto* v = static_cast<const int32_t*>(m.data());
    out.assign(v, v + m.rows() * m.cols());
  } else {
    throw cagra::error("labels '" + path + "': expected .npy (any integer dtype) or .ibin (int32)");
  }
  if (out.empty()) throw cagra::error("labels '" + path + "' hold no labels");
  return out;
}

void write_labels_npy(const std::string& path, const int64_t* labels, int64_t rows, int64_t cols) {
  std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  // Version 1.0, data aligned to 64 bytes as numpy writes it.
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  const auto len = static_cast<uint16_t>(header.size());

  namespace fs = std::filesystem;
  const fs::path target(path);
  const std::string temp =
      (target.parent_path().empty() ? fs::path(".") : target.parent_path()).string() + "/." +
      target.filename().string().substr(0, 128) + ".tmp-" + std::to_string(::getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    throw cagra::error("cannot write '" + path + "': " + std::strerror(errno));
  }
  bool ok = true;
  auto put = [&](const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    while (ok && n > 0) {
      const ssize_t w = ::write(fd, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) ok = false;
      if (w > 0) {
        p += w;
        n -= static_cast<size_t>(w);
      }
    }
  };
  put("\x93NUMPY\x01\x00", 8);
  put(&len, 2);
  put(header.data(), header.size());
  put(labels, static_cast<size_t>(rows * cols) * sizeof(int64_t));
  const int err = ok ? 0 : errno;
  ok = ok && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok || std::rename(temp.c_str(), path.c_str()) != 0) {
    const int e = err ? err : errno;
    ::unlink(temp.c_str());
    throw cagra::error("cannot write '" + path + "': " + std::strerror(e) +
                       " (the existing file, if any, is unchanged)");
  }
}

}  // namespace cagra::cli
