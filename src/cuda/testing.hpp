// Test and measurement hooks of the CUDA backend: not part of the backend interface, used by
// tests/cuda and the bench tools only.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cagra/cagra.hpp>

#include "cuda/search/host_lists.hpp"  // steady_ns
#include "cuda/search/multi_cta.hpp"   // CAGRA_MCTA_TRACE
#include "cuda/search/single_cta.hpp"  // kSingleCtaTraceSlots

namespace cagra::cuda::testing {

/** The query / data tile rows cuda::brute_force uses (0 restores the default). */
void set_brute_force_tiles(int64_t query_tile, int64_t data_tile);

/** Plain device memory for callers without CUDA headers: `bytes` (at least 1) on `device`,
 *  freed with device_free; blocking copies in either direction (cudaMemcpyDefault). */
void* device_alloc(size_t bytes, int device = 0);
void device_free(void* p) noexcept;
void copy_memory(void* dst, const void* src, size_t bytes);

/** Whether `idx`'s copy on `device` reads the stored rows from host memory (stored_rows = host;
 *  false when there is no copy). */
bool rows_on_host(const cagra::index& idx, int device = 0);

/** How many CTAs of `idx`'s last persistent kernel launched on `device` fit an SM (0: none
 *  launched yet). */
uint32_t persistent_ctas_per_sm(const cagra::index& idx, int device = 0);

/** One warp's list merge (primitives/warp_list.cuh) on the device: the sorted list (32 entries,
 *  (distance, id), kNoId ids after the real ones) with candidates cand_d/cand_i[0, n) (n <= 96)
 *  merged into it by merge_list (head 0) or merge_head (its first `head` entries exact), written
 *  back to list_d / list_i. */
void warp_list_merge(float* list_d, uint32_t* list_i, const float* cand_d, const uint32_t* cand_i,
                     uint32_t n, uint32_t head);

#if CAGRA_MCTA_TRACE
/** A build with -DCAGRA_MCTA_TRACE=1: device memory of n_ctas x kMultiCtaTraceSlots words that
 *  the next multi-CTA launches stamp for their first query (null: off). Not thread-safe. */
void set_multi_cta_trace(uint64_t* d_trace);
uint64_t* multi_cta_trace();
/** The same for the single-CTA kernel: [n_queries, kSingleCtaTraceSlots] words (single_cta.hpp)
 *  that the next single-CTA launches fill for every query of the call (null: off). */
void set_single_cta_trace(uint64_t* d_trace);
uint64_t* single_cta_trace();
/** The host's side of the last persistent call (steady_clock, ns): its job posted, and its
 *  lists all merged. */
struct persistent_host_stamps {
  uint64_t entered = 0;  // persistent_search's start (after cuda::search's device and index)
  uint64_t seeded = 0;   // the launch arguments, the key and the seed state ready: the post next
  uint64_t posted = 0, merged = 0;
  uint64_t heads_seen = 0;  // every CTA's list's first entry taken (merge_host_lists)
  /** The host's steps before the post, each stamped as it ends (kHostStepNames). */
  uint64_t step[8] = {};
};
/** What persistent_host_stamps::step stamps: cuda::search's checks, its device guard, the
 *  device index, the workspace lock, the filter; persistent_search's launch arguments, the
 *  pool and shared-memory check, the key and the idle check. */
constexpr const char* kHostStepNames[8] = {"checks", "device",      "index", "lock",
                                           "filter", "launch args", "pool",  "key"};
persistent_host_stamps& persistent_stamps();
/** Stamps the end of the host's step i before the post (a trace build only). */
#define CAGRA_HOST_STEP(i) \
  (::cagra::cuda::testing::persistent_stamps().step[i] = ::cagra::cuda::steady_ns())
#else
#define CAGRA_HOST_STEP(i) ((void)0)
#endif

}  // namespace cagra::cuda::testing
