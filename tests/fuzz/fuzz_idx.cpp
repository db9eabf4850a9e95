// libFuzzer target: the IDX reader (MNIST family), plain and gzip-compressed. Input: one mode byte,
// then bytes. Mode bit 0 clear: the bytes are the file (".idx"; the reader recognizes gzip by its
// magic, so this also fuzzes the gzip framing: truncated members, trailing bytes, bad CRCs). Bit 0
// set: the bytes are gzip-compressed here first and read as ".idx.gz", so that mutations of the
// IDX header and body reach the parser behind the decompressor. An accepted file must have the
// shape its header says: rows = dim 0, cols = the product of the others.
#include <zlib.h>

#include "fuzz_util.hpp"

namespace {

std::vector<uint8_t> gzip(const uint8_t* data, size_t n) {
  z_stream zs{};
  // windowBits 15 + 16: a gzip wrapper; level 1 keeps the per-input cost small.
  cagra::fuzz::check(deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK,
                     "deflateInit2");
  std::vector<uint8_t> out(deflateBound(&zs, n) + 32);
  zs.next_in = const_cast<Bytef*>(data);
  zs.avail_in = static_cast<uInt>(n);
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  cagra::fuzz::check(deflate(&zs, Z_FINISH) == Z_STREAM_END, "deflate");
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cagra;
  if (size < 1) return 0;
  const bool compress = data[0] & 1;
  std::string path;
  if (compress) {
    const std::vector<uint8_t> z = gzip(data + 1, size - 1);
    path = fuzz::write_input("in.idx.gz", z.data(), z.size());
  } else {
    path = fuzz::write_input("in.idx", data + 1, size - 1);
  }
  try {
    const host_matrix m = io::read_matrix(path);
    fuzz::check_matrix(m);
    if (compress) {  // the uncompressed bytes are known: header + values, nothing after
      const uint8_t* p = data + 1;
      const unsigned ndims = size - 1 >= 4 ? p[3] : 0;
      fuzz::check(ndims >= 1 && size - 1 >= 4 + 4 * size_t{ndims}, "an IDX file without dims");
      uint64_t total = 1;
      for (unsigned i = 0; i < ndims; ++i) {
        const uint8_t* b = p + 4 + 4 * i;
        total *= (uint64_t{b[0]} << 24) | (uint64_t{b[1]} << 16) | (uint64_t{b[2]} << 8) | b[3];
      }
      fuzz::check(total == static_cast<uint64_t>(m.rows() * m.cols()),
                  "IDX: rows x cols differ from the product of the dims");
      fuzz::check(size - 1 == 4 + 4 * size_t{ndims} + m.size_bytes(),
                  "IDX: accepted with a size its header does not give");
    }
  } catch (const cagra::error& e) {
    fuzz::rejected(e);
  }
  return 0;
}
