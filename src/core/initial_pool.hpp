// The initial-node pool of the multi-CTA latency path: a fixed set of rows, the same for every
// query, of which each of a query's CTAs holds a slice in shared memory (a compact copy of the
// rows and their ids). A CTA takes as its initial nodes the nearest row of each of 32 groups of
// its slice: with 64 CTAs x 768 rows (128-d u8) a scan of 49,152 rows a query, from shared
// memory (the persistent kernel loads its slice once), in place of ~100 random rows a CTA read
// from DRAM, and one iteration of the walk fewer for the same recall (bench/multi_cta_sim
// --pool --init; docs/cuda.md, "Initial nodes from a pool"). The plan decides
// (search_plan::pool_rows_per_cta, plan_kernels.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace cagra::core {

/** Shared memory a CTA gives its slice of the pool (rows and ids), at most: two CTAs of the
 *  persistent kernel still fit one SM of 228 KiB (the kernel's other shared memory is ~2 KiB on
 *  the latency path), so that up to four resident kernels of 64 CTAs (four indexes searched one
 *  query at a time) fit 132 SMs at once; a resident kernel's CTAs must all be resident. */
constexpr uint32_t kPoolSliceBytes = 108 * 1024;
/** Shared memory a slice takes a row beside the row itself: its id, and its squared norm (byte
 *  rows under L2, computed once a launch: the scan then takes x.x from it and computes q.x only,
 *  half the products). */
constexpr uint32_t kPoolRowExtraBytes = 8;
/** Rows a CTA's slice holds, at most. */
constexpr uint32_t kPoolMaxRowsPerCta = 1024;
/** Rows of a pool from which the walk takes one iteration fewer (the CPU model, 64 CTAs, 2
 *  iterations: 32K rows 0.971 on SIFT-wall-1M and 0.925 on the synthetic clustered set, 12K rows
 *  0.749 there against 0.79 for 3 iterations from random nodes; plan_kernels.cpp). */
constexpr uint64_t kPoolFewerIterationsRows = 32768;
/** Threads of a CTA that scans a slice, a row each (the pooled plan's block, plan_kernels.cpp):
 *  a slice of a whole number of such rounds leaves no round to one warp (SIFT-wall-1M, H200:
 *  768 rows a CTA scanned in ~2,200 SM clocks against ~2,560 for 800, 4 rounds of which the last
 *  had 32 rows). */
constexpr uint32_t kPoolScanThreads = 256;
/** Fewest CTAs a query that takes a pool (narrower shapes keep the random initial nodes: with
 *  one CTA a query, every path gives the same answer). */
constexpr uint32_t kPoolMinCtas = 8;

/** Rows of the pool per CTA for an index of n rows of row_stride bytes searched by n_ctas CTAs:
 *  as many as kPoolSliceBytes holds, at most kPoolMaxRowsPerCta and a pool of a quarter of the
 *  rows, a multiple of 32, and a multiple of kPoolScanThreads where that keeps at least 7/8 of
 *  them; or 0 (no pool: fewer than kPoolMinCtas CTAs, or fewer than 32 rows). */
uint32_t pool_rows_per_cta(uint64_t n, uint32_t row_stride, uint32_t n_ctas);

/** p distinct rows of [0, n), ascending: one pseudo-random row in each of p equal strata, a
 *  fixed choice (the same for every index of n rows). p <= n. */
std::vector<uint32_t> initial_pool_rows(uint64_t n, uint32_t p);

}  // namespace cagra::core
