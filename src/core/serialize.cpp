// cagra::save / cagra::load: the versioned binary index file described in docs/index_format.md.
//
// Every header field is encoded explicitly as fixed-width little-endian (no struct dumps, so the
// layout does not depend on the compiler's padding), and a trailing 64-bit checksum covers the
// header and both payloads so that a flipped byte anywhere is reported instead of producing a
// silently wrong index. `load` checks every header field against the real file size before it
// allocates anything, so a garbled or hostile file can never make it allocate terabytes or read
// out of bounds. `save` writes a temporary file in the destination folder and renames it over the
// target, so an existing index is only ever replaced by a complete one.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>

#include "core/io/common.hpp"
#include "core/update/editor.hpp"
#include "core/xxh64.hpp"

// The payloads are written straight from (and read straight into) memory; that is only the
// documented little-endian layout on a little-endian host.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "cagra's index file I/O supports little-endian hosts only"
#endif

namespace cagra {
namespace {

using core::checksum;

constexpr char kMagic[8] = {'C', 'A', 'G', 'R', 'A', 'I', 'D', 'X'};
// Version 2 adds the optional label and tombstone payloads (flags below); save writes version 1
// for an index that has neither, so that older readers still read it.
constexpr uint32_t kFormatVersion = 2;
constexpr uint32_t kFlagLabels = 1u;      // rows x int64 labels follow the graph
constexpr uint32_t kFlagTombstones = 2u;  // ceil(rows / 32) uint32 words, bit set = deleted, follow
constexpr uint32_t kEndianTag = 0x01020304u;
constexpr uint32_t kHeaderSize = 64;
constexpr uint64_t kChecksumSize = 8;
constexpr uint32_t kMaxDim = 65536;
// Large chunks keep syscall overhead negligible for multi-GB files without a big extra buffer.
constexpr size_t kChunk = size_t{16} << 20;

void put_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

bool is_storage_dtype(uint32_t t) {
  return t == uint32_t(dtype::f32) || t == uint32_t(dtype::f16) || t == uint32_t(dtype::u8) ||
         t == uint32_t(dtype::i8);
}

// The decoded header (offsets in docs/index_format.md).
struct header {
  uint32_t version = kFormatVersion, endian = kEndianTag, header_size = kHeaderSize;
  uint32_t type = 0, metric = 0, degree = 0, dim = 0, flags = 0;
  uint64_t rows = 0, vector_bytes = 0, graph_bytes = 0;

  void encode(uint8_t* b) const {
    std::memset(b, 0, kHeaderSize);
    std::memcpy(b, kMagic, 8);
    put_u32(b + 8, version);
    put_u32(b + 12, endian);
    put_u32(b + 16, header_size);
    put_u32(b + 20, type);
    put_u32(b + 24, metric);
    put_u32(b + 28, degree);
    put_u64(b + 32, rows);
    put_u32(b + 40, dim);
    put_u32(b + 44, flags);
    put_u64(b + 48, vector_bytes);
    put_u64(b + 56, graph_bytes);
  }
  void decode(const uint8_t* b) {
    version = get_u32(b + 8);
    endian = get_u32(b + 12);
    header_size = get_u32(b + 16);
    type = get_u32(b + 20);
    metric = get_u32(b + 24);
    degree = get_u32(b + 28);
    rows = get_u64(b + 32);
    dim = get_u32(b + 40);
    flags = get_u32(b + 44);
    vector_bytes = get_u64(b + 48);
    graph_bytes = get_u64(b + 56);
  }
};

// Closes a file descriptor and (unless released) removes the temporary file it belongs to.
struct temp_file {
  int fd = -1;
  std::string path;
  bool keep = false;
  ~temp_file() {
    if (fd >= 0) ::close(fd);
    if (!keep && !path.empty()) ::unlink(path.c_str());
  }
};

void write_all(int fd, const void* data, size_t n, checksum* sum, const std::string& path) {
  if (sum) sum->update(data, n);
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, std::min(n, kChunk));
    if (w < 0 && errno == EINTR) continue;
    CAGRA_EXPECTS(w > 0, "cagra::save: writing '%s' failed: %s", path.c_str(),
                  w < 0 ? std::strerror(errno) : "no progress");
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void read_all(int fd, void* data, size_t n, checksum* sum, const std::string& path) {
  auto* p = static_cast<uint8_t*>(data);
  const size_t total = n;
  while (n > 0) {
    ssize_t r = ::read(fd, p, std::min(n, kChunk));
    if (r < 0 && errno == EINTR) continue;
    CAGRA_EXPECTS(r >= 0, "cagra::load: reading '%s' failed: %s", path.c_str(),
                  std::strerror(errno));
    // The size was checked with fstat, so a short read means the file shrank under us.
    CAGRA_EXPECTS(r > 0, "cagra::load: '%s' ended early (changed while being read?)", path.c_str());
    p += r;
    n -= static_cast<size_t>(r);
  }
  if (sum) sum->update(data, total);
}

// Index of the first of `n` floating-point values (bit patterns `Bits`, exponent mask `kExp`) that
// is NaN or infinite (exponent all ones), or n when every one is finite. The fixed-length inner
// loop (an OR of compares) vectorizes, so the scan runs at memory speed, like the checksum.
template <typename Bits, Bits kExp>
uint64_t first_non_finite(const Bits* v, uint64_t n) {
  constexpr uint64_t kBlock = 1024;
  uint64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    Bits any = 0;
    for (uint64_t j = 0; j < kBlock; ++j) any |= Bits((v[i + j] & kExp) == kExp);
    if (any) break;  // the loop below finds it
  }
  for (; i < n; ++i)
    if ((v[i] & kExp) == kExp) return i;
  return n;
}

// first_non_finite for `n` elements of storage type `t`; n for the integer types.
uint64_t first_non_finite(dtype t, const void* data, uint64_t n) {
  if (t == dtype::f32)
    return first_non_finite<uint32_t, 0x7F800000u>(static_cast<const uint32_t*>(data), n);
  if (t == dtype::f16)
    return first_non_finite<uint16_t, 0x7C00u>(static_cast<const uint16_t*>(data), n);
  return n;
}

// "NaN", "+Inf" or "-Inf" for a non-finite f32/f16 bit pattern.
const char* non_finite_name(dtype t, const void* value) {
  uint32_t bits = 0, mantissa = 0, sign = 0;
  if (t == dtype::f32) {
    std::memcpy(&bits, value, 4);
    mantissa = bits & 0x007FFFFFu;
    sign = bits >> 31;
  } else {
    uint16_t h;
    std::memcpy(&h, value, 2);
    mantissa = h & 0x03FFu;
    sign = uint32_t(h >> 15);
  }
  return mantissa != 0 ? "NaN" : sign ? "-Inf" : "+Inf";
}

// Closes the file descriptor it holds (load's input file) on every exit path.
struct fd_closer {
  int fd;
  ~fd_closer() {
    if (fd >= 0) ::close(fd);
  }
};

// The folder of `path` ("." when it has none), for the directory fsync after the rename.
std::string parent_dir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

void save(const index& idx, const std::string& path) {
  CAGRA_EXPECTS(!path.empty(), "cagra::save: empty file name");
  CAGRA_EXPECTS(idx.size() > 0, "cagra::save('%s'): the index is empty", path.c_str());
  CAGRA_EXPECTS(is_storage_dtype(uint32_t(idx.storage_dtype())),
                "cagra::save('%s'): vectors of dtype %s cannot be stored (f32, f16, u8, i8 only)",
                path.c_str(), to_string(idx.storage_dtype()));
  CAGRA_EXPECTS(idx.dim() >= 1 && idx.dim() <= kMaxDim, "cagra::save('%s'): dim %u outside [1, %u]",
                path.c_str(), idx.dim(), kMaxDim);
  CAGRA_EXPECTS(idx.graph_degree() >= 1 && int64_t(idx.graph_degree()) < idx.size(),
                "cagra::save('%s'): graph degree %u outside [1, rows - 1 = %lld]", path.c_str(),
                idx.graph_degree(), (long long)idx.size() - 1);
  // rename() would put a plain file in place of a FIFO or device node (as root, /dev/null).
  const char* kind = io::detail::non_regular_kind(path);
  CAGRA_EXPECTS(kind == nullptr,
                "cagra::save: '%s' is %s, not a regular file; refusing to replace it", path.c_str(),
                kind);

  header h;
  h.type = uint32_t(idx.storage_dtype());
  h.metric = uint32_t(idx.metric());
  h.degree = idx.graph_degree();
  h.rows = uint64_t(idx.size());
  h.dim = idx.dim();
  h.vector_bytes = idx.vectors().size_bytes();
  h.graph_bytes = h.rows * h.degree * sizeof(uint32_t);
  h.flags = (idx.has_labels() ? kFlagLabels : 0u) | (idx.deleted_count() ? kFlagTombstones : 0u);
  h.version = h.flags ? 2u : 1u;
  uint8_t head[kHeaderSize];
  h.encode(head);

  // Temporaries of this path left by saves that were killed (kill -9, a crash) would stay
  // forever, each as large as the index: remove those whose process is gone.
  const size_t slash = path.find_last_of('/');
  io::detail::remove_stale_temporaries(
      parent_dir(path), (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.",
      '.');
  // A per-process counter keeps concurrent saves to the same path from one process apart;
  // O_EXCL makes sure we never write into somebody else's temporary file.
  static std::atomic<uint64_t> counter{0};
  temp_file tmp;
  tmp.path = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (tmp.fd < 0) {
    int e = errno;
    tmp.path.clear();  // not ours: nothing to remove
    CAGRA_FAIL("cagra::save: cannot create '%s' (next to '%s'): %s", (path + ".tmp.*").c_str(),
               path.c_str(), std::strerror(e));
  }

  checksum sum;
  write_all(tmp.fd, head, kHeaderSize, &sum, path);
  write_all(tmp.fd, idx.vectors().data(), h.vector_bytes, &sum, path);
  write_all(tmp.fd, idx.graph().data, h.graph_bytes, &sum, path);
  if (h.flags & kFlagLabels)
    write_all(tmp.fd, idx.labels().data(), idx.labels().size() * sizeof(int64_t), &sum, path);
  if (h.flags & kFlagTombstones) {
    std::vector<uint32_t> deleted(idx.live_rows());
    for (uint32_t& w : deleted) w = ~w;
    if (h.rows & 31) deleted.back() &= (1u << (h.rows & 31)) - 1u;
    write_all(tmp.fd, deleted.data(), deleted.size() * sizeof(uint32_t), &sum, path);
  }
  uint8_t tail[kChecksumSize];
  put_u64(tail, sum.finish());
  write_all(tmp.fd, tail, kChecksumSize, nullptr, path);

  // The data must be on disk before the rename publishes it, or a crash could leave a complete
  // name pointing at incomplete contents.
  CAGRA_EXPECTS(::fsync(tmp.fd) == 0, "cagra::save: flushing '%s' failed: %s", path.c_str(),
                std::strerror(errno));
  int fd = tmp.fd;
  tmp.fd = -1;
  CAGRA_EXPECTS(::close(fd) == 0, "cagra::save: closing '%s' failed: %s", path.c_str(),
                std::strerror(errno));
  // Again right before the rename: the path may have become a FIFO or device since the start.
  kind = io::detail::non_regular_kind(path);
  CAGRA_EXPECTS(kind == nullptr,
                "cagra::save: '%s' is %s, not a regular file; refusing to replace it", path.c_str(),
                kind);
  CAGRA_EXPECTS(std::rename(tmp.path.c_str(), path.c_str()) == 0,
                "cagra::save: cannot replace '%s': %s", path.c_str(), std::strerror(errno));
  tmp.keep = true;

  // Best effort: persist the rename itself. Failing here loses nothing already written.
  int dir = ::open(parent_dir(path).c_str(), O_RDONLY | O_CLOEXEC);
  if (dir >= 0) {
    (void)::fsync(dir);
    ::close(dir);
  }
}

index load(const std::string& path) {
  const char* f = path.c_str();
  int fd = ::open(f, O_RDONLY | O_CLOEXEC);
  CAGRA_EXPECTS(fd >= 0, "cagra::load: cannot open '%s': %s", f, std::strerror(errno));
  fd_closer closer{fd};
  struct stat st {};
  CAGRA_EXPECTS(::fstat(fd, &st) == 0, "cagra::load: cannot stat '%s': %s", f,
                std::strerror(errno));
  CAGRA_EXPECTS(S_ISREG(st.st_mode), "cagra::load: '%s' is not a regular file", f);
  const uint64_t file_size = uint64_t(st.st_size);
  CAGRA_EXPECTS(file_size > 0, "cagra::load: '%s' is empty", f);

  // Fields are checked in file order, so the first problem is the one reported.
  uint8_t head[kHeaderSize] = {};
  const size_t head_n = size_t(std::min<uint64_t>(file_size, kHeaderSize));
  read_all(fd, head, head_n, nullptr, path);
  CAGRA_EXPECTS(head_n < 8 || std::memcmp(head, "CAGRASHD", 8) != 0,
                "cagra::load: '%s' is the manifest of a sharded index (cagra/multi_gpu.hpp): load "
                "it with cagra::load_sharded",
                f);
  CAGRA_EXPECTS(head_n >= 8 && std::memcmp(head, kMagic, 8) == 0,
                "cagra::load: '%s' is not a CAGRA index file (bad magic; expected \"CAGRAIDX\")",
                f);
  CAGRA_EXPECTS(head_n >= 12, "cagra::load: '%s': truncated header (%llu of %u bytes)", f,
                (unsigned long long)file_size, kHeaderSize);
  header h;
  h.decode(head);  // fields past the end of a short file read as 0 and are never used
  CAGRA_EXPECTS(h.version <= kFormatVersion,
                "cagra::load: '%s' was written by a newer version of the library (format "
                "version %u; this library reads version %u)",
                f, h.version, kFormatVersion);
  CAGRA_EXPECTS(h.version >= 1, "cagra::load: '%s': invalid format version %u", f, h.version);
  CAGRA_EXPECTS(head_n == kHeaderSize, "cagra::load: '%s': truncated header (%llu of %u bytes)", f,
                (unsigned long long)file_size, kHeaderSize);
  CAGRA_EXPECTS(h.endian == kEndianTag,
                "cagra::load: '%s': endianness tag is 0x%08x, expected 0x%08x (file written in "
                "a different byte order or corrupted)",
                f, h.endian, kEndianTag);
  CAGRA_EXPECTS(h.header_size == kHeaderSize,
                "cagra::load: '%s': header_size field is %u, expected %u for format version %u", f,
                h.header_size, kHeaderSize, h.version);
  CAGRA_EXPECTS(is_storage_dtype(h.type),
                "cagra::load: '%s': dtype field %u is not a storage type (0=f32, 1=f16, 2=u8, "
                "3=i8)",
                f, h.type);
  CAGRA_EXPECTS(h.metric <= uint32_t(metric::cosine),
                "cagra::load: '%s': metric field %u out of range (0=l2, 1=ip, 2=cosine)", f,
                h.metric);
  CAGRA_EXPECTS(h.rows >= 1 && h.rows <= uint64_t(kMaxRows),
                "cagra::load: '%s': rows field %llu outside [1, 2^31-1]", f,
                (unsigned long long)h.rows);
  CAGRA_EXPECTS(h.dim >= 1 && h.dim <= kMaxDim, "cagra::load: '%s': dim field %u outside [1, %u]",
                f, h.dim, kMaxDim);
  CAGRA_EXPECTS(h.degree >= 1 && uint64_t(h.degree) < h.rows,
                "cagra::load: '%s': graph_degree field %u outside [1, rows - 1 = %llu]", f,
                h.degree, (unsigned long long)(h.rows - 1));
  CAGRA_EXPECTS(h.version >= 2 || h.flags == 0,
                "cagra::load: '%s': flags field is 0x%08x, expected 0 in a version-1 file", f,
                h.flags);
  CAGRA_EXPECTS((h.flags & ~(kFlagLabels | kFlagTombstones)) == 0,
                "cagra::load: '%s': flags field 0x%08x has unknown bits (1 = labels, 2 = "
                "tombstones)",
                f, h.flags);

  // rows < 2^31, dim <= 2^16, element <= 4 bytes and degree < rows: neither product overflows.
  const uint64_t want_vec = h.rows * h.dim * dtype_size(dtype(h.type));
  const uint64_t want_graph = h.rows * h.degree * sizeof(uint32_t);
  const uint64_t want_labels = (h.flags & kFlagLabels) ? h.rows * sizeof(int64_t) : 0;
  const uint64_t tomb_words = (h.rows + 31) / 32;
  const uint64_t want_tomb = (h.flags & kFlagTombstones) ? tomb_words * sizeof(uint32_t) : 0;
  const uint64_t want_extra = want_labels + want_tomb;  // < 2^35
  CAGRA_EXPECTS(h.vector_bytes == want_vec,
                "cagra::load: '%s': vector_bytes field %llu, expected rows x dim x %zu = %llu", f,
                (unsigned long long)h.vector_bytes, dtype_size(dtype(h.type)),
                (unsigned long long)want_vec);
  CAGRA_EXPECTS(h.graph_bytes == want_graph,
                "cagra::load: '%s': graph_bytes field %llu, expected rows x degree x 4 = %llu", f,
                (unsigned long long)h.graph_bytes, (unsigned long long)want_graph);
  // want_vec < 2^49 and want_graph < 2^64 - 2^63: compare piecewise so the sum cannot overflow.
  const uint64_t body = file_size - kHeaderSize;  // >= 0: the full header was read
  const bool fits = want_graph <= body && want_vec <= body - want_graph &&
                    want_extra <= body - want_graph - want_vec &&
                    kChecksumSize <= body - want_graph - want_vec - want_extra;
  CAGRA_EXPECTS(fits,
                "cagra::load: '%s': truncated payload (file has %llu bytes; the header "
                "describes %llu + %llu + %llu + %llu + %llu)",
                f, (unsigned long long)file_size, (unsigned long long)kHeaderSize,
                (unsigned long long)want_vec, (unsigned long long)want_graph,
                (unsigned long long)want_extra, (unsigned long long)kChecksumSize);
  const uint64_t extra = body - want_graph - want_vec - want_extra - kChecksumSize;
  CAGRA_EXPECTS(extra == 0, "cagra::load: '%s': %llu unexpected trailing bytes after the checksum",
                f, (unsigned long long)extra);

  // Sizes now match the real file, so these allocations are bounded by what is on disk.
  checksum sum;
  sum.update(head, kHeaderSize);
  host_matrix vectors = host_matrix::uninitialized(dtype(h.type), int64_t(h.rows), int64_t(h.dim));
  std::vector<uint32_t> graph(size_t(h.rows) * h.degree);
  // Both payloads are read over threads (io::detail::read_pieces_in_order) and hashed in file
  // order as the pieces arrive, in slices that stay in cache for the finiteness scan that follows
  // each one: the checksum (sequential by the format) runs beside the reads of later pieces. A
  // NaN or infinite value is remembered and reported after the checksum: a damaged file is
  // "corrupted", whatever value the damage happens to produce.
  auto* vbytes = static_cast<uint8_t*>(vectors.data());
  const dtype vtype = dtype(h.type);
  const size_t esize = dtype_size(vtype);
  const uint64_t count = h.rows * h.dim;
  uint64_t bad_value = count;                 // index of the first non-finite element
  constexpr size_t kSlice = size_t{1} << 20;  // a multiple of every element size
  const auto hash_and_scan = [&](uint64_t first, uint64_t bytes) {
    for (uint64_t off = first; off < first + bytes; off += kSlice) {
      const size_t n = size_t(std::min<uint64_t>(kSlice, first + bytes - off));
      sum.update(vbytes + off, n);
      if (bad_value == count) {
        const uint64_t at = first_non_finite(vtype, vbytes + off, n / esize);
        if (at < n / esize) bad_value = off / esize + at;
      }
    }
  };
  auto* gbytes = reinterpret_cast<uint8_t*>(graph.data());
  const auto hash = [&](uint64_t first, uint64_t bytes) { sum.update(gbytes + first, bytes); };
  const auto read_payload = [&](void* dst, uint64_t n, uint64_t at,
                                const std::function<void(uint64_t, uint64_t)>& consume) {
    const io::detail::pieces_read r = io::detail::read_pieces_in_order(fd, dst, n, at, consume);
    CAGRA_EXPECTS(r.error == 0, "cagra::load: reading '%s' failed: %s", f, std::strerror(r.error));
    // The size was checked with fstat, so a short read means the file shrank under us.
    CAGRA_EXPECTS(r.done == n, "cagra::load: '%s' ended early (changed while being read?)", f);
  };
  read_payload(vbytes, want_vec, kHeaderSize, hash_and_scan);
  read_payload(gbytes, want_graph, kHeaderSize + want_vec, hash);
  CAGRA_EXPECTS(::lseek(fd, off_t(kHeaderSize + want_vec + want_graph), SEEK_SET) >= 0,
                "cagra::load: cannot seek in '%s': %s", f, std::strerror(errno));
  std::vector<int64_t> labels(static_cast<size_t>(want_labels / sizeof(int64_t)));
  if (want_labels) read_all(fd, labels.data(), want_labels, &sum, path);
  std::vector<uint32_t> deleted(static_cast<size_t>(want_tomb / sizeof(uint32_t)));
  if (want_tomb) read_all(fd, deleted.data(), want_tomb, &sum, path);
  uint8_t tail[kChecksumSize];
  read_all(fd, tail, kChecksumSize, nullptr, path);
  const uint64_t stored = get_u64(tail), computed = sum.finish();
  CAGRA_EXPECTS(stored == computed,
                "cagra::load: '%s' is corrupted: checksum mismatch (stored 0x%016llx, computed "
                "0x%016llx)",
                f, (unsigned long long)stored, (unsigned long long)computed);
  // Search compares distances: one NaN makes every comparison false and every result invalid.
  if (bad_value < count) {
    CAGRA_FAIL(
        "cagra::load: '%s': vector row %llu, column %llu is %s; an index's vectors must be "
        "finite (the file was not written by cagra::save, or was damaged before it was sealed)",
        f, (unsigned long long)(bad_value / h.dim), (unsigned long long)(bad_value % h.dim),
        non_finite_name(vtype, vbytes + bad_value * esize));
  }

  // Report the first bad id with its position (the index constructor would only say "bad id").
  const uint32_t n = uint32_t(h.rows);
  auto bad = std::find_if(graph.begin(), graph.end(), [n](uint32_t id) { return id >= n; });
  if (bad != graph.end()) {
    size_t pos = size_t(bad - graph.begin());
    CAGRA_FAIL("cagra::load: '%s': graph row %zu, slot %zu holds id %u, not below rows = %u", f,
               pos / h.degree, pos % h.degree, *bad, n);
  }
  index idx(metric(h.metric), std::move(vectors), std::move(graph), h.degree);
  if (want_labels) {
    try {
      idx.set_labels(std::move(labels));
    } catch (const error& e) {
      CAGRA_FAIL("cagra::load: '%s': %s", f, e.what());
    }
  }
  if (want_tomb) {
    CAGRA_EXPECTS((h.rows & 31) == 0 || (deleted.back() >> (h.rows & 31)) == 0,
                  "cagra::load: '%s': the tombstone bitset has bits past the last row", f);
    detail::index_editor::start_tombstones(idx);
    std::vector<uint32_t>& live = detail::index_editor::live(idx);
    int64_t count = 0;
    for (size_t w = 0; w < deleted.size(); ++w) {
      live[w] &= ~deleted[w];
      count += __builtin_popcount(deleted[w]);
    }
    detail::index_editor::deleted(idx) = count;
    if (count == 0) live.clear();
  }
  return idx;
}

}  // namespace cagra
