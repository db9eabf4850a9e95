// libFuzzer target: the .npy reader, as a matrix (read_matrix) and as neighbor ids
// (read_neighbors). Input: the file's bytes. An accepted matrix must survive a write + read round
// trip; the error message of a rejected file must be one line of printable ASCII (issue 17: file
// bytes are quoted escaped and truncated).
#include "fuzz_util.hpp"

namespace {

void check_message(const cagra::error& e) {
  cagra::fuzz::rejected(e);
  const std::string msg = e.what();
  cagra::fuzz::check(msg.size() < 4096, "an error message over 4 KiB");
  for (unsigned char c : msg)
    cagra::fuzz::check(c >= 0x20 && c < 0x7F, "an error message with a non-printable byte");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cagra;
  const std::string path = fuzz::write_input("in.npy", data, size);
  try {
    const host_matrix m = io::read_matrix(path);
    fuzz::check_matrix(m);
    fuzz::check_round_trip(m, "out.npy");
  } catch (const cagra::error& e) {
    check_message(e);
  }
  try {
    const io::neighbors_file nf = io::read_neighbors(path);
    fuzz::check_matrix(nf.ids);
    // .npy ids are range-checked to [0, 2^32) (read_npy), so the u32 type is the whole promise.
    fuzz::check(nf.ids.type() == dtype::u32, "read_neighbors returned ids that are not u32");
  } catch (const cagra::error& e) {
    check_message(e);
  }
  return 0;
}
