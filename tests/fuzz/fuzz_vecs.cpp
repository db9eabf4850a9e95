// libFuzzer target: the TEXMEX readers (.fvecs, .ivecs, .bvecs). Input: one selector byte (mod 3
// picks the extension), then the file's bytes. An accepted file must be whole rows of its row-0
// dimension and survive a write + read round trip; .ivecs is also read as neighbor ids.
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cagra;
  if (size < 1) return 0;
  static const char* const kExt[] = {".fvecs", ".ivecs", ".bvecs"};
  const int sel = data[0] % 3;
  const std::string path = fuzz::write_input(std::string("in") + kExt[sel], data + 1, size - 1);
  try {
    const host_matrix m = io::read_matrix(path);
    fuzz::check_matrix(m);
    fuzz::check(size - 1 == static_cast<size_t>(m.rows()) * (4 + m.cols() * dtype_size(m.type())),
                "a vecs file was accepted with a size that is not rows x (4 + dim x element)");
    fuzz::check_round_trip(m, std::string("out") + kExt[sel]);
  } catch (const cagra::error& e) {
    fuzz::rejected(e);
  }
  if (sel == 1) {
    try {
      const io::neighbors_file nf = io::read_neighbors(path);
      fuzz::check_matrix(nf.ids);
      const uint32_t* ids = static_cast<const uint32_t*>(nf.ids.data());
      for (int64_t i = 0; i < nf.ids.rows() * nf.ids.cols(); ++i)
        fuzz::check(ids[i] < 0x80000000u || ids[i] == kInvalidId,  // -1 in the file: no neighbor
                    "read_neighbors returned an id >= 2^31 other than kInvalidId");
    } catch (const cagra::error& e) {
      fuzz::rejected(e);
    }
  }
  return 0;
}
