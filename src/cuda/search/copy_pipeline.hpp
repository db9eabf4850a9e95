// The copy path of a large host batch, pipelined (copy_pipeline.cu).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include <cagra/plan.hpp>

#include "cuda/search/run_kernels.hpp"
#include "cuda/state.hpp"

namespace cagra::cuda {

/** Whether a host batch of `nq` queries under `plan` (io copy) goes through the pipeline: the
 *  single-CTA kernel (its launches share no workspace, so chunks may run side by side) and at
 *  least two chunks' worth of queries. */
bool use_copy_pipeline(const search_plan& plan, int64_t nq);

/** Device work around each chunk's search (search.cu: cosine rows normalized on the device, the
 *  int8 traversal): `prepare` makes the rows the kernels search from the chunk's uploaded rows
 *  (device [n, query_bytes]) and returns them. With `finish`, the kernels write plan.k ids a
 *  query into `found` (no distances) and `finish` makes the chunk's [n, out_k] ids / distances
 *  (distances may be null), which go down; without it the kernels' results go down. */
struct chunk_stages {
  uint32_t out_k = 0;
  std::function<const uint8_t*(const uint8_t* rows, int64_t first, int64_t n, cudaStream_t)>
      prepare;
  std::function<void(const uint8_t* rows, const uint32_t* found, int64_t first, int64_t n,
                     uint32_t* ids, float* distances, cudaStream_t)>
      finish;
};

/** Searches `nq` host queries of `query_bytes` bytes each (the query type) in chunks on the
 *  workspace's pipeline streams: each chunk's queries are copied into pinned staging and up,
 *  searched, and its results copied down and out into `ids` / `distances` (may be null) while
 *  the next chunks are searched. Same results as one launch over the batch. The caller holds
 *  st.workspace_mutex and has made `device` current; returns when every result is written. */
void search_copy_pipelined(index_state& st, const search_plan& plan, metric m,
                           const uint8_t* queries, size_t query_bytes, int64_t nq, uint32_t* ids,
                           float* distances, int device, device_filter filter,
                           const chunk_stages* stages = nullptr);

}  // namespace cagra::cuda
