/**
 * @file hnswlib.hpp
 * @brief Moving an index to and from hnswlib's own file format (docs/hnswlib.md).
 *
 * Build on the GPU, serve on the CPU: export_hnswlib writes the file that hnswlib's
 * `HierarchicalNSW::saveIndex` writes, so that hnswlib (C++ `loadIndex`, Python
 * `hnswlib.Index.load_index`) and everything built on it can search a CAGRA graph.
 *
 *  - Level 0 is the CAGRA graph itself: M = ceil(degree / 2) (at least 2), so that hnswlib's
 *    level-0 lists (2M slots) hold every row's `degree` links.
 *  - The upper levels are made as hnswlib makes them: each live row draws its level from
 *    hnswlib's distribution (floor(-ln(U) / ln(M))); the rows of each level get their nearest
 *    rows of that level (a filtered search of the index), pruned with hnswlib's neighbour
 *    heuristic, plus reverse links pruned the same way, at most M each. The entry point is a
 *    row of the top level.
 *  - Vectors are written as float32 (hnswlib's L2Space / InnerProductSpace): u8, i8 and f16
 *    indexes are converted exactly. l2 maps to L2Space (squared L2); inner_product and cosine
 *    to InnerProductSpace (1 - dot); a cosine index's rows are already unit-norm, so queries
 *    must be normalized (Python hnswlib's space='cosine' does that).
 *  - Labels: the index's labels when it has them, else row numbers.
 *  - Deleted rows (cagra::remove) are written with hnswlib's deleted mark: never returned, still
 *    walked through, as in this library. `cagra::compact` first drops them instead.
 *
 * @code
 *   cagra::export_hnswlib(idx, "index.hnsw");
 *   // C++:    hnswlib::L2Space space(dim); hnswlib::HierarchicalNSW<float> h(&space,
 * "index.hnsw");
 *   // Python: p = hnswlib.Index(space="l2", dim=dim); p.load_index("index.hnsw")
 * @endcode
 */
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cagra/index.hpp>
#include <cagra/params.hpp>
#include <cagra/types.hpp>

namespace cagra {

/** Settings of export_hnswlib. */
struct hnswlib_export_params {
  /** hnswlib's M: at most M links per row on the upper levels, 2M on level 0 (which must hold
   *  the graph degree: 2M >= degree). 0 = auto = max(2, ceil(degree / 2)). */
  uint32_t M = 0;
  /** Seed of the level draw (same seed, same file). */
  uint64_t seed = 0;
  /** ef_construction written into the file: hnswlib uses it only for points added later. */
  uint32_t ef_construction = 200;
};

/** What export_hnswlib wrote and where its time went (wall-clock seconds). */
struct hnswlib_export_report {
  int64_t rows = 0;     ///< rows written (deleted ones included)
  int64_t deleted = 0;  ///< rows written with the deleted mark
  uint32_t M = 0;       ///< M used (level 0 holds 2M slots)
  /** Rows on each level: level_rows[0] = rows, level_rows[l] = rows whose level is >= l. */
  std::vector<int64_t> level_rows;
  int64_t entry_point = 0;   ///< row of the entry point (on the top level)
  uint64_t file_bytes = 0;   ///< size of the file written
  double link_seconds = 0;   ///< levels drawn, upper levels linked
  double write_seconds = 0;  ///< the file written
  double total_seconds = 0;
};

/** Writes `idx` in hnswlib's file format (see above) to `path`, through a temporary file and a
 *  rename (an existing file is only replaced by a complete one). The upper levels' searches run
 *  on `res`'s backend. Throws cagra::error for what hnswlib cannot hold: a negative label, a
 *  degree over 65535, M < 2 or 2M < degree. */
void export_hnswlib(const index& idx, const std::string& path,
                    const hnswlib_export_params& params = {}, const resources& res = {},
                    hnswlib_export_report* report = nullptr);

/** Settings of import_hnswlib. hnswlib files do not record their space: name the metric. */
struct hnswlib_import_params {
  /** l2 for L2Space files; inner_product for InnerProductSpace ones (Python's 'ip'); cosine
   *  for files built with Python's space='cosine' (vectors are normalized again). */
  cagra::metric metric = cagra::metric::l2;
  /** Expected vector dimension, checked against the file; 0 = take it from the file. */
  uint32_t dim = 0;
  /** Degree of the imported graph; 0 = auto = the file's level-0 capacity (2M), at most
   *  rows - 1. */
  uint32_t graph_degree = 0;
};

/** Reads a float32 hnswlib file (L2Space or InnerProductSpace) into an index: level 0 becomes
 *  the graph, each row's links made exactly `graph_degree` long (shorter lists filled with the
 *  nearest rows two hops away, longer ones cut to their nearest); the upper levels are dropped.
 *  Labels become the index's labels (none when they are the row numbers); rows with the deleted
 *  mark become deleted rows. Throws cagra::error for a malformed or truncated file, a label
 *  over 2^63 - 1, or a dimension that does not match. */
index import_hnswlib(const std::string& path, const hnswlib_import_params& params,
                     const resources& res = {});

}  // namespace cagra
