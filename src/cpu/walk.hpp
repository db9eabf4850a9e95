// What the CPU's two graph walks share (search.cpp: a query on one thread; parallel_walk.cpp: a
// query over several threads): the list entry with its parent flag, the order of entries, and
// the prefetch of a row about to be measured.
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

/** Prefetches the first 512 bytes of a row (the rest streams in behind them). */
inline void prefetch_row(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t off = 0; off < std::min<size_t>(bytes, 512); off += 64) __builtin_prefetch(c + off);
}

}  // namespace cagra::cpu::walk
