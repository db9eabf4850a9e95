// What the cagra::save / cagra::load tests (test_serialize*.cpp) share: random indexes, a
// reference XXH64 (the file checksum, written from the xxHash specification independently of the
// library's streaming version), byte-level edits of a file that keep its checksum valid, a small
// valid sample file, and the check that a load fails with a message naming the file.
// Definitions: serialize_test_helpers.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>

namespace cagra::test::serialize {

/** Random vectors of `t` (finite values for the float types) and a random graph whose rows hold
 *  `degree` distinct ids, none equal to the row's own id. */
cagra::index random_index(cagra::dtype t, cagra::metric m, int64_t rows, int64_t dim,
                          uint32_t degree, uint32_t seed);

/** XXH64 with seed 0 (the checksum of docs/index_format.md), one-shot, written from the xxHash
 *  specification independently of the library's streaming version. */
uint64_t xxh64(const uint8_t* p, size_t n);
/** The checksum docs/index_format.md defines, over `n` bytes: xxh64. */
uint64_t doc_checksum(const uint8_t* p, size_t n);

/** Little-endian fields of a file's bytes. */
void put_u32(std::vector<uint8_t>& f, size_t off, uint32_t v);
void put_u64(std::vector<uint8_t>& f, size_t off, uint64_t v);
uint64_t get_u64(const std::vector<uint8_t>& f, size_t off);
/** Recomputes the trailing checksum after a deliberate edit, so only the edited field is wrong. */
void reseal(std::vector<uint8_t>& f);

/** A valid file (100 x 8 f32, degree 4) as bytes, and where its parts start. */
struct sample_file {
  std::vector<uint8_t> bytes;
  size_t vectors_at = 64, graph_at = 64 + 100 * 8 * 4;
};
sample_file valid_file();

/** Expects load(bytes) to throw cagra::error whose message names the file and contains `what`. */
void expect_load_error(const std::vector<uint8_t>& bytes, const std::string& name,
                       const std::string& what);

/** Files in `dir` whose name contains ".tmp." (leftover temporaries of save). */
int count_temp_files(const std::string& dir);

}  // namespace cagra::test::serialize
