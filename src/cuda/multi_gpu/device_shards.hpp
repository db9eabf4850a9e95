// The CUDA side of a sharded search of device queries (device_shards.cu says how it runs).
#pragma once

#include "core/backend.hpp"

namespace cagra::cuda {

/** Runs `job` (core/backend.hpp): broadcast of the queries to the shards' devices (NCCL), the
 *  shards' searches in parallel host threads, their lists back to the queries' device (NCCL), one
 *  merge kernel there; returns when the results are written. Shards that all live on the
 *  queries' device need no NCCL. */
void search_shards_on_devices(const core::device_shard_search& job);

}  // namespace cagra::cuda
