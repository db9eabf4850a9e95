// The kNN graph of a set built in overlapping partitions, so that one pass of the backend's
// kNN stage (NN-descent, or brute force for a small partition) holds only one partition: the
// memory-lean build of sets larger than a GPU (docs/large_builds.md).
//
// 1. Partition: k-means on a sample of the rows (Lloyd, squared L2 on the rows as f32; rows of a
//    cosine index are unit-norm, so L2 groups them as cosine does), then every row joins its two
//    nearest clusters. A row's neighbours mostly lie in one of the two, and the overlap joins
//    the clusters' graphs (DiskANN's partitioned build and cuVS's ACE take the same route).
//    A cluster above the size limit is split by k-means on its members (each member in its
//    nearest sub-cluster), down to contiguous pieces if the clusters will not separate; clusters
//    too small for a kNN graph of the requested degree are pooled into partitions of their own.
// 2. Each partition's kNN graph comes from the backend, the partition's rows gathered into one
//    matrix; local ids are mapped back to row ids.
// 3. Merge on the host: a row's lists from its partitions are merged by (distance, id), without
//    duplicates, cut to k. A row left with fewer than k neighbours (its partitions were both
//    small) is completed with random rows and their distances, then sorted.
// Same data, seed and limits: the same partitions on any backend and thread count; the graph
// is as deterministic as the backend's kNN stage (the CPU's is).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <cagra/cagra.hpp>

#include "core/backend.hpp"

namespace cagra::core {

/** What a partitioned kNN build did. */
struct partition_stats {
  int64_t partitions = 0;   ///< kNN graphs built
  int64_t largest = 0;      ///< rows of the largest partition
  int64_t rows_built = 0;   ///< rows summed over the partitions (about 2n)
  int64_t completed = 0;    ///< rows whose list was completed with random rows
  uint32_t iterations = 0;  ///< NN-descent iterations, the most of any partition
  int64_t resumed = 0;      ///< partitions loaded from params.checkpoint_dir
  bool pipelined = false;   ///< partitions built on a worker thread beside the merges
};

/** Overlapping partitions of the rows of `data`, each a list of ascending row ids with between
 *  `min_rows` and `max_rows` rows (a set of fewer than min_rows rows in all: one partition).
 *  Deterministic for a given `seed`. */
std::vector<std::vector<uint32_t>> partition_rows(const host_matrix& data, int64_t max_rows,
                                                  int64_t min_rows, uint64_t seed, int num_threads);

/** The kNN graph of `data` (storage type, as the whole-set kNN stage takes it) with k
 *  neighbours a row, built over partitions of at most `max_rows` rows (step 2 above runs on
 *  `be`); rows sorted by (distance, id), self excluded. With params.checkpoint_dir, each
 *  partition's lists are saved there, and loaded instead of built when they match
 *  (core/knn_checkpoint.hpp). With `overlap` (a GPU backend: the host is idle while it runs)
 *  and room on the host for a second partition's lists (MemAvailable), partition i + 1 is built
 *  on a worker thread while partition i is merged; the result is the same. */
knn_graph partitioned_knn(const backend_ops& be, const host_matrix& data, metric m, uint32_t k,
                          const knn_graph_params& params, uint64_t seed, int64_t max_rows,
                          const resources& res, partition_stats* stats, bool overlap = false);

/** Fewest rows a partition of a kNN graph of degree k may have. */
inline int64_t min_partition_rows(uint32_t k) {
  return std::max<int64_t>(int64_t{4} * (int64_t{k} + 1), 256);
}

}  // namespace cagra::core
