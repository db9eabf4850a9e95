// Exact k-NN by brute force on the GPU: the fast ground-truth path and the exact baseline whose
// QPS is quoted beside the CAGRA search.
//
//  1. Data and queries go to the device in their own type and are widened to f32 there (u8/i8/f16
//     values are exact in f32); row norms are computed once.
//  2. Queries are taken in tiles of up to kQueryTile rows, data in tiles sized so that the
//     [query tile x data tile] f32 product stays under kTileBytes. One cuBLAS SGEMM (plain FP32:
//     CUBLAS_DEFAULT_MATH, no TF32) gives the dot products of a tile; the nq x N matrix is never
//     materialized.
//  3. One CTA per query turns its row into distances (l2: |q|^2 + |x|^2 - 2 q.x, clamped at 0;
//     ip: -q.x; cosine: 1 - q.x on unit rows), keeps those below its running k-th key in a shared
//     buffer and merges buffer + running top-k by a bitonic sort when the buffer fills. Keys are
//     (orderable distance bits << 32 | id), so ties break by id as on the CPU.
//  4. Refinement: the k survivors' distances are recomputed directly (sum of (q - x)^2, or the
//     dot product) and the row is sorted again by (distance, id). The expanded form loses digits
//     to cancellation for f32 data; the recomputed distances match the CPU's to rounding, and for
//     u8/i8 data (every partial sum an integer below 2^24 for dim * 255^2 < 2^24) exactly.
//  5. A mask (brute_force_masked: the exact path of a filtered search with per-query bitsets)
//     leaves the rows a query's bitset does not allow out of step 3; a query with fewer than k
//     allowed rows gets kInvalidId / +inf in the remaining slots.
//     Candidates are chosen with the expanded form, so an f32 neighbor whose distance is within
//     rounding of the k-th may swap with it (recall stays ~1, never the ids of a different set).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "core/bits.hpp"
#include "core/device_memory.hpp"
#include "cuda/backend.hpp"
#include "cuda/brute_force/context.hpp"
#include "cuda/check.hpp"
#include "cuda/memory.hpp"
#include "cuda/primitives/bitonic.cuh"
#include "cuda/state.hpp"
#include "cuda/testing.hpp"

namespace cagra::cuda {
namespace {

constexpr int kThreads = 256;
// The tile shapes are core's (core/device_memory.hpp), which models this file's allocations.
constexpr int64_t kQueryTile = core::gpu::kBruteForceQueryTile;
constexpr size_t kTileBytes = core::gpu::kBruteForceTileBytes;  // the f32 dot-product tile
constexpr unsigned long long kMaxKey = ~0ull;

using bits::next_pow2;
using brute_force_detail::context;
using brute_force_detail::context_lease;
using brute_force_detail::cublas_handle;

/** The running top-k slots (a power of two >= k) and the shared sort size (slots + buffer). */
struct select_sizes {
  uint32_t slots, sort_size, buffer;
};
select_sizes sizes_for(uint32_t k) {
  const uint32_t slots = next_pow2(k);
  const uint32_t buffer = std::max<uint32_t>(slots, 2 * kThreads);
  const uint32_t sort_size = next_pow2(slots + buffer);
  return {slots, sort_size, sort_size - slots};
}

__device__ __forceinline__ uint32_t orderable(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float from_orderable(uint32_t u) {
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}

template <typename T>
__device__ __forceinline__ float widen(T v) {
  return static_cast<float>(v);
}
template <>
__device__ __forceinline__ float widen<uint16_t>(uint16_t v) {  // f16 bits
  return __half2float(__ushort_as_half(v));
}

template <typename T>
__global__ void widen_kernel(const T* in, float* out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = widen(in[i]);
}

/** out[i, :] = row rows[i] of the index's device copy (`stride` bytes apart), widened to f32. */
template <typename T>
__global__ void gather_widen_kernel(const uint8_t* data, size_t stride, const uint32_t* rows,
                                    int64_t n, int64_t dim, float* out) {
  const size_t total = size_t(n) * size_t(dim);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t r = i / size_t(dim), c = i % size_t(dim);
    out[i] = widen(reinterpret_cast<const T*>(data + size_t(rows[r]) * stride)[c]);
  }
}

__global__ void norms_kernel(const float* x, int64_t rows, int64_t dim, float* out) {
  const int64_t warp = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (warp >= rows) return;
  const float* r = x + warp * dim;
  float s = 0.f;
  for (int64_t j = lane; j < dim; j += 32) s = fmaf(r[j], r[j], s);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if (lane == 0) out[warp] = s;
}

/** One CTA per query of the tile: merges the tile's distances into the query's running top-k
 *  (global `state`, [tile queries, slots] keys, ascending, kMaxKey for empty). */
__global__ void select_kernel(const float* dots, int64_t data_tile, int64_t d0, int64_t q0,
                              const float* qnorm, const float* xnorm, int metric_id, uint32_t k,
                              uint32_t slots, uint32_t sort_size, bool exclude_self, bool first,
                              const uint32_t* mask, uint64_t mask_words,
                              unsigned long long* state) {
  extern __shared__ unsigned long long keys[];
  __shared__ uint32_t count;
  __shared__ unsigned long long threshold;
  const int64_t qi = blockIdx.x;  // query index in the tile
  const int64_t q = q0 + qi;      // global query index
  unsigned long long* st = state + qi * slots;
  for (uint32_t i = threadIdx.x; i < sort_size; i += blockDim.x)
    keys[i] = (i < slots && !first) ? st[i] : kMaxKey;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  if (threadIdx.x == 0) threshold = keys[k - 1];
  __syncthreads();
  const uint32_t buffer = sort_size - slots;
  const float* row = dots + qi * data_tile;
  const float qn = metric_id == 0 ? qnorm[q] : 0.f;
  const uint32_t* allowed = mask ? mask + q * mask_words : nullptr;
  for (int64_t base = 0; base < data_tile; base += blockDim.x) {
    const int64_t j = base + threadIdx.x;
    if (j < data_tile) {
      const int64_t id = d0 + j;
      if (!(exclude_self && id == q) &&
          (!allowed || ((__ldg(allowed + (id >> 5)) >> (id & 31)) & 1u))) {
        const float c = row[j];
        float d;
        if (metric_id == 0)
          d = fmaxf(qn + xnorm[id] - 2.f * c, 0.f);
        else if (metric_id == 1)
          d = -c;
        else
          d = 1.f - c;
        const unsigned long long key =
            (static_cast<unsigned long long>(orderable(d)) << 32) | uint32_t(id);
        if (key < threshold) keys[slots + atomicAdd(&count, 1u)] = key;
      }
    }
    __syncthreads();
    // Merge when another round could overflow the buffer, and after the last round.
    const bool last = base + blockDim.x >= data_tile;
    const bool merge = count + blockDim.x > buffer || (last && count > 0);
    __syncthreads();  // every thread has read `count` before anyone changes it
    if (merge) {
      dev::block_sort_u64(keys, sort_size);
      for (uint32_t i = slots + threadIdx.x; i < sort_size; i += blockDim.x) keys[i] = kMaxKey;
      if (threadIdx.x == 0) {
        count = 0;
        threshold = keys[k - 1];
      }
      __syncthreads();
    }
  }
  for (uint32_t i = threadIdx.x; i < slots; i += blockDim.x) st[i] = keys[i];
}

/** Recomputes the k survivors' distances directly and sorts them by (distance, id). */
__global__ void refine_kernel(const unsigned long long* state, uint32_t slots, uint32_t k,
                              const float* xs, const float* qs, int64_t dim, int64_t q0,
                              int metric_id, uint32_t* ids, float* distances) {
  extern __shared__ unsigned long long keys[];
  const int64_t qi = blockIdx.x, q = q0 + qi;
  const float* qv = qs + q * dim;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  for (uint32_t i = threadIdx.x; i < slots; i += blockDim.x) keys[i] = kMaxKey;
  __syncthreads();
  for (uint32_t s = warp; s < k; s += warps) {
    if (state[qi * slots + s] == kMaxKey) continue;  // fewer than k rows allowed (a mask)
    const uint32_t id = uint32_t(state[qi * slots + s]);
    const float* xv = xs + int64_t(id) * dim;
    float acc = 0.f;
    for (int64_t j = lane; j < dim; j += 32) {
      if (metric_id == 0) {
        const float t = qv[j] - xv[j];
        acc = fmaf(t, t, acc);
      } else {
        acc = fmaf(qv[j], xv[j], acc);
      }
    }
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0) {
      const float d = metric_id == 0 ? acc : metric_id == 1 ? -acc : 1.f - acc;
      keys[s] = (static_cast<unsigned long long>(orderable(d)) << 32) | id;
    }
  }
  __syncthreads();
  dev::block_sort_u64(keys, slots);
  for (uint32_t i = threadIdx.x; i < k; i += blockDim.x) {
    const bool empty = keys[i] == kMaxKey;
    ids[qi * k + i] = empty ? 0xFFFFFFFFu : uint32_t(keys[i]);  // cagra::kInvalidId
    distances[qi * k + i] =
        empty ? __int_as_float(0x7F800000) : from_orderable(uint32_t(keys[i] >> 32));
  }
}

/** Copies a host matrix to the device and widens it to f32 there. */
void upload_f32(dataset_view m, device_buffer<float>& out, device_buffer<uint8_t>& staging,
                cudaStream_t s) {
  const size_t n = size_t(m.rows) * size_t(m.cols);
  out.reserve(std::max<size_t>(n, 1));
  if (m.type == dtype::f32) {
    CAGRA_CUDA_TRY(
        cudaMemcpyAsync(out.data(), m.data, n * sizeof(float), cudaMemcpyHostToDevice, s));
    return;
  }
  staging.reserve(std::max<size_t>(size_t(m.rows) * m.row_bytes(), 1));
  CAGRA_CUDA_TRY(cudaMemcpyAsync(staging.data(), m.data, size_t(m.rows) * m.row_bytes(),
                                 cudaMemcpyHostToDevice, s));
  const int blocks = int(std::min<size_t>((n + 255) / 256, 65535));
  switch (m.type) {
    case dtype::f16:
      widen_kernel<<<blocks, 256, 0, s>>>(reinterpret_cast<const uint16_t*>(staging.data()),
                                          out.data(), n);
      break;
    case dtype::u8:
      widen_kernel<<<blocks, 256, 0, s>>>(reinterpret_cast<const uint8_t*>(staging.data()),
                                          out.data(), n);
      break;
    case dtype::i8:
      widen_kernel<<<blocks, 256, 0, s>>>(reinterpret_cast<const int8_t*>(staging.data()),
                                          out.data(), n);
      break;
    default:
      CAGRA_FAIL("the GPU brute force takes f32, f16, u8 or i8 vectors, not %s", to_string(m.type));
  }
  CAGRA_CUDA_CHECK_LAUNCH();
  // `staging` is reused for the next matrix: wait until this one is widened.
  CAGRA_CUDA_TRY(cudaStreamSynchronize(s));
}

int64_t g_query_tile = 0, g_data_tile = 0;  // test overrides (0: the defaults)

}  // namespace

uint32_t brute_force_max_k() { return core::gpu::kBruteForceMaxK; }

void testing::set_brute_force_tiles(int64_t query_tile, int64_t data_tile) {
  g_query_tile = query_tile;
  g_data_tile = data_tile;
}

namespace {

/** The rows a brute force searches: a host matrix, or rows of an index's device copy. */
struct data_source {
  const host_matrix* host = nullptr;
  const index_state* dev = nullptr;
  const std::vector<uint32_t>* rows = nullptr;  // with dev: which rows
  int64_t size() const { return host ? host->rows() : int64_t(rows->size()); }
  int64_t dim() const { return host ? host->cols() : int64_t(dev->dim); }
};

/** c.xs = the data as f32 rows: uploaded and widened, or gathered from the device copy. */
void load_data(const data_source& data, context& c, cudaStream_t s) {
  if (data.host) {
    upload_f32(*data.host, c.xs, c.staging, s);
    return;
  }
  const int64_t n = data.size(), dim = data.dim();
  c.xs.reserve(std::max<size_t>(size_t(n) * size_t(dim), 1));
  c.row_ids.reserve(std::max<size_t>(size_t(n), 1));
  CAGRA_CUDA_TRY(cudaMemcpyAsync(c.row_ids.data(), data.rows->data(), size_t(n) * sizeof(uint32_t),
                                 cudaMemcpyHostToDevice, s));
  const int blocks = int(std::min<size_t>((size_t(n) * size_t(dim) + 255) / 256, 65535));
  const uint8_t* src = data.dev->rows_data();
  const size_t stride = data.dev->row_stride;
  switch (data.dev->type) {
    case dtype::f32:
      gather_widen_kernel<float>
          <<<blocks, 256, 0, s>>>(src, stride, c.row_ids.data(), n, dim, c.xs.data());
      break;
    case dtype::f16:
      gather_widen_kernel<uint16_t>
          <<<blocks, 256, 0, s>>>(src, stride, c.row_ids.data(), n, dim, c.xs.data());
      break;
    case dtype::u8:
      gather_widen_kernel<uint8_t>
          <<<blocks, 256, 0, s>>>(src, stride, c.row_ids.data(), n, dim, c.xs.data());
      break;
    case dtype::i8:
      gather_widen_kernel<int8_t>
          <<<blocks, 256, 0, s>>>(src, stride, c.row_ids.data(), n, dim, c.xs.data());
      break;
    default:
      CAGRA_FAIL("the GPU brute force takes f32, f16, u8 or i8 vectors, not %s",
                 to_string(data.dev->type));
  }
  CAGRA_CUDA_CHECK_LAUNCH();
}

knn_graph run_brute_force(const data_source& data, dataset_view queries, metric m, uint32_t k,
                          bool exclude_self, const uint32_t* h_mask, int64_t mask_words,
                          int device) {
  const int64_t n = data.size(), nq = queries.rows, dim = data.dim();
  CAGRA_EXPECTS(k >= 1, "k must be >= 1");
  CAGRA_EXPECTS(k <= brute_force_max_k(), "the GPU brute force takes k <= %u (got %u)",
                brute_force_max_k(), k);
  CAGRA_EXPECTS(queries.cols == dim, "queries have dimension %lld but the data %lld",
                (long long)queries.cols, (long long)dim);
  CAGRA_EXPECTS(!exclude_self || nq == n, "exclude_self needs the queries to be the data itself");
  const int64_t available = n - (exclude_self ? 1 : 0);
  CAGRA_EXPECTS(static_cast<int64_t>(k) <= available,
                "k = %u exceeds the %lld rows available to the brute-force search", k,
                (long long)available);
  CAGRA_EXPECTS(n < int64_t{0xffffffff}, "the GPU brute force takes fewer than 2^32 - 1 rows");
  CAGRA_EXPECTS(dim <= int64_t{1} << 30, "dimension %lld is too large", (long long)dim);

  device_guard guard(device);
  context_lease lease(device);
  context& c = lease.get();
  cuda_stream& stream = c.stream;
  const cudaStream_t s = stream.get();
  cublas_handle& blas = c.blas;
  CAGRA_CUBLAS_TRY(cublasSetStream(blas.h, s));
  CAGRA_CUBLAS_TRY(cublasSetMathMode(blas.h, CUBLAS_DEFAULT_MATH));  // true FP32, no TF32

  device_buffer<float>&xs = c.xs, &qs = c.qs;
  load_data(data, c, s);
  upload_f32(queries, qs, c.staging, s);
  device_buffer<uint32_t>& mask = c.mask;
  if (h_mask) {
    const size_t words = size_t(row_filter::words_for(n)) * (mask_words ? size_t(nq) : 1);
    mask.reserve(words);
    CAGRA_CUDA_TRY(
        cudaMemcpyAsync(mask.data(), h_mask, words * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
  }
  const int metric_id = m == metric::l2 ? 0 : m == metric::inner_product ? 1 : 2;
  device_buffer<float>&xnorm = c.xnorm, &qnorm = c.qnorm;
  if (metric_id == 0) {
    xnorm.reserve(size_t(n));
    qnorm.reserve(size_t(nq));
    norms_kernel<<<int((n * 32 + 255) / 256), 256, 0, s>>>(xs.data(), n, dim, xnorm.data());
    CAGRA_CUDA_CHECK_LAUNCH();
    norms_kernel<<<int((nq * 32 + 255) / 256), 256, 0, s>>>(qs.data(), nq, dim, qnorm.data());
    CAGRA_CUDA_CHECK_LAUNCH();
  }

  const select_sizes sz = sizes_for(k);
  const int64_t qtile = std::min(nq, g_query_tile > 0 ? g_query_tile : kQueryTile);
  int64_t dtile = g_data_tile > 0 ? g_data_tile
                                  : std::max<int64_t>(core::gpu::kBruteForceMinDataTile,
                                                      int64_t(kTileBytes / sizeof(float)) / qtile);
  dtile = std::min(n, dtile);
  device_buffer<float>& dots = c.dots;
  device_buffer<unsigned long long>& state = c.state;
  device_buffer<uint32_t>& d_ids = c.d_ids;
  device_buffer<float>& d_dist = c.d_dist;
  dots.reserve(size_t(qtile) * size_t(dtile));
  state.reserve(size_t(qtile) * sz.slots);
  d_ids.reserve(size_t(qtile) * k);
  d_dist.reserve(size_t(qtile) * k);
  const size_t select_smem = size_t(sz.sort_size) * sizeof(unsigned long long);
  const size_t refine_smem = size_t(sz.slots) * sizeof(unsigned long long);
  if (select_smem > 48 * 1024)
    CAGRA_CUDA_TRY(cudaFuncSetAttribute(select_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        int(select_smem)));

  knn_graph out;
  out.rows = nq;
  out.k = k;
  out.ids.assign(size_t(nq) * k, kInvalidId);
  out.distances.assign(size_t(nq) * k, 0.0f);
  const float one = 1.f, zero = 0.f;
  for (int64_t q0 = 0; q0 < nq; q0 += qtile) {
    const int64_t qn = std::min(qtile, nq - q0);
    for (int64_t d0 = 0; d0 < n; d0 += dtile) {
      const int64_t dn = std::min(dtile, n - d0);
      // Column-major: C[dn, qn] = X_tile^T (dn x dim) * Q_tile (dim x qn), so each query's row of
      // dot products is contiguous (row-major [qn, dn]).
      CAGRA_CUBLAS_TRY(cublasSgemm(blas.h, CUBLAS_OP_T, CUBLAS_OP_N, int(dn), int(qn), int(dim),
                                   &one, xs.data() + d0 * dim, int(dim), qs.data() + q0 * dim,
                                   int(dim), &zero, dots.data(), int(dn)));
      select_kernel<<<unsigned(qn), kThreads, select_smem, s>>>(
          dots.data(), dn, d0, q0, qnorm.data(), xnorm.data(), metric_id, k, sz.slots, sz.sort_size,
          exclude_self, d0 == 0, h_mask ? mask.data() : nullptr, uint64_t(mask_words),
          state.data());
      CAGRA_CUDA_CHECK_LAUNCH();
    }
    refine_kernel<<<unsigned(qn), kThreads, refine_smem, s>>>(state.data(), sz.slots, k, xs.data(),
                                                              qs.data(), dim, q0, metric_id,
                                                              d_ids.data(), d_dist.data());
    CAGRA_CUDA_CHECK_LAUNCH();
    CAGRA_CUDA_TRY(cudaMemcpyAsync(out.ids.data() + q0 * k, d_ids.data(),
                                   size_t(qn) * k * sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
    CAGRA_CUDA_TRY(cudaMemcpyAsync(out.distances.data() + q0 * k, d_dist.data(),
                                   size_t(qn) * k * sizeof(float), cudaMemcpyDeviceToHost, s));
    stream.sync();
  }
  return out;
}

}  // namespace

knn_graph brute_force(const host_matrix& data, dataset_view queries, metric m, uint32_t k,
                      bool exclude_self, int device) {
  return run_brute_force(data_source{&data, nullptr, nullptr}, queries, m, k, exclude_self, nullptr,
                         0, device);
}

knn_graph brute_force_rows(const index& idx, const std::vector<uint32_t>& rows,
                           dataset_view queries, uint32_t k, int device) {
  // The copy searches use (made once, kept up to date by extend; its rows may stay on the host).
  const std::shared_ptr<index_state> st = device_rows(idx, device, rows_location::automatic);
  return run_brute_force(data_source{nullptr, st.get(), &rows}, queries, idx.metric(), k, false,
                         nullptr, 0, device);
}

knn_graph brute_force_masked(const host_matrix& data, dataset_view queries, metric m, uint32_t k,
                             const uint32_t* mask, int64_t mask_words, int device) {
  CAGRA_EXPECTS(mask != nullptr, "internal error: brute_force_masked without a mask");
  return run_brute_force(data_source{&data, nullptr, nullptr}, queries, m, k, false, mask,
                         mask_words, device);
}

}  // namespace cagra::cuda
