// Plan resolution, the GPU kernels' part: which search kernel a GPU search runs and its shape
// (CTAs, threads, team, iterations, initial nodes, visited hash, how the batch travels), in
// plan_kernels.cpp; the rules shared with the CPU's plan stay in plan.cpp. Internal to
// plan*.cpp.
#pragma once

#include <cstdint>

#include "core/plan.hpp"

namespace cagra::core {

/** Random initial draws of the single-CTA kernel and the CPU search (plan.cpp). */
uint32_t single_initial_nodes(const search_plan& s, const index_shape& shape);

/** The smallest visited hash (log2 of its slots) of the tables emptied once half full
 *  (plan.cpp). */
uint32_t min_hash_bits(const search_plan& s, uint32_t n_cand);

/** `automatic` when hash_bits is 0, else the requested size, at most `cap` (plan.cpp). */
uint32_t resolve_hash_bits(const search_params& p, const search_plan& s, uint32_t n_cand,
                           uint32_t automatic, uint32_t cap);

/** The GPU part of make_search_plan, after the settings every backend shares: the kernel
 *  (paper §IV-C3), its automatic shape and s.io (plan_kernels.cpp). */
void plan_gpu_search(search_plan& s, const search_params& p, const index_shape& shape,
                     int64_t batch, memory_space space, int sm_count, filter_kind filter);

}  // namespace cagra::core
