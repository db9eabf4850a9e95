// The int8 traversal's device launches (int8_traversal.cu): query encoding and exact
// re-ranking, queued on a stream.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <cagra/types.hpp>

#include <cagra/plan.hpp>

#include "core/int8_codec.hpp"
#include "cuda/search/run_kernels.hpp"
#include "cuda/state.hpp"

namespace cagra::cuda {

/** f32 device queries [nq, dim] into int8 codes [nq, dim] as core::encode_queries makes them
 *  (the same bits): `offset` / `scale` are the codec's [dim] device arrays, `l2` its metric
 *  kind (one scale and the offsets; otherwise per-dimension scales and a per-query factor). */
void launch_encode_queries(const float* queries, int64_t nq, uint32_t dim, const float* offset,
                           const float* scale, bool l2, int8_t* codes, cudaStream_t stream);

/** Exact re-ranking on the device: f32 queries [nq, st.dim], each with `n_candidates` candidate
 *  rows (ids >= st.rows skipped), against the stored rows of `st` (f32 or f16) under `m`; the k
 *  nearest by (distance, id) into ids / distances [nq, k] (distances may be null; slots without
 *  a candidate: kInvalidId / +inf). */
void launch_rerank(const index_state& st, metric m, const float* queries,
                   const uint32_t* candidates, uint32_t n_candidates, int64_t nq, uint32_t k,
                   uint32_t* ids, float* distances, cudaStream_t stream);

/** The codec's offsets and scales into w.codec ([2, dim]), queued on `stream`. */
void upload_codec(const core::int8_codec& codec, search_workspace& w, cudaStream_t stream);
/** The int8 walk and re-ranking of nq device f32 queries (the index's query type, 4-byte aligned)
 *  in one go on `stream` (int8_search.cu): encoded into codes_st's workspace, walked on codes_st
 *  under `walk` (core::int8_walk_plan), re-ranked from rows_st under `m` into device ids /
 * distances [nq, k] (distances may be null). The caller holds both workspaces and has made `device`
 *  current; `filter` is in codes_st's workspace. */
void int8_walk_device(const core::int8_codec& codec, index_state& codes_st,
                      const index_state& rows_st, metric m, const search_plan& walk, uint32_t k,
                      const float* queries, int64_t nq, uint32_t* ids, float* distances,
                      device_filter filter, int device, cudaStream_t stream);

}  // namespace cagra::cuda
