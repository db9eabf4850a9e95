// The exact path of a filtered search for a few host queries (kExactRowsMaxQueries, k <= 32):
// one kernel over the allowed rows of the index's device copy instead of the brute force's
// gather, norms, cuBLAS product and one-CTA selection (245 us a query at 1% of SIFT-wall-1M on
// an H200, nearly all of it fixed costs of those steps, docs/benchmarks.md).
//
// The host writes the allowed row ids and the queries (as floats, zero padded to whole 16-byte
// chunks of a row) into mapped pinned memory; the kernel reads them there. One lane computes the
// distance of one allowed row (its 16-byte chunks all its own loads, so a warp has 32 rows in
// flight), with byte rows summed in integers (exact, as the CPU's). Each warp keeps its 32
// smallest (distance, id) keys sorted across its lanes and merges a round's 32 keys into them
// only when one beats its k-th (a bitonic sort and merge of 64 keys over shuffles); warp 0 then
// merges the CTA's warps and writes the CTA's best k to mapped memory, where the host merges
// the CTAs' lists. Keys order by distance, then id, as the CPU's exact search does.
#include "cuda/search/exact_rows.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#include <cuda_fp16.h>

#include "core/half.hpp"
#include "cuda/brute_force/context.hpp"
#include "cuda/check.hpp"
#include "cuda/launch.hpp"
#include "cuda/state.hpp"

namespace cagra::cuda {
namespace {

using brute_force_detail::context;  // the brute force's per-device stream and buffers
using brute_force_detail::context_lease;

constexpr uint32_t kThreads = 256, kWarps = kThreads / 32;
constexpr unsigned long long kNoKey = ~0ull;
constexpr uint32_t kFullMask = 0xFFFFFFFFu;
/** Allowed rows a thread is meant to take before one more CTA is used; at most kMaxCtas a query
 *  (their lists are merged on the host). */
constexpr uint32_t kRowsPerThread = 2, kMaxCtas = 256;
/** Largest query (floats in shared memory) the kernel takes; a wider one uses the brute force. */
constexpr size_t kMaxQueryBytes = 48 * 1024;

/** Distance bits that order as the distances do (sign-magnitude to unsigned), and back (host). */
__device__ __forceinline__ uint32_t ordered_bits(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
float from_ordered_bits(uint32_t k) {
  const uint32_t u = (k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/** The warp's 32 keys sorted ascending across its lanes (bitonic sort over shuffles). */
__device__ __forceinline__ unsigned long long warp_sort(unsigned long long x, uint32_t lane) {
  for (uint32_t size = 2; size <= 32; size <<= 1)
    for (uint32_t stride = size >> 1; stride > 0; stride >>= 1) {
      const unsigned long long y = __shfl_xor_sync(kFullMask, x, stride);
      const bool ascending = (lane & size) == 0, lower = (lane & stride) == 0;
      x = lower == ascending ? min(x, y) : max(x, y);
    }
  return x;
}

/** The 32 smallest of two ascending lane-sorted lists, ascending: the lanes' minimum against the
 *  other list reversed is bitonic, then one bitonic merge. */
__device__ __forceinline__ unsigned long long warp_merge(unsigned long long list,
                                                         unsigned long long sorted, uint32_t lane) {
  unsigned long long x = min(list, __shfl_sync(kFullMask, sorted, 31 - lane));
  for (uint32_t stride = 16; stride > 0; stride >>= 1) {
    const unsigned long long y = __shfl_xor_sync(kFullMask, x, stride);
    x = (lane & stride) == 0 ? min(x, y) : max(x, y);
  }
  return x;
}

/** a * b + c: one rounding for floats (fmaf), exact for ints. */
__device__ __forceinline__ float mul_add(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ int mul_add(int a, int b, int c) { return a * b + c; }

/** One row's distance to the query q (shared memory: floats, or ints for byte rows), computed
 *  by one lane from the row's n_chunks 16-byte chunks, summed in the query's type (byte rows in
 *  integers: exact, as the CPU's). m: 0 l2, 1 inner product, 2 cosine. */
template <typename T>
__device__ __forceinline__ float row_distance(const uint4* row, uint32_t n_chunks, const void* q,
                                              int m) {
  constexpr uint32_t V = 16 / sizeof(T);
  using acc_t =
      std::conditional_t<std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>, int, float>;
  const acc_t* qa = static_cast<const acc_t*>(q);
  acc_t acc = 0;
#pragma unroll 4
  for (uint32_t c = 0; c < n_chunks; ++c) {
    const uint4 v = row[c];
    const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (uint32_t j = 0; j < V; ++j) {
      acc_t x;
      if constexpr (std::is_same_v<T, __half>)
        x = __half2float(e[j]);
      else
        x = static_cast<acc_t>(e[j]);
      const acc_t y = qa[c * V + j];
      acc = m == 0 ? mul_add(y - x, y - x, acc) : mul_add(y, x, acc);
    }
  }
  const float s = static_cast<float>(acc);
  return m == 0 ? s : m == 1 ? -s : 1.0f - s;
}

/** Grid (CTAs a query, queries). queries: [nq][n_chunks * V] floats (mapped); out: [nq][CTAs][k]
 *  keys (mapped), kNoKey where a CTA saw fewer than k rows. */
template <typename T>
__global__ void __launch_bounds__(kThreads)
    exact_rows_kernel(const uint8_t* dataset, uint32_t row_stride, uint32_t n_chunks,
                      const uint32_t* rows, uint32_t n_rows, const float* queries, int m,
                      uint32_t k, unsigned long long* out) {
  extern __shared__ __align__(16) float s_query[];
  __shared__ unsigned long long s_lists[kWarps][32];
  constexpr uint32_t V = 16 / sizeof(T);
  constexpr bool kBytes = std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>;
  const uint32_t lane = threadIdx.x % 32, warp = threadIdx.x / 32, len = n_chunks * V;
  const float* q = queries + uint64_t{blockIdx.y} * len;
  for (uint32_t e = threadIdx.x; e < len; e += kThreads) {
    if constexpr (kBytes)
      reinterpret_cast<int*>(s_query)[e] = __float2int_rn(q[e]);
    else
      s_query[e] = q[e];
  }
  __syncthreads();
  unsigned long long list = kNoKey;  // lane j: the warp's (j+1)-th smallest key so far
  const uint64_t step = uint64_t{gridDim.x} * kWarps * 32;
  for (uint64_t base = (uint64_t{blockIdx.x} * kWarps + warp) * 32; base < n_rows; base += step) {
    const uint64_t i = base + lane;
    unsigned long long key = kNoKey;
    if (i < n_rows) {
      const uint32_t id = rows[i];
      const float d =
          row_distance<T>(reinterpret_cast<const uint4*>(dataset + uint64_t{id} * row_stride),
                          n_chunks, s_query, m);
      key = static_cast<unsigned long long>(ordered_bits(d)) << 32 | id;
    }
    const unsigned long long kth = __shfl_sync(kFullMask, list, k - 1);
    if (__any_sync(kFullMask, key < kth)) list = warp_merge(list, warp_sort(key, lane), lane);
  }
  s_lists[warp][lane] = list;
  __syncthreads();
  if (warp != 0) return;
  for (uint32_t w = 1; w < kWarps; ++w) list = warp_merge(list, s_lists[w][lane], lane);
  if (lane < k) out[(uint64_t{blockIdx.y} * gridDim.x + blockIdx.x) * k + lane] = list;
}

/** Element e of host query row r as a float (every query type is exact in f32). */
float query_value(dataset_view q, int64_t r, int64_t e) {
  const size_t at = size_t(r * q.cols + e);
  switch (q.type) {
    case dtype::f32: return static_cast<const float*>(q.data)[at];
    case dtype::f16: return core::half_to_float(static_cast<const half*>(q.data)[at]);
    case dtype::u8: return static_cast<const uint8_t*>(q.data)[at];
    case dtype::i8: return static_cast<const int8_t*>(q.data)[at];
    default: CAGRA_FAIL("queries of type %s for the exact filtered path", to_string(q.type));
  }
}

size_t align16(size_t n) { return (n + 15) / 16 * 16; }

}  // namespace

bool exact_rows_takes(const index& idx, int64_t nq, uint32_t k) {
  const size_t elem = dtype_size(idx.storage_dtype());
  const size_t query_bytes = align16(size_t(idx.dim()) * elem) / elem * sizeof(float);
  return nq >= 1 && nq <= kExactRowsMaxQueries && k >= 1 && k <= kExactRowsMaxK &&
         query_bytes <= kMaxQueryBytes;
}

void exact_rows(const index& idx, const std::vector<uint32_t>& rows, dataset_view queries,
                uint32_t k, uint32_t* ids, float* distances, int device) {
  CAGRA_EXPECTS(exact_rows_takes(idx, queries.rows, k) && !rows.empty(),
                "internal error: exact_rows outside its limits");
  device_guard guard(device);
  const std::shared_ptr<index_state> st = device_rows(idx, device, rows_location::automatic);
  context_lease lease(device);
  context& c = lease.get();
  const cudaStream_t s = c.stream.get();
  const int64_t nq = queries.rows;
  const uint32_t n = static_cast<uint32_t>(rows.size());
  const uint32_t v = 16 / static_cast<uint32_t>(dtype_size(st->type));
  const uint32_t n_chunks = st->row_stride / 16, len = n_chunks * v;
  const uint32_t ctas = std::clamp<uint32_t>(
      (n + kThreads * kRowsPerThread - 1) / (kThreads * kRowsPerThread), 1, kMaxCtas);
  // Mapped pinned memory: the allowed ids, the queries as floats, the CTAs' lists.
  const size_t at_q = align16(size_t{n} * 4), at_out = align16(at_q + size_t(nq) * len * 4);
  const size_t lists = size_t(nq) * ctas * k;
  c.host_io.reserve(at_out + lists * 8);
  uint8_t* io = c.host_io.data();
  std::memcpy(io, rows.data(), size_t{n} * 4);
  auto* hq = reinterpret_cast<float*>(io + at_q);
  for (int64_t r = 0; r < nq; ++r)
    for (uint32_t e = 0; e < len; ++e)
      hq[size_t(r) * len + e] = e < queries.cols ? query_value(queries, r, e) : 0.0f;
  auto* out = reinterpret_cast<unsigned long long*>(io + at_out);
  const int m = idx.metric() == metric::l2 ? 0 : idx.metric() == metric::inner_product ? 1 : 2;
  with_device_type(st->type, [&](auto tag) {
    using T = decltype(tag);
    exact_rows_kernel<T><<<dim3(ctas, static_cast<uint32_t>(nq)), kThreads, len * 4, s>>>(
        st->rows_data(), st->row_stride, n_chunks, reinterpret_cast<const uint32_t*>(io), n, hq, m,
        k, out);
  });
  CAGRA_CUDA_CHECK_LAUNCH();
  c.stream.sync();
  // The query's k best of its CTAs' lists (each ascending; kNoKey where a CTA had fewer rows).
  std::vector<unsigned long long> keys(size_t{ctas} * k);
  for (int64_t r = 0; r < nq; ++r) {
    std::copy(out + size_t(r) * ctas * k, out + size_t(r + 1) * ctas * k, keys.begin());
    std::partial_sort(keys.begin(), keys.begin() + k, keys.end());
    for (uint32_t j = 0; j < k; ++j) {
      const bool has = keys[j] != kNoKey;
      ids[size_t(r) * k + j] = has ? static_cast<uint32_t>(keys[j]) : kInvalidId;
      if (distances)
        distances[size_t(r) * k + j] = has ? from_ordered_bits(static_cast<uint32_t>(keys[j] >> 32))
                                           : std::numeric_limits<float>::infinity();
    }
  }
}

}  // namespace cagra::cuda
