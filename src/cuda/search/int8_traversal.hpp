// The int8 traversal's device launches (int8_traversal.cu): query encoding and exact
// re-ranking, queued on a stream.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <cagra/types.hpp>

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

}  // namespace cagra::cuda
