// The upper levels of an hnswlib export (docs/hnswlib.md): level 0 is the CAGRA graph as it is;
// above it, hnswlib's hierarchy is rebuilt the way hnswlib itself would shape it: each live row
// draws its level from hnswlib's distribution, and the rows of each level are linked among
// themselves with hnswlib's neighbour-selection heuristic.
#pragma once

#include <cstdint>
#include <vector>

#include <cagra/index.hpp>
#include <cagra/params.hpp>

namespace cagra::core::hnsw {

/** The rows of one upper level and their links (at most M each). */
struct level_links {
  std::vector<uint32_t> rows;    ///< rows whose level is >= this level, ascending
  std::vector<uint32_t> counts;  ///< links of rows[i]
  std::vector<uint32_t> links;   ///< [rows.size(), M]: row ids, the first counts[i] used
};

struct hierarchy {
  std::vector<uint8_t> level;  ///< level of every row (deleted rows: 0)
  int max_level = 0;
  uint32_t entry_point = 0;        ///< a row of the top level
  std::vector<level_links> upper;  ///< upper[l - 1] is level l, for l = 1 .. max_level
};

/** hnswlib's level of a row: floor(-ln(U) * mult), U uniform in (0, 1] drawn from (seed, row). */
int draw_level(uint64_t seed, uint64_t row, double mult);

/** Draws the levels of the live rows of `idx` (mult = 1 / ln(M)) and links every upper level:
 *  each row's nearest rows of the same level (a search of `idx` filtered to them, on `res`'s
 *  backend), hnswlib's heuristic to M, then reverse links, a list over M pruned again by the
 *  heuristic (hnswlib's mutual connection). Deterministic for a given seed on the CPU. */
hierarchy build_hierarchy(const resources& res, const index& idx, uint32_t M, uint64_t seed);

}  // namespace cagra::core::hnsw
