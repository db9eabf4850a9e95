// Shared plumbing of the dataset readers/writers: format detection from the file name, the
// checked input file, the temp-file-then-rename output file and the size arithmetic.
//
// Every reader goes through input_file so that "missing", "is a directory", "empty" and short
// reads are reported the same way for all formats, and every writer goes through output_file so
// that a failed write never damages an existing file.
#include "core/io/common.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <new>

namespace cagra::io::detail {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const char* suffix) {
  size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

std::string basename_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// MNIST-style names ("train-images-idx3-ubyte") carry the format as "idx" + a digit anywhere in
// the name; other IDX files simply end in ".idx".
bool looks_like_idx(const std::string& name) {
  if (ends_with(name, ".idx")) return true;
  for (size_t p = name.find("idx"); p != std::string::npos; p = name.find("idx", p + 1))
    if (p + 3 < name.size() && std::isdigit(static_cast<unsigned char>(name[p + 3]))) return true;
  return false;
}

struct ext_entry {
  const char* ext;
  format fmt;
};
constexpr ext_entry kExtensions[] = {
    {".fvecs", format::fvecs}, {".ivecs", format::ivecs}, {".bvecs", format::bvecs},
    {".fbin", format::fbin},   {".u8bin", format::u8bin}, {".i8bin", format::i8bin},
    {".ibin", format::ibin},   {".npy", format::npy},     {".hdf5", format::hdf5},
    {".h5", format::hdf5},
};

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// Whether the text after path[colon] is an HDF5 dataset name rather than part of the path.
bool split_hdf5_suffix(const std::string& path, size_t colon) {
  const std::string prefix = path.substr(0, colon);
  const std::string low = lower(prefix);
  if (!ends_with(low, ".hdf5") && !ends_with(low, ".h5")) return false;
  if (exists(path)) return false;              // the whole path names something
  if (exists(prefix)) return !is_dir(prefix);  // "x.h5:..." where x.h5 is the file
  // Neither exists (a missing file, or a file about to be written): a "name/..." suffix whose
  // folder exists is a path; otherwise report it as the HDF5 file it looks like.
  const size_t slash = path.find_last_of('/');
  return !(slash != std::string::npos && slash > colon && is_dir(path.substr(0, slash)));
}

}  // namespace

const char* supported_extensions() {
  return ".fvecs, .ivecs, .bvecs, .fbin, .u8bin, .i8bin, .ibin, .npy, .hdf5/.h5 (with optional "
         "':dataset'), IDX (name containing 'idx<N>' or ending in .idx, optionally .gz)";
}

const char* format_name(format f) {
  switch (f) {
    case format::fvecs: return ".fvecs";
    case format::ivecs: return ".ivecs";
    case format::bvecs: return ".bvecs";
    case format::fbin: return ".fbin";
    case format::u8bin: return ".u8bin";
    case format::i8bin: return ".i8bin";
    case format::ibin: return ".ibin";
    case format::npy: return ".npy";
    case format::idx: return "IDX";
    case format::hdf5: return "HDF5";
  }
  return "unknown";
}

path_spec parse_path(const std::string& path) {
  CAGRA_EXPECTS(!path.empty(), "empty file path");
  path_spec spec;
  spec.file = path;
  // "file.hdf5:test" selects a dataset. Only the last ':' counts, and only when what precedes it
  // is an HDF5 file name, so directories with ':' in their names keep working. The file system
  // settles the rare ambiguous case ("runs.h5:old/base.fbin" where "runs.h5:old" is a folder).
  const size_t colon = path.find_last_of(':');
  if (colon != std::string::npos && split_hdf5_suffix(path, colon)) {
    spec.file = path.substr(0, colon);
    spec.dataset = path.substr(colon + 1);
    CAGRA_EXPECTS(!spec.dataset.empty(), "%s: empty HDF5 dataset name after ':'", path.c_str());
    spec.fmt = format::hdf5;
    return spec;
  }
  std::string name = lower(basename_of(spec.file));
  bool gz = ends_with(name, ".gz");
  if (gz) name.resize(name.size() - 3);
  for (const ext_entry& e : kExtensions) {
    if (!ends_with(name, e.ext)) continue;
    CAGRA_EXPECTS(!gz,
                  "%s: gzip-compressed %s files are not supported (only IDX files may be "
                  ".gz); decompress it first",
                  path.c_str(), e.ext);
    spec.fmt = e.fmt;
    return spec;
  }
  if (looks_like_idx(name)) {
    spec.fmt = format::idx;
    return spec;
  }
  CAGRA_FAIL("%s: unknown file extension; supported: %s", path.c_str(), supported_extensions());
}

std::string quote_bytes(const std::string& bytes, size_t max_chars) {
  std::string out;
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    char piece[5] = {ch, '\0'};  // the longest piece is "\xNN"
    if (c == '\\') {
      std::memcpy(piece, "\\\\", 3);
    } else if (c < 0x20 || c > 0x7E) {
      std::snprintf(piece, sizeof piece, "\\x%02x", c);
    }
    if (out.size() + std::strlen(piece) > max_chars) return out + "...";
    out += piece;
  }
  return out;
}

uint64_t mul_checked(uint64_t a, uint64_t b, const std::string& path, const char* what) {
  uint64_t r = 0;
  CAGRA_EXPECTS(!__builtin_mul_overflow(a, b, &r), "%s: %s overflows (%llu x %llu)", path.c_str(),
                what, (unsigned long long)a, (unsigned long long)b);
  return r;
}

host_matrix alloc_matrix(const std::string& path, dtype t, int64_t rows, int64_t cols,
                         bool zeroed) {
  try {
    return zeroed ? host_matrix(t, rows, cols) : host_matrix::uninitialized(t, rows, cols);
  } catch (const std::bad_alloc&) {
    CAGRA_FAIL("%s: cannot allocate %lld x %lld %s values (out of memory)", path.c_str(),
               (long long)rows, (long long)cols, to_string(t));
  } catch (const std::length_error&) {
    CAGRA_FAIL("%s: %lld x %lld %s values is too large to hold in memory", path.c_str(),
               (long long)rows, (long long)cols, to_string(t));
  }
}

// ---- input_file --------------------------------------------------------------------------------

input_file::input_file(const std::string& path) : path_(path) {
  // stat() before opening: opening a FIFO would block, and a directory opens "fine" on Linux.
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    CAGRA_FAIL("%s: cannot open: %s", path.c_str(),
               err == ENOENT ? "no such file" : std::strerror(err));
  }
  CAGRA_EXPECTS(!S_ISDIR(st.st_mode), "%s: is a directory, not a file", path.c_str());
  CAGRA_EXPECTS(S_ISREG(st.st_mode), "%s: not a regular file", path.c_str());
  f_ = std::fopen(path.c_str(), "rb");
  if (f_ == nullptr) CAGRA_FAIL("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  // Size of what was actually opened (the path may have changed since stat()).
  if (::fstat(::fileno(f_), &st) != 0 || !S_ISREG(st.st_mode)) {
    std::fclose(f_);
    f_ = nullptr;
    CAGRA_FAIL("%s: not a regular file", path.c_str());
  }
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ == 0) {
    std::fclose(f_);
    f_ = nullptr;
    CAGRA_FAIL("%s: file is empty", path.c_str());
  }
}

input_file::~input_file() {
  if (f_ != nullptr) std::fclose(f_);
}

void input_file::expect_room(uint64_t n, const char* what) const {
  CAGRA_EXPECTS(n <= remaining(),
                "%s: truncated %s: need %llu bytes at offset %llu, the file "
                "has %llu",
                path_.c_str(), what, (unsigned long long)n, (unsigned long long)offset_,
                (unsigned long long)size_);
}

void input_file::read(void* dst, uint64_t n, const char* what) {
  expect_room(n, what);
  auto* out = static_cast<uint8_t*>(dst);
  uint64_t done = 0;
  while (done < n) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(n - done, uint64_t{1} << 30));
    size_t got = std::fread(out + done, 1, chunk, f_);
    done += got;
    if (got < chunk) {
      // The file shrank after we sized it, or the device failed.
      CAGRA_FAIL("%s: truncated %s: read %llu of %llu bytes at offset %llu%s%s", path_.c_str(),
                 what, (unsigned long long)done, (unsigned long long)n, (unsigned long long)offset_,
                 std::ferror(f_) ? ": " : "", std::ferror(f_) ? std::strerror(errno) : "");
    }
  }
  offset_ += n;
}

void input_file::read_bulk(void* dst, uint64_t n, const char* what) {
  expect_room(n, what);
  const pieces_read r = read_pieces(::fileno(f_), dst, n, offset_);
  if (r.done < n) {
    CAGRA_FAIL("%s: truncated %s: read %llu of %llu bytes at offset %llu%s%s", path_.c_str(), what,
               (unsigned long long)r.done, (unsigned long long)n, (unsigned long long)offset_,
               r.error ? ": " : "", r.error ? std::strerror(r.error) : "");
  }
  seek(offset_ + n);  // the stream's own position and buffer, for reads after this one
}

void input_file::seek(uint64_t offset) {
  CAGRA_EXPECTS(offset <= size_, "%s: seek to %llu past the end (%llu bytes)", path_.c_str(),
                (unsigned long long)offset, (unsigned long long)size_);
  CAGRA_EXPECTS(::fseeko(f_, static_cast<off_t>(offset), SEEK_SET) == 0, "%s: cannot seek: %s",
                path_.c_str(), std::strerror(errno));
  offset_ = offset;
}

// ---- output_file -------------------------------------------------------------------------------

const char* non_regular_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return nullptr;  // missing (or unreadable: open reports it)
  switch (st.st_mode & S_IFMT) {
    case S_IFREG: return nullptr;
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    default: return "not a plain file";
  }
}

void check_replaceable(const std::string& path) {
  const char* kind = non_regular_kind(path);
  if (kind == nullptr) return;
  CAGRA_EXPECTS(std::strcmp(kind, "a directory") != 0,
                "%s: is a directory, cannot write a file there", path.c_str());
  CAGRA_FAIL("%s: is %s, not a regular file; refusing to replace it", path.c_str(), kind);
}

namespace {
constexpr size_t kWriteBuffer = size_t{1} << 20;
std::atomic<uint64_t> g_temp_counter{0};
}  // namespace

namespace {
// Parses the decimal digits s[at, end) into *v (at most 9 digits: fits a pid_t); false otherwise.
bool parse_digits(const std::string& s, size_t at, size_t end, long* v) {
  if (end <= at || end - at > 9) return false;
  long x = 0;
  for (size_t i = at; i < end; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    x = x * 10 + (s[i] - '0');
  }
  *v = x;
  return true;
}
}  // namespace

void remove_stale_temporaries(const std::string& dir, const std::string& prefix, char sep) {
  constexpr time_t kQuietSeconds = 60;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  const time_t now = ::time(nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const size_t split = name.find(sep, prefix.size());
    long pid = 0, n = 0;
    if (split == std::string::npos || !parse_digits(name, prefix.size(), split, &pid) ||
        !parse_digits(name, split + 1, name.size(), &n) || pid <= 0 || pid == ::getpid())
      continue;
    // Only a pid that is certainly gone: EPERM means a live process of another user.
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (now - st.st_mtime < kQuietSeconds) continue;
    (void)::unlink(path.c_str());
  }
  ::closedir(d);
}

output_file::output_file(const std::string& target) : target_(target) {
  check_replaceable(target);
  std::filesystem::path p(target);
  std::string dir = p.parent_path().string();
  if (dir.empty()) dir = ".";
  // A hidden name next to the target (same file system, so rename() is atomic); the stem is
  // shortened so that the temp name stays under NAME_MAX.
  std::string stem = p.filename().string().substr(0, 128);
  remove_stale_temporaries(dir, "." + stem + ".tmp-", '-');
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    temp_ = dir + "/." + stem + ".tmp-" + std::to_string(::getpid()) + "-" +
            std::to_string(g_temp_counter.fetch_add(1));
    // O_EXCL: never clobber someone else's file; 0666 lets the umask decide as for any file.
    fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) {
    int err = errno;
    temp_.clear();
    CAGRA_FAIL("%s: cannot create a temporary file in %s: %s", target.c_str(), dir.c_str(),
               std::strerror(err));
  }
  buffer_.reserve(kWriteBuffer);
}

output_file::~output_file() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void output_file::fail(const char* what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
  CAGRA_FAIL("%s: %s: %s (the existing file, if any, is unchanged)", target_.c_str(), what,
             std::strerror(err));
}

void output_file::write_raw(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd_, p, std::min(n, size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write failed", errno);
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void output_file::flush() {
  write_raw(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void output_file::write(const void* data, size_t n) {
  CAGRA_EXPECTS(fd_ >= 0 && !committed_, "%s: write after the file was closed", target_.c_str());
  // Large blocks (a whole matrix body) go straight to the file instead of through the buffer.
  if (n >= kWriteBuffer) {
    flush();
    write_raw(data, n);
    return;
  }
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const size_t take = std::min(n, kWriteBuffer - buffer_.size());
    buffer_.insert(buffer_.end(), p, p + take);
    p += take;
    n -= take;
    if (buffer_.size() == kWriteBuffer) flush();
  }
}

void output_file::commit() {
  CAGRA_EXPECTS(fd_ >= 0 && !committed_, "%s: commit after the file was closed", target_.c_str());
  flush();
  // fsync before rename: otherwise a crash right after could leave the new name pointing at a
  // file whose data never reached the disk.
  if (::fsync(fd_) != 0) fail("fsync failed", errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("close failed", errno);
  // Checked again right before the rename: the target may have become a FIFO or device since.
  if (non_regular_kind(target_) != nullptr) {
    ::unlink(temp_.c_str());
    temp_.clear();
    check_replaceable(target_);
  }
  if (::rename(temp_.c_str(), target_.c_str()) != 0)
    fail("cannot rename the temporary file", errno);
  committed_ = true;
}

// ---- checks shared by the writers and the id readers -------------------------------------------

void check_writable(const std::string& path, const dataset_view& m, const char* what) {
  CAGRA_EXPECTS(m.space == memory_space::host, "%s: the %s to write must be in host memory",
                path.c_str(), what);
  CAGRA_EXPECTS(m.rows > 0 && m.cols > 0, "%s: cannot write an empty %s (%lld x %lld)",
                path.c_str(), what, (long long)m.rows, (long long)m.cols);
  CAGRA_EXPECTS(m.data != nullptr, "%s: the %s to write has no data (null pointer)", path.c_str(),
                what);
}

void check_u32_fits_i32(const std::string& path, const dataset_view& m) {
  const auto* v = static_cast<const uint32_t*>(m.data);
  const uint64_t n = static_cast<uint64_t>(m.rows) * static_cast<uint64_t>(m.cols);
  for (uint64_t i = 0; i < n; ++i) {
    // kInvalidId (a missing neighbor) is stored as -1, the faiss / ann-benchmarks convention.
    if (v[i] > 0x7FFFFFFFu && v[i] != kInvalidId) {
      CAGRA_FAIL(
          "%s: id %u at row %llu, column %llu does not fit in int32, which the format "
          "stores",
          path.c_str(), v[i], (unsigned long long)(i / m.cols), (unsigned long long)(i % m.cols));
    }
  }
}

host_matrix ids_from_i32(const std::string& path, const host_matrix& m) {
  CAGRA_EXPECTS(m.type() == dtype::i32, "%s: neighbor ids must be integers, the file holds %s",
                path.c_str(), to_string(m.type()));
  host_matrix out = alloc_matrix(path, dtype::u32, m.rows(), m.cols());
  const auto* in = static_cast<const int32_t*>(m.data());
  auto* dst = static_cast<uint32_t*>(out.data());
  const uint64_t n = static_cast<uint64_t>(m.rows()) * static_cast<uint64_t>(m.cols());
  for (uint64_t i = 0; i < n; ++i) {
    if (in[i] < -1) {  // -1 = no neighbor (read back as kInvalidId)
      CAGRA_FAIL("%s: negative neighbor id %d at row %llu, column %llu", path.c_str(), in[i],
                 (unsigned long long)(i / m.cols()), (unsigned long long)(i % m.cols()));
    }
    dst[i] = static_cast<uint32_t>(in[i]);
  }
  return out;
}

}  // namespace cagra::io::detail
