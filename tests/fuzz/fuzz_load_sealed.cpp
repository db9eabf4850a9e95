// libFuzzer target: cagra::load with a valid checksum. Input: an index file whose last 8 bytes
// are replaced by the XXH64 (seed 0) of everything before them, as save writes it, so that
// mutated headers, vectors and graphs get past the checksum to the field, finiteness and graph
// checks, and whatever load accepts is searched (check_loaded). The seeds are small valid indexes.
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cagra;
  std::vector<uint8_t> file(data, data + size);
  if (size >= 8) {
    const uint64_t h = fuzz::xxh64(file.data(), size - 8);
    for (int i = 0; i < 8; ++i) file[size - 8 + i] = static_cast<uint8_t>(h >> (8 * i));
  }
  const std::string path = fuzz::write_input("in.cagra", file.data(), file.size());
  try {
    fuzz::check_loaded(load(path));
  } catch (const cagra::error& e) {
    fuzz::rejected(e);
  }
  return 0;
}
