// The persistent batch-1 search's host side (persistent.cu).
#pragma once

#include <cstddef>
#include <cstdint>

#include <cagra/plan.hpp>

#include "cuda/state.hpp"

namespace cagra::cuda {

/** One batch-1 query (`q_bytes` of the query type) through the index's persistent kernel,
 *  launched on first use and again when the plan changes or it left on its own. The caller
 *  holds st.workspace_mutex and has made `device` current; ids/distances are host [plan.k].
 *  `filter`: null, or the device copy of the query's bitset of allowed rows (the workspace's
 *  shared filter, search.cu), which must not change while the kernel runs: the caller stops
 *  the kernel before it copies another bitset there. `host_allowed`: null, or the host words of
 *  a shared bitset whose disallowed rows the host drops as it merges the lists (the kernel then
 *  runs unfiltered: search_plan::filter_in_merge). */
void persistent_search(index_state& st, const search_plan& plan, metric m, const uint8_t* query,
                       size_t q_bytes, uint32_t* ids, float* distances, int device,
                       const uint32_t* filter, const uint32_t* host_allowed = nullptr);

/** Job `seq`'s words as the persistent kernel polls them (persistent.cuh): the query's bytes
 *  4 to a word (the last word zero-padded), then its seed state, low half first, then `norm`
 *  (multi_cta_args::query_norm), each word data | seq << 32; q_bytes / 4 rounded up + 3 words. */
void write_job_words(volatile uint64_t* words, const uint8_t* query, size_t q_bytes, uint64_t state,
                     int32_t norm, uint32_t seq);

/** |q|^2 of a byte query (u8 or i8 elements, `type`), the integer the kernel's byte distances
 *  start from (multi_cta_args::query_norm). */
int32_t byte_query_norm(dtype type, const uint8_t* query, size_t q_bytes);

}  // namespace cagra::cuda
