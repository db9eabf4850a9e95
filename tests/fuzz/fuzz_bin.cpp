// libFuzzer target: the big-ann-benchmarks binary readers (.fbin, .u8bin, .i8bin, .ibin).
// Input: one selector byte (its value mod 4 picks the extension), then the file's bytes. A file
// the reader accepts must have the shape its header says and survive a write + read round trip;
// for .ibin, read_neighbors must return ids < 2^31 or kInvalidId (-1 in the file) and distances
// of the ids' shape.
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cagra;
  if (size < 1) return 0;
  static const char* const kExt[] = {".fbin", ".u8bin", ".i8bin", ".ibin"};
  const char* ext = kExt[data[0] % 4];
  const std::string path = fuzz::write_input(std::string("in") + ext, data + 1, size - 1);
  try {
    const host_matrix m = io::read_matrix(path);
    fuzz::check_matrix(m);
    fuzz::check(
        size - 1 == 8 + m.size_bytes() || (data[0] % 4 == 3 && size - 1 == 8 + 2 * m.size_bytes()),
        "a .bin file was accepted with a size its header does not give");
    fuzz::check_round_trip(m, std::string("out") + ext);
  } catch (const cagra::error& e) {
    fuzz::rejected(e);
  }
  if (data[0] % 4 == 3) {
    try {
      const io::neighbors_file nf = io::read_neighbors(path);
      fuzz::check_matrix(nf.ids);
      const uint32_t* ids = static_cast<const uint32_t*>(nf.ids.data());
      for (int64_t i = 0; i < nf.ids.rows() * nf.ids.cols(); ++i)
        fuzz::check(ids[i] < 0x80000000u || ids[i] == kInvalidId,  // -1 in the file: no neighbor
                    "read_neighbors returned an id >= 2^31 other than kInvalidId");
      fuzz::check(nf.distances.empty() || (nf.distances.rows() == nf.ids.rows() &&
                                           nf.distances.cols() == nf.ids.cols()),
                  "read_neighbors: distances and ids differ in shape");
    } catch (const cagra::error& e) {
      fuzz::rejected(e);
    }
  }
  return 0;
}
