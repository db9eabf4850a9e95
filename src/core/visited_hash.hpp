// A set of row ids (the visited set of one CPU search, the ids already taken by a list merge):
// open addressing with linear probing over 2^bits slots.
//
// Each slot holds (generation << 32 | id); a slot whose generation is not the current one is
// empty, so clearing the table (per query, or the forgettable reset of paper §IV-B3) is O(1):
// bump the generation. The table is only memset when the 32-bit generation wraps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/bits.hpp"

namespace cagra::core {

class visited_hash {
 public:
  void resize(uint32_t bits) {
    if (bits == bits_) return;
    bits_ = bits;
    slots_.assign(size_t{1} << bits, 0);
    gen_ = 0;
    clear();
  }
  /** Forgets every id (O(1)). */
  void clear() {
    if (++gen_ == 0) {
      std::fill(slots_.begin(), slots_.end(), 0);
      gen_ = 1;
    }
    count_ = 0;
  }
  /** Inserts `id`; returns true if it was not there yet. The plan sizes the table so that it is
   *  never full (core/plan.cpp, min_hash_bits); the probe count is bounded all the same, and a
   *  full table answers "there" (the node is skipped) instead of probing forever. */
  bool insert(uint32_t id) {
    const uint64_t tag = uint64_t{gen_} << 32;
    const size_t mask = slots_.size() - 1;
    size_t h = cagra::bits::hash_home(id, bits_);
    for (size_t probe = 0; probe <= mask; ++probe) {
      uint64_t s = slots_[h];
      if ((s & ~uint64_t{0xFFFFFFFFu}) != tag) {
        slots_[h] = tag | id;
        ++count_;
        return true;
      }
      if (static_cast<uint32_t>(s) == id) return false;
      h = (h + 1) & mask;
    }
    return false;
  }
  /** More than half full: probing gets slow and a full table would loop forever. */
  bool nearly_full() const { return 2 * size_t{count_} >= slots_.size(); }
  uint32_t bits() const { return bits_; }

 private:
  std::vector<uint64_t> slots_;
  uint32_t bits_ = 0, gen_ = 0, count_ = 0;
};

}  // namespace cagra::core
