// Plan resolution, internal side: the limits of the GPU search kernels (the kernels read them
// from here, so the plan and the kernels cannot disagree) and the resolution functions that
// dispatch.cpp and the public plan_build / plan_search share. Every automatic value of the
// library is resolved in plan.cpp and plan_kernels.cpp (the GPU kernels' shapes) and nowhere else.
#pragma once

#include <cstdint>

#include <cagra/plan.hpp>

namespace cagra::core {

/** Limits and fixed shapes of the GPU search kernels (src/cuda/search). */
namespace gpu {
/** Largest internal top-M list of the single-CTA kernel (larger needs the multi-CTA kernel). */
constexpr uint32_t kSingleCtaMaxItopk = 512;
/** Single-CTA: top-M + candidates up to this many entries are merged by one warp, longer by
 *  the CTA. */
constexpr uint32_t kWarpMergeMax = 512;
/** Threads per CTA at most (the __launch_bounds__ of the single-CTA kernel). */
constexpr uint32_t kSingleCtaMaxBlock = 256;
/** Most parents per iteration of the single-CTA kernel (search_width; up to 128 is the
 *  multi-CTA kernel's CTAs per query). */
constexpr uint32_t kSingleCtaMaxWidth = 64;
/** Largest shared-memory visited hash of the single-CTA kernel (paper: 2^8..2^13 slots). */
constexpr uint32_t kSingleCtaMaxHashBits = 13;
/** Entries of each multi-CTA CTA's own top list (one per lane of warp 0). */
constexpr uint32_t kMultiCtaList = 32;
/** Largest itopk of the multi-CTA search: ceil(itopk / 32) CTAs per query, whose 32-entry lists
 *  (<= 4096 entries) one CTA merges in 32 KB of shared memory. */
constexpr uint32_t kMultiCtaMaxItopk = 4096;
/** Fewest iterations per CTA of the automatic multi-CTA iteration budget. */
constexpr uint32_t kMultiCtaMinIterations = 4;
/** Threads per CTA at most (the __launch_bounds__ of the multi-CTA kernel). */
constexpr uint32_t kMultiCtaMaxBlock = 256;
/** Host batches of at most this many queries go through mapped pinned memory (no copies). */
constexpr int64_t kMappedMaxQueries = 256;
/** Multi-CTA host batches of at most this many queries are merged on the host: beyond it the
 *  lists' PCIe traffic (n_ctas x min(k, 32) x 16 bytes a query) and the serial host merge
 *  outweigh the last CTA's merge on the device. */
constexpr int64_t kHostMergeMaxQueries = 16;
/** The multi-CTA kernel's latency path: the io paths on which the host merges the CTAs' lists
 *  (small host batches and the persistent kernel). */
inline bool host_merges(search_io io) {
  return io == search_io::host_merge || io == search_io::persistent;
}
/** On the latency path (host_merges) an initial node's distance takes half a team when its row
 *  is at most 2 x team 16-byte chunks (the half team's head loads: one memory round trip), so
 *  that twice as many nodes load at once (team_distance.cuh, kHeadChunks). */
inline bool multi_cta_half_init_team(uint32_t team, uint32_t row_chunks) {
  return team >= 4 && row_chunks <= 2 * team;
}
/** Byte vectors: the kernels sum products in int32, exact up to this dimension. */
constexpr uint32_t kMaxByteDim = 16384;
}  // namespace gpu

/** The shape of an index, as far as a plan is concerned. */
struct index_shape {
  int64_t rows = 0;
  uint32_t dim = 0, degree = 0;
  dtype type = dtype::f32;
  metric m = metric::l2;
};
index_shape shape_of(const index& idx);

/** Whether the GPU search kernels take a search of `shape` with internal list `itopk`. */
bool gpu_takes(const index_shape& shape, uint32_t itopk);

/** Throws unless a search of device memory can run: the CUDA backend allowed by `res` and a GPU
 *  visible (plan_visible's check, also made before a search into device labels). */
void expect_cuda_for_device_memory(const resources& res);

/** plan_search for a filter that already holds the index's tombstones (core::visible_rows):
 *  what search() calls, so that the tombstones are folded in once. */
search_plan plan_visible(const resources& res, const search_params& params, const index& idx,
                         uint32_t k, int64_t batch, memory_space space, const row_filter& visible);

/** The plan for backend `target` (resolved): `workers` is the GPU's SM count, or the threads a
 *  CPU search runs on (the automatic walker count of algo multi_cta). `params` are validated.
 *  Throws for a kernel asked for that cannot take the search. */
search_plan make_search_plan(backend target, const search_params& params, const index_shape& shape,
                             uint32_t k, int64_t batch, memory_space space, int workers,
                             filter_kind filter = filter_kind::none, int64_t allowed = 0);

/** A filtered search's path (exact or graph, into s.filter_path; s.allowed_rows) and list length
 *  for a filter allowing `allowed` rows (the fewest of any query). */
uint32_t plan_filter(search_plan& s, const search_params& params, const index_shape& shape,
                     uint32_t k, int64_t allowed);

/** The kNN algorithm `automatic` means for `rows` rows and degree k on `target`: brute force
 *  while it is cheaper than NN-descent (n <= max(10000, c k^2), c = 4 on the GPU, 2 on the CPU),
 *  NN-descent beyond. */
knn_algo resolve_knn_algo(knn_algo requested, int64_t rows, uint32_t k, backend target);

}  // namespace cagra::core
