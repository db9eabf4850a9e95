// Host side of the multi-CTA latency path: tagged words in mapped memory (host_lists.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cagra::cuda {

/** The host's steady clock in nanoseconds (the stamps of traced calls). */
uint64_t steady_ns();

/** Waits for one query's n_lists sorted lists of list_k (id, distance) entries, tagged, and
 *  merges them into its k nearest, each id once (padded with kInvalidId, +inf), spinning on
 *  mapped memory. False when the stream finished before every list arrived (a failed kernel).
 *  `allowed` (host words of a bitset over the rows, or null): rows whose bit is clear are
 *  skipped (search_plan::filter_in_merge).
 *  `heads_seen_ns` (traced calls; null otherwise): the steady clock when the last list's first
 *  entry had been taken, so that the host's work after the last list's arrival can be told from
 *  the wait for it. */
bool merge_host_lists(const uint64_t* words, uint32_t n_lists, uint32_t list_k, uint32_t k,
                      uint32_t tag, cudaStream_t stream, uint32_t* ids, float* distances,
                      const uint32_t* allowed = nullptr, uint64_t* heads_seen_ns = nullptr);

}  // namespace cagra::cuda
