// The initial-node pool of the multi-CTA latency path (core/initial_pool.hpp): p distinct rows
// of [0, n), ascending, one in each of p equal strata, the same every time; a slice per CTA that
// fits its shared memory and a pool of at most a quarter of the rows.
#include <gtest/gtest.h>

#include "core/initial_pool.hpp"

namespace cagra::test {
namespace {

TEST(InitialPool, DistinctAscendingOnePerStratumAndFixed) {
  for (const auto& [n, p] : {std::pair<uint64_t, uint32_t>{1000, 1000},
                             {1000, 7},
                             {1000000, 65536},
                             {(uint64_t{1} << 31) - 1, 65536}}) {
    const std::vector<uint32_t> rows = core::initial_pool_rows(n, p);
    ASSERT_EQ(rows.size(), p);
    for (uint32_t j = 0; j < p; ++j) {
      ASSERT_GE(uint64_t{rows[j]}, uint64_t{j} * n / p) << n << " " << j;
      ASSERT_LT(uint64_t{rows[j]}, (uint64_t{j} + 1) * n / p) << n << " " << j;
    }
    EXPECT_EQ(rows, core::initial_pool_rows(n, p)) << "a fixed choice";
  }
}

TEST(InitialPool, SliceFitsSharedMemoryAndAQuarterOfTheRows) {
  // (128 + 8) x 800 <= 108 KiB; 768, three whole rounds of kPoolScanThreads, keep > 7/8 of 800
  EXPECT_EQ(core::pool_rows_per_cta(1000000, 128, 64), 768u);
  EXPECT_EQ(core::pool_rows_per_cta(1000000, 512, 64), 192u);
  EXPECT_EQ(core::pool_rows_per_cta(1000000, 8192, 64), 0u);        // fewer than 32 rows fit
  EXPECT_EQ(core::pool_rows_per_cta(4 * 500 * 64, 128, 64), 480u);  // a quarter of the rows
  EXPECT_EQ(core::pool_rows_per_cta(4 * 300 * 64, 128, 64), 256u);  // 288: one whole round
  EXPECT_EQ(core::pool_rows_per_cta(1000000, 256, 64), 416u);       // 256 would keep < 7/8
  EXPECT_EQ(core::pool_rows_per_cta(1000000, 16, 64), 1024u);       // at most kPoolMaxRowsPerCta
  EXPECT_EQ(core::pool_rows_per_cta(10000, 128, 64), 32u);
  EXPECT_EQ(core::pool_rows_per_cta(4 * 32 * 64 - 1, 128, 64), 0u);
  EXPECT_EQ(core::pool_rows_per_cta(1000000, 128, core::kPoolMinCtas - 1), 0u);
  for (uint32_t stride : {16u, 64u, 128u, 256u, 512u, 1536u})
    EXPECT_EQ(core::pool_rows_per_cta(uint64_t{1} << 30, stride, 64) % 32, 0u) << stride;
}

}  // namespace
}  // namespace cagra::test
