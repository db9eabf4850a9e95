// The int8 traversal's device kernels (core/int8_traversal.cpp says what the traversal is):
//  - encode: f32 queries (the index's query type) into the walk's int8 codes, with the host's
//    arithmetic step for step (core::encode_queries), so a query walks the same nodes whether it
//    was encoded here or on the host;
//  - rerank: the walk returns each query's best candidates by their approximate distances; here
//    they get their exact distances from the index's stored rows (its device copy, the one an
//    exact search reads) and the k nearest are kept, ordered by (distance, id) like cpu::rerank.
//    One CTA per query: the query sits in shared memory as f32 (zero padded to the row stride),
//    each warp takes candidates in turn and reads a row with 16-byte loads, lanes summing a
//    strided slice and a shuffle reduction giving the distance; then each thread ranks its
//    candidates by counting the ones before them (a few hundred candidates: n^2 / threads
//    comparisons cost less than a sort's passes) and writes those ranked below k. A 384-d f32 set
//    reads 1.5 KB a candidate: 40 candidates are 61 KB a query.
// cuda::rerank is the host entry (backend_ops::rerank); the launches also serve the pipelined
// int8 search (search.cu).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include <cuda_fp16.h>

#include "cuda/search/int8_traversal.hpp"

#include "cuda/backend.hpp"
#include "cuda/check.hpp"

namespace cagra::cuda {
namespace {

constexpr uint32_t kThreads = 128;

__device__ inline float dot4(float4 a, float4 b) {
  return a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
}
__device__ inline float l2_4(float4 a, float4 b) {
  const float x = a.x - b.x, y = a.y - b.y, z = a.z - b.z, w = a.w - b.w;
  return x * x + y * y + z * z + w * w;
}

/** Sum over one row of f(query chunk, row chunk) for this lane's 16-byte chunks. */
template <typename T, bool L2>
__device__ float lane_sum(const float* q, const uint8_t* row, uint32_t row_stride, uint32_t lane) {
  float acc = 0.f;
  for (uint32_t b = lane * 16; b < row_stride; b += 32 * 16) {
    const uint4 raw = *reinterpret_cast<const uint4*>(row + b);
    if constexpr (sizeof(T) == 4) {
      const float4 x = *reinterpret_cast<const float4*>(&raw);
      const float4 y = *reinterpret_cast<const float4*>(q + b / 4);
      acc += L2 ? l2_4(y, x) : dot4(y, x);
    } else {
      const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 x = __half22float2(h[i]);
        const float2 y = *reinterpret_cast<const float2*>(q + b / 2 + 2 * i);
        acc += L2 ? (y.x - x.x) * (y.x - x.x) + (y.y - x.y) * (y.y - x.y) : y.x * x.x + y.y * x.y;
      }
    }
  }
  return acc;
}

/** Queries [0, nq), a CTA a query (grid-stride past the grid's size). */
template <typename T>
__global__ void rerank_kernel(const uint8_t* rows, uint32_t row_stride, int64_t n_rows,
                              const float* queries, int64_t nq, uint32_t dim,
                              const uint32_t* candidates, uint32_t n_cand, uint32_t k,
                              int metric_code, uint32_t* out_ids, float* out_dist) {
  extern __shared__ float smem[];
  const uint32_t padded = row_stride / sizeof(T);          // elements a row holds, padding included
  float* q = smem;                                         // [padded]
  float* dist = q + padded;                                // [n_cand]
  auto* ids = reinterpret_cast<uint32_t*>(dist + n_cand);  // [n_cand]
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const bool l2 = metric_code == int(metric::l2);
  for (int64_t qi = blockIdx.x; qi < nq; qi += gridDim.x) {
    for (uint32_t j = threadIdx.x; j < padded; j += blockDim.x)
      q[j] = j < dim ? queries[qi * dim + j] : 0.f;
    for (uint32_t j = threadIdx.x; j < n_cand; j += blockDim.x)
      ids[j] = candidates[qi * n_cand + j];
    for (uint32_t j = threadIdx.x; j < k; j += blockDim.x) {
      out_ids[qi * k + j] = kInvalidId;
      if (out_dist) out_dist[qi * k + j] = INFINITY;
    }
    __syncthreads();
    for (uint32_t c = warp; c < n_cand; c += blockDim.x / 32) {
      const uint32_t id = ids[c];
      if (int64_t{id} >= n_rows) continue;  // no candidate (kInvalidId)
      const uint8_t* row = rows + size_t(id) * row_stride;
      float acc = l2 ? lane_sum<T, true>(q, row, row_stride, lane)
                     : lane_sum<T, false>(q, row, row_stride, lane);
      for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
      if (lane == 0) dist[c] = l2 ? acc : metric_code == int(metric::cosine) ? 1.f - acc : -acc;
    }
    __syncthreads();
    // Rank by (distance, id, position); candidates without a row take no rank.
    for (uint32_t i = threadIdx.x; i < n_cand; i += blockDim.x) {
      const uint32_t id = ids[i];
      if (int64_t{id} >= n_rows) continue;
      const float d = dist[i];
      uint32_t rank = 0;
      for (uint32_t j = 0; j < n_cand && rank < k; ++j) {
        const uint32_t o = ids[j];
        if (int64_t{o} >= n_rows) continue;
        const float e = dist[j];
        rank += e < d || (e == d && (o < id || (o == id && j < i)));
      }
      if (rank < k) {
        out_ids[qi * k + rank] = id;
        if (out_dist) out_dist[qi * k + rank] = d;
      }
    }
    __syncthreads();  // the next query's rows go where this one's are read
  }
}

/** One warp per query row: the codes of core::encode_queries. */
__global__ void encode_kernel(const float* queries, int64_t nq, uint32_t dim, const float* offset,
                              const float* scale, int l2, int8_t* codes) {
  const int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const uint32_t lane = threadIdx.x % 32;
  if (row >= nq) return;
  const float* r = queries + row * dim;
  int8_t* o = codes + row * dim;
  const auto code = [](float v) { return int8_t(fminf(fmaxf(rintf(v), -127.f), 127.f)); };
  if (l2) {
    for (uint32_t j = lane; j < dim; j += 32) o[j] = code(__fmul_rn(r[j] - offset[j], scale[j]));
    return;
  }
  float most = 0.f;
  for (uint32_t j = lane; j < dim; j += 32) most = fmaxf(most, fabsf(r[j] / scale[j]));
  for (int d = 16; d > 0; d /= 2) most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, d));
  const float t = most > 0.f ? 127.f / most : 0.f;
  for (uint32_t j = lane; j < dim; j += 32) o[j] = code(__fmul_rn(r[j] / scale[j], t));
}

}  // namespace

void launch_encode_queries(const float* queries, int64_t nq, uint32_t dim, const float* offset,
                           const float* scale, bool l2, int8_t* codes, cudaStream_t stream) {
  if (nq == 0) return;
  constexpr uint32_t kRowsPerBlock = 8;
  encode_kernel<<<unsigned((nq + kRowsPerBlock - 1) / kRowsPerBlock), 32 * kRowsPerBlock, 0,
                  stream>>>(queries, nq, dim, offset, scale, l2 ? 1 : 0, codes);
  CAGRA_CUDA_TRY(cudaGetLastError());
}

void launch_rerank(const index_state& st, metric m, const float* queries,
                   const uint32_t* candidates, uint32_t n_candidates, int64_t nq, uint32_t k,
                   uint32_t* ids, float* distances, cudaStream_t stream) {
  const uint32_t elem = uint32_t(dtype_size(st.type));
  const size_t smem = size_t(st.row_stride / elem) * sizeof(float) +
                      size_t(n_candidates) * (sizeof(float) + sizeof(uint32_t));
  auto kernel = st.type == dtype::f32 ? rerank_kernel<float> : rerank_kernel<__half>;
  if (smem > 48 * 1024)
    CAGRA_CUDA_TRY(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  if (nq == 0) return;
  // A CTA a query, up to the grid's x limit (kept portable); past it the CTAs take queries in
  // turn. (A smaller grid for rows read from host memory, to leave SMs to the next chunk's walk,
  // gave nothing measurable: docs/benchmarks.md, "Stored rows in host memory".)
  const int64_t grid = std::min<int64_t>(nq, 65535);
  kernel<<<unsigned(grid), kThreads, smem, stream>>>(st.rows_data(), st.row_stride, st.rows,
                                                     queries, nq, st.dim, candidates, n_candidates,
                                                     k, int(m), ids, distances);
  CAGRA_CUDA_TRY(cudaGetLastError());
}

void rerank(const index& idx, dataset_view queries, const uint32_t* candidates,
            uint32_t n_candidates, uint32_t k, uint32_t* ids, float* distances, int device) {
  const dtype t = idx.storage_dtype();
  CAGRA_EXPECTS(t == dtype::f32 || t == dtype::f16,
                "the GPU re-ranking reads f32 or f16 rows (the index stores %s)", to_string(t));
  CAGRA_EXPECTS(queries.type == dtype::f32 && queries.space == memory_space::host &&
                    queries.cols == int64_t{idx.dim()},
                "the GPU re-ranking takes host f32 queries of dimension %u", idx.dim());
  CAGRA_EXPECTS(k >= 1 && k <= n_candidates, "rerank: k = %u must be in [1, %u]", k, n_candidates);
  const int64_t nq = queries.rows;
  if (nq == 0) return;
  device_guard guard(device);
  std::shared_ptr<index_state> st = device_rows(idx, device, rows_location::automatic);
  std::lock_guard<std::mutex> lock(st->workspace_mutex);
  stop_persistent(*st);
  search_workspace& w = st->io;
  const cudaStream_t s = st->stream.get();
  const size_t q_bytes = size_t(nq) * queries.row_bytes();
  const size_t n_cand = size_t(nq) * n_candidates, n_out = size_t(nq) * k;
  w.queries.reserve(q_bytes);
  w.candidates.reserve(n_cand);
  w.ids.reserve(n_out);
  if (distances) w.distances.reserve(n_out);
  CAGRA_CUDA_TRY(
      cudaMemcpyAsync(w.queries.data(), queries.data, q_bytes, cudaMemcpyHostToDevice, s));
  CAGRA_CUDA_TRY(cudaMemcpyAsync(w.candidates.data(), candidates, n_cand * sizeof(uint32_t),
                                 cudaMemcpyHostToDevice, s));
  launch_rerank(*st, idx.metric(), reinterpret_cast<const float*>(w.queries.data()),
                w.candidates.data(), n_candidates, nq, k, w.ids.data(),
                distances ? w.distances.data() : nullptr, s);
  CAGRA_CUDA_TRY(
      cudaMemcpyAsync(ids, w.ids.data(), n_out * sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
  if (distances)
    CAGRA_CUDA_TRY(cudaMemcpyAsync(distances, w.distances.data(), n_out * sizeof(float),
                                   cudaMemcpyDeviceToHost, s));
  st->stream.sync();
}

}  // namespace cagra::cuda
