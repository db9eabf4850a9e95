// IDX files (MNIST / Fashion-MNIST), plain or gzip-compressed: two zero bytes, a type byte
// (0x08 u8, 0x09 i8, 0x0D f32), a dimension count, big-endian uint32 dimensions, then the
// big-endian values. Rows are the first dimension; the others are flattened into columns.
//
// Gzip is recognized by its magic bytes, whatever the name says; bytes after the last gzip member
// are rejected like trailing bytes in any other format. A compressed file's real size
// is unknown until it is decompressed, so the header is first checked against the most a gzip
// stream of that size can expand to, and the data is then decompressed into a buffer that grows
// with what actually arrives: a lying header can never make us allocate gigabytes up front.
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "core/io/common.hpp"

namespace cagra::io::detail {

namespace {

// Returns up to n bytes (fewer only at the end of the data).
using read_fn = std::function<uint64_t(void*, uint64_t)>;

struct idx_header {
  dtype type = dtype::u8;
  uint64_t rows = 0, cols = 0, data_bytes = 0;
};

uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

void read_exact(const read_fn& read, const std::string& path, void* dst, uint64_t n,
                const char* what) {
  const uint64_t got = read(dst, n);
  CAGRA_EXPECTS(got == n, "%s: truncated %s: need %llu bytes, got %llu", path.c_str(), what,
                (unsigned long long)n, (unsigned long long)got);
}

idx_header read_header(const read_fn& read, const std::string& path) {
  uint8_t magic[4];
  read_exact(read, path, magic, 4, "header (IDX magic)");
  CAGRA_EXPECTS(magic[0] == 0 && magic[1] == 0,
                "%s: bad IDX magic: the first two bytes must be "
                "zero, got 0x%02x 0x%02x",
                path.c_str(), magic[0], magic[1]);
  idx_header h;
  switch (magic[2]) {
    case 0x08: h.type = dtype::u8; break;
    case 0x09: h.type = dtype::i8; break;
    case 0x0D: h.type = dtype::f32; break;
    default:
      CAGRA_FAIL(
          "%s: unsupported IDX element type 0x%02x (supported: 0x08 u8, 0x09 i8, 0x0D "
          "f32)",
          path.c_str(), magic[2]);
  }
  const unsigned ndims = magic[3];
  CAGRA_EXPECTS(ndims >= 1, "%s: bad IDX header: zero dimensions", path.c_str());
  uint8_t dims[255 * 4];
  read_exact(read, path, dims, uint64_t{ndims} * 4, "header (IDX dimensions)");
  h.rows = load_be32(dims);
  h.cols = 1;
  for (unsigned d = 1; d < ndims; ++d) {
    const uint32_t v = load_be32(dims + 4 * d);
    CAGRA_EXPECTS(v > 0, "%s: IDX dimension %u is zero", path.c_str(), d);
    h.cols = mul_checked(h.cols, v, path, "IDX dimensions' product");
  }
  CAGRA_EXPECTS(h.rows > 0, "%s: IDX header says zero rows (dimension 0 is 0)", path.c_str());
  CAGRA_EXPECTS(h.cols <= INT64_MAX, "%s: IDX row size overflows", path.c_str());
  const uint64_t count = mul_checked(h.rows, h.cols, path, "IDX element count");
  h.data_bytes = mul_checked(count, dtype_size(h.type), path, "IDX data size");
  return h;
}

void swap_f32_from_be(host_matrix& m) {
  if (m.type() != dtype::f32) return;
  auto* p = static_cast<uint32_t*>(m.data());
  const uint64_t n = m.size_bytes() / 4;
  for (uint64_t i = 0; i < n; ++i) p[i] = __builtin_bswap32(p[i]);
}

// A gzip file decompressed with zlib's inflate, fed from the checked input file. zlib's gzread
// would do, but it silently ignores whatever follows the last gzip member unless it starts with
// the gzip magic; here every byte is accounted for. Members may follow one another (`cat a.gz
// b.gz` is valid gzip, RFC 1952), anything else after a member is reported as trailing garbage,
// as every other format reports bytes after its data.
class gz_reader {
 public:
  explicit gz_reader(input_file& f) : f_(f), in_(size_t{1} << 18) {
    // 16 + MAX_WBITS: a gzip wrapper, whose CRC-32 and length trailer inflate checks.
    CAGRA_EXPECTS(inflateInit2(&z_, 16 + MAX_WBITS) == Z_OK,
                  "%s: cannot start gzip decompression (out of memory)", f.path().c_str());
  }
  ~gz_reader() { inflateEnd(&z_); }
  gz_reader(const gz_reader&) = delete;
  gz_reader& operator=(const gz_reader&) = delete;

  /** Up to n bytes of decompressed data: fewer only at the clean end of the last member. */
  uint64_t read(void* dst, uint64_t n) {
    auto* out = static_cast<uint8_t*>(dst);
    uint64_t done = 0;
    while (done < n) {
      if (z_.avail_in == 0) refill();
      if (z_.avail_in == 0) {  // the whole file is consumed
        CAGRA_EXPECTS(member_done_,
                      "%s: corrupt gzip data: truncated gzip stream (unexpected end of file)",
                      path());
        break;
      }
      if (member_done_) {  // bytes after a complete member: the next member, or garbage
        const uint64_t left = z_.avail_in + f_.remaining();
        CAGRA_EXPECTS(next_is_member(), "%s: trailing garbage: %llu bytes after the gzip data",
                      path(), (unsigned long long)left);
        CAGRA_EXPECTS(inflateReset(&z_) == Z_OK, "%s: corrupt gzip data", path());
        member_done_ = false;
      }
      const auto chunk = static_cast<uInt>(std::min<uint64_t>(n - done, uint64_t{1} << 30));
      z_.next_out = out + done;
      z_.avail_out = chunk;
      const uInt had_in = z_.avail_in;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      done += chunk - z_.avail_out;
      if (rc == Z_STREAM_END) {
        member_done_ = true;
      } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && z_.avail_in == 0)) {
        CAGRA_FAIL("%s: corrupt gzip data: %s", path(), z_.msg ? z_.msg : zError(rc));
      } else {
        // Progress is guaranteed: inflate consumed input or produced output, else it said so.
        CAGRA_EXPECTS(z_.avail_in < had_in || z_.avail_out < chunk,
                      "%s: corrupt gzip data: no progress", path());
      }
    }
    return done;
  }

 private:
  const char* path() const { return f_.path().c_str(); }

  // Moves the unread input to the front of the buffer and fills the rest from the file.
  void refill() {
    const size_t keep = z_.avail_in;
    if (keep > 0 && z_.next_in != in_.data()) std::memmove(in_.data(), z_.next_in, keep);
    const uint64_t take = std::min<uint64_t>(in_.size() - keep, f_.remaining());
    if (take > 0) f_.read(in_.data() + keep, take, "gzip data");
    z_.next_in = in_.data();
    z_.avail_in = static_cast<uInt>(keep + take);
  }

  // Whether the unread input starts with the gzip magic (1f 8b) of another member.
  bool next_is_member() {
    if (z_.avail_in < 2) refill();
    return z_.avail_in >= 2 && z_.next_in[0] == 0x1f && z_.next_in[1] == 0x8b;
  }

  input_file& f_;
  std::vector<uint8_t> in_;
  z_stream z_{};
  bool member_done_ = false;
};

host_matrix read_gz(input_file& f) {
  const std::string& path = f.path();
  const uint64_t compressed_size = f.size();
  gz_reader gz(f);
  read_fn read = [&gz](void* d, uint64_t n) { return gz.read(d, n); };
  const idx_header h = read_header(read, path);
  // Deflate expands at most ~1032:1; a header asking for more cannot be honest.
  const uint64_t max_bytes =
      compressed_size > (UINT64_MAX - 4096) / 1032 ? UINT64_MAX : compressed_size * 1032 + 4096;
  CAGRA_EXPECTS(h.data_bytes <= max_bytes,
                "%s: IDX header says %llu x %llu values (%llu bytes), "
                "more than a %llu-byte gzip file can hold",
                path.c_str(), (unsigned long long)h.rows, (unsigned long long)h.cols,
                (unsigned long long)h.data_bytes, (unsigned long long)compressed_size);
  std::vector<uint8_t> buf;
  uint64_t have = 0;
  while (have < h.data_bytes) {
    const uint64_t target =
        std::min<uint64_t>(h.data_bytes, std::max<uint64_t>(uint64_t{16} << 20, 2 * have));
    try {
      buf.resize(static_cast<size_t>(target));
    } catch (const std::bad_alloc&) {
      CAGRA_FAIL("%s: out of memory decompressing %llu bytes", path.c_str(),
                 (unsigned long long)h.data_bytes);
    }
    const uint64_t want = target - have;
    const uint64_t got = gz.read(buf.data() + have, want);
    have += got;
    CAGRA_EXPECTS(got == want,
                  "%s: truncated body: IDX header says %llu x %llu "
                  "values (%llu bytes), the decompressed data has only %llu",
                  path.c_str(), (unsigned long long)h.rows, (unsigned long long)h.cols,
                  (unsigned long long)h.data_bytes, (unsigned long long)have);
  }
  // Reading on to the end also makes zlib verify the gzip CRC and length trailer, and finds any
  // bytes after the last gzip member.
  uint8_t extra[64];
  const uint64_t more = gz.read(extra, sizeof extra);
  CAGRA_EXPECTS(more == 0,
                "%s: trailing garbage: more data after the %llu x %llu values the IDX "
                "header announces",
                path.c_str(), (unsigned long long)h.rows, (unsigned long long)h.cols);
  host_matrix m =
      alloc_matrix(path, h.type, static_cast<int64_t>(h.rows), static_cast<int64_t>(h.cols));
  std::memcpy(m.data(), buf.data(), h.data_bytes);
  swap_f32_from_be(m);
  return m;
}

}  // namespace

host_matrix read_idx(const std::string& path) {
  input_file f(path);
  uint8_t head[2] = {0, 0};
  if (f.size() >= 2) {
    f.read(head, 2, "header");
    f.seek(0);
  }
  if (head[0] == 0x1f && head[1] == 0x8b) return read_gz(f);

  read_fn read = [&f](void* d, uint64_t n) {
    const uint64_t take = std::min(n, f.remaining());
    f.read(d, take, "header");
    return take;
  };
  const idx_header h = read_header(read, path);
  CAGRA_EXPECTS(f.remaining() >= h.data_bytes,
                "%s: truncated body: IDX header says %llu x %llu "
                "values (%llu bytes), the file has %llu after the header",
                path.c_str(), (unsigned long long)h.rows, (unsigned long long)h.cols,
                (unsigned long long)h.data_bytes, (unsigned long long)f.remaining());
  CAGRA_EXPECTS(f.remaining() == h.data_bytes,
                "%s: trailing garbage: %llu bytes after the "
                "values the IDX header announces",
                path.c_str(), (unsigned long long)(f.remaining() - h.data_bytes));
  host_matrix m =
      alloc_matrix(path, h.type, static_cast<int64_t>(h.rows), static_cast<int64_t>(h.cols), false);
  f.read_bulk(m.data(), h.data_bytes, "body");
  swap_f32_from_be(m);
  return m;
}

}  // namespace cagra::io::detail
