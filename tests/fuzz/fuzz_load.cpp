// libFuzzer target: cagra::load on raw bytes (docs/index_format.md). Nearly every mutation fails
// the header, size or checksum checks; fuzz_load_sealed.cpp re-applies the checksum to get past
// it. An index load accepts goes through check_loaded (graph ids, finiteness, analyze, search).
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cagra;
  const std::string path = fuzz::write_input("in.cagra", data, size);
  try {
    fuzz::check_loaded(load(path));
  } catch (const cagra::error& e) {
    fuzz::rejected(e);
  }
  return 0;
}
