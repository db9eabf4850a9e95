// The search kernels over a batch of device-resident queries (run_kernels.cu): the single-CTA
// grid chunked by 65535 queries, or the multi-CTA launches chunked by what the device hash
// allows, with their workspaces grown and the hash halves rotated.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <cagra/plan.hpp>

#include "cuda/search/multi_cta.hpp"
#include "cuda/state.hpp"

namespace cagra::cuda {

/** The latency path of a small host batch through the multi-CTA kernel (search_io::host_merge):
 *  each CTA's best entries as tagged words in mapped memory (index_state::io.host_lists), which
 *  the host polls and merges (merge_host_lists) instead of synchronizing the stream, and, at
 *  batch 1, the query inside the launch. run_kernels fills in the list shape. */
struct latency_io {
  uint32_t tag = 0;  // this call's tag (never 0)
  const inline_query* query = nullptr;
  uint32_t query_bytes = 0;          // of *query
  uint32_t n_lists = 0, list_k = 0;  // per query: n_ctas lists of list_k entries (out)
};

/** A filter's bitsets in device memory (search/filter.cuh): query q's at words + q * stride
 *  (stride 0: one bitset for the batch); words == nullptr: no filter. */
struct device_filter {
  const uint32_t* words = nullptr;
  uint64_t stride = 0;
};

/** Throws unless a search of `idx` under `plan` can run on `device` (search.cu: the checks the
 *  entry points share). */
void check_search(const index& idx, const search_plan& plan, const uint32_t* ids, int device);

/** A filtered search's bitsets (host memory) copied into st's workspace (search.cu); no filter:
 *  {}. Queued on st's stream. */
device_filter upload_filter(index_state& st, const row_filter& f, int64_t nq);

/** The kernels of `plan` over `nq` device-resident queries of the query type (`d_queries`,
 *  4-byte aligned) into device [nq, k] ids/distances (distances may be null), queued on
 *  `stream`. The caller holds st.workspace_mutex and has made `device` current. With `io`, a
 *  multi-CTA search writes its lists there instead; with `filter`, only allowed rows are
 *  returned. */
void run_kernels(index_state& st, const search_plan& plan, metric m, const uint8_t* d_queries,
                 int64_t nq, uint32_t* d_ids, float* d_distances, int device, cudaStream_t stream,
                 latency_io* io = nullptr, device_filter filter = {});

/** Grows a tagged buffer, zeroed (tag 0 is never a call's). */
void reserve_zeroed(pinned_buffer<uint64_t>& b, size_t n);

}  // namespace cagra::cuda
