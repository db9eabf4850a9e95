// The initial-node pool (initial_pool.hpp).
#include "core/initial_pool.hpp"

#include <algorithm>

#include "core/bits.hpp"

namespace cagra::core {

uint32_t pool_rows_per_cta(uint64_t n, uint32_t row_stride, uint32_t n_ctas) {
  if (row_stride == 0 || n_ctas < kPoolMinCtas) return 0;
  const uint64_t fit =
      std::min(kPoolMaxRowsPerCta, kPoolSliceBytes / (row_stride + kPoolRowExtraBytes));
  uint64_t rows = std::min<uint64_t>(fit, n / (uint64_t{4} * n_ctas)) / 32 * 32;
  // Whole rounds of the scan where that gives up at most an eighth of the rows.
  const uint64_t whole = rows / kPoolScanThreads * kPoolScanThreads;
  if (whole * 8 >= rows * 7) rows = whole;
  return rows >= 32 ? static_cast<uint32_t>(rows) : 0;
}

std::vector<uint32_t> initial_pool_rows(uint64_t n, uint32_t p) {
  std::vector<uint32_t> rows(p);
  for (uint32_t j = 0; j < p; ++j) {
    // floor(j * n / p): n < 2^32 and p < 2^32, so the products fit 64 bits.
    const uint64_t lo = uint64_t{j} * n / p, hi = (uint64_t{j} + 1) * n / p;
    rows[j] = static_cast<uint32_t>(lo + bits::mix64(j ^ 0x1D17A1ull) % (hi - lo));
  }
  return rows;
}

}  // namespace cagra::core
