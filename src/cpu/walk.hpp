// What the CPU's two graph walks share (search.cpp: a query on one thread; parallel_walk.cpp: a
// query over several threads): the list entry with its parent flag, the order of entries, the
// insertion into a sorted list, and the prefetches of the rows about to be read.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "core/bits.hpp"

namespace cagra::cpu::walk {

constexpr float kFar = std::numeric_limits<float>::infinity();

struct entry {
  float dist;
  uint32_t id;  // MSB = has been a parent (bits::kParentFlag)
};

/** The lists' order: by distance, ties by id (the parent flag ignored). */
inline bool nearer(const entry& a, const entry& b) {
  return a.dist < b.dist ||
         (a.dist == b.dist && (a.id & ~bits::kParentFlag) < (b.id & ~bits::kParentFlag));
}

/** Inserts `c` into the sorted `n` entries at `list` (the last one dropped) where it is nearer
 *  than the last: a binary search and a shift. False where it is not. */
inline bool insert(entry* list, size_t n, const entry& c) {
  if (!nearer(c, list[n - 1])) return false;
  entry* pos = std::upper_bound(list, list + n - 1, c, nearer);
  std::move_backward(pos, list + n - 1, list + n);
  *pos = c;
  return true;
}

/** Prefetches the graph row of `id` (its first and last ids): an entry that entered the list
 *  may be the next parent, and graph rows are read one after another, a miss each. */
inline void prefetch_graph_row(const uint32_t* graph, uint32_t id, uint32_t degree) {
  const uint32_t* g = graph + size_t(id) * degree;
  __builtin_prefetch(g);
  __builtin_prefetch(g + degree - 1);
}

/** Prefetches the first 512 bytes of a row (the rest streams in behind them). */
inline void prefetch_row(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t off = 0; off < std::min<size_t>(bytes, 512); off += 64) __builtin_prefetch(c + off);
}

}  // namespace cagra::cpu::walk
