// libFuzzer target: the ann-benchmarks HDF5 reader, through the public functions: read_matrix
// ("train", and ":test"), and read_neighbors ("neighbors" + "distances"). Input: the file's bytes.
//
// libhdf5 itself is not instrumented and, since issue 17, runs in a forked reader process
// (src/core/io/isolate.hpp): its coverage does not reach libFuzzer, so this target mutates almost
// blindly and runs slowly (three child processes per input). What it checks is the containment: a
// file that crashes, hangs or bloats libhdf5 must come back as a cagra::error, and an accepted
// matrix must be well-formed. scripts/fuzz.sh gives it its own short budget.
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cagra;
  const std::string path = fuzz::write_input("in.hdf5", data, size);
  for (const char* suffix : {"", ":test"}) {
    try {
      fuzz::check_matrix(io::read_matrix(path + suffix));
    } catch (const cagra::error& e) {
      fuzz::rejected(e);
    }
  }
  try {
    const io::neighbors_file nf = io::read_neighbors(path);
    fuzz::check_matrix(nf.ids);
    fuzz::check(nf.distances.empty() ||
                    (nf.distances.rows() == nf.ids.rows() && nf.distances.cols() == nf.ids.cols()),
                "read_neighbors: distances and ids differ in shape");
  } catch (const cagra::error& e) {
    fuzz::rejected(e);
  }
  return 0;
}
