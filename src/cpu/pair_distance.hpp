// Distances between rows of one set, many pairs at a time: NN-descent's local join compares
// every new candidate of a node with every other candidate, so each row meets dozens of others.
// Computed pair by pair, each distance reads both rows from L2 (a node's ~100 candidate rows of
// 3 KB do not fit L1); pair_distance::block computes a tile of up to 4 rows against 3 (AVX2) or 6
// (AVX-512) at once, one accumulator a pair, so every block of a row loaded serves several pairs
// (distance.cpp has the per-pair kernels that search uses).
#pragma once
#include <cstddef>
#include <cstdint>

#include <cagra/types.hpp>

namespace cagra::cpu {

/** The ordering distance of `m` (as cpu::distance: squared L2, -dot, 1 - dot) between rows of
 *  type T (float, uint8_t or int8_t) of `dim` elements; a dot product that overflows to NaN
 *  (+inf and -inf summed) gives +inf. A pair's value has the same bits in
 *  every block it is computed in and in either order of the pair (integer rows: exactly the
 *  per-pair kernels' values on every CPU; float rows: one 8- or 16-lane accumulator a pair by
 *  the CPU's instruction set, a different summation order than the search kernels', so the last
 *  bits may differ from theirs and between AVX2 and AVX-512 CPUs). */
template <typename T>
class pair_distance {
 public:
  static constexpr size_t kMaxRows = 4;  // rows of one block

  pair_distance(metric m, size_t dim) : m_(m), dim_(dim) {}

  /** out[r * nb + j] = the distance of a[r] and b[j], for r < na <= kMaxRows and j < nb. */
  void block(const T* const* a, size_t na, const T* const* b, size_t nb, float* out) const;

  float operator()(const T* a, const T* b) const {
    float d = 0;
    block(&a, 1, &b, 1, &d);
    return d;
  }

 private:
  metric m_;
  size_t dim_;
};

extern template class pair_distance<float>;
extern template class pair_distance<uint8_t>;
extern template class pair_distance<int8_t>;

}  // namespace cagra::cpu
