// Shared helpers for the tests: where the real test data lives, small loaders, temp files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>

namespace cagra::test {

/** Folder with the small real SIFT sets (bigann10k/, sift5k/): $CAGRA_DATA_DIR, else
 *  <repo>/data/shared (the device machine's carried copy), else <repo>/../shared/data.
 *  Fails the test (never skips) when none exists. */
std::string shared_data_dir();
/** Fashion-MNIST folder (Debian dataset-fashion-mnist): $CAGRA_FASHION_DIR or
 *  /usr/share/datasets/fashion-mnist. Fails the test when missing. */
std::string fashion_dir();

struct real_set {
  host_matrix base, queries;
  host_matrix truth;  // u32 [nq, >= 10], may be empty (then computed by brute force)
};
/** bigann10k: 9,900 x 128 u8 base, 100 queries, exact ground truth (100 per query). */
real_set bigann10k();
/** Fashion-MNIST: the first `n_base` training images and the first `n_queries` test images
 *  (u8, 784-d); ground truth computed by brute force (L2). */
real_set fashion(int64_t n_base, int64_t n_queries);

/** A filter allowing each of `rows` rows with probability `share`, drawn from `seed` (at least
 *  one row when share > 0): the filtered-search tests' random subsets. */
row_bitset random_subset(int64_t rows, double share, uint64_t seed);

/** The first `rows` rows of `m` (a copy). */
host_matrix head(const host_matrix& m, int64_t rows);
/** Rows [first, first + rows) of `m` (a copy). */
host_matrix slice(const host_matrix& m, int64_t first, int64_t rows);

/** Resources that run on the CPU backend (every other field at its default). */
resources cpu();

/** A small valid index made without `build`, so that error cases do not depend on the build
 *  algorithms: 20 random 8-d f32 vectors (seed 1), a ring graph of degree 4. */
index ring_index();

/** A fresh path in a per-test temporary folder (removed at process exit). */
std::string temp_path(const std::string& name);
/** Writes raw bytes to `path`. */
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
/** Reads the whole file. */
std::vector<uint8_t> read_bytes(const std::string& path);

}  // namespace cagra::test
