// Checkpoints of the kNN stage (knn_graph_params::checkpoint_dir; docs/large_builds.md
// "Checkpoints"): each finished partition's kNN lists are saved as DIR/knn-part-P-of-N.bin, so
// that a build stopped part way (a crash, a time limit) resumes from the partitions it finished.
//
// File: "CAGRAKNP", u32 version 1, u32 0, u64 fingerprint, i64 rows, u32 k, u32 0, then the
// partition's local ids (rows x k u32) and distances (rows x k f32), then the XXH64 of every
// byte before it. The fingerprint is an XXH64 of everything the lists depend on: the set's shape,
// element type and metric, k, the kNN settings and seed, the partition's number, its row ids and
// the bytes of its rows; a file whose fingerprint or checksum does not match is built again
// (and overwritten), never used. Files are written to a temporary name and renamed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>

namespace cagra::core {

/** The fingerprint of partition `part` of `parts`: its `rows` (ids into the whole set of
 *  `all_rows` rows) gathered in `sub`, lists of `k` by `algo` with `params` and `seed`. */
uint64_t knn_part_fingerprint(const host_matrix& sub, const std::vector<uint32_t>& rows,
                              int64_t all_rows, metric m, uint32_t k, knn_algo algo,
                              const knn_graph_params& params, uint64_t seed, size_t part,
                              size_t parts);

/** DIR/knn-part-P-of-N.bin */
std::string knn_part_path(const std::string& dir, size_t part, size_t parts);

/** The saved lists of a partition into `out` when the file exists and matches `fingerprint`,
 *  `rows` and `k`; otherwise false, with the reason in `why` ("" when there is no file). */
bool load_knn_part(const std::string& path, uint64_t fingerprint, int64_t rows, uint32_t k,
                   knn_graph& out, std::string& why);

/** Saves `g` (a partition's local lists) under `path` (temporary file, then rename). */
void save_knn_part(const std::string& path, uint64_t fingerprint, const knn_graph& g);

}  // namespace cagra::core
