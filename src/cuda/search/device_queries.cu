// The query check / conversion kernel of the device-memory search path (device_queries.hpp).
#include "cuda/search/device_queries.hpp"

#include <algorithm>
#include <type_traits>

#include <cuda_fp16.h>

#include "cuda/check.hpp"

namespace cagra::cuda {
namespace dev {

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(uint8_t x) { return float(x); }
__device__ __forceinline__ float to_float(int8_t x) { return float(x); }
template <typename T>
constexpr bool is_float_v = std::is_same<T, float>::value || std::is_same<T, __half>::value;

/** One CTA per row. Thread 0 sums the squared norm in the CPU's order (no FMA contraction). */
template <typename T>
__global__ void prepare_queries(const T* __restrict__ in, int64_t rows, uint32_t cols,
                                float* __restrict__ out, bool normalize, unsigned long long* flags,
                                uint8_t* __restrict__ row_bad) {
  __shared__ float s_inv;
  const int64_t r = blockIdx.x;
  const T* row = in + r * cols;
  bool bad_row = false;  // thread 0's verdict on the row
  if constexpr (is_float_v<T>) {
    bool bad = false;
    for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x) bad |= !isfinite(to_float(row[j]));
    bad_row = __syncthreads_or(bad);
    if (bad_row && threadIdx.x == 0) atomicMin(&flags[0], static_cast<unsigned long long>(r));
  }
  if (normalize && threadIdx.x == 0) {
    double n2 = 0;
    for (uint32_t j = 0; j < cols; ++j) {
      const double x = to_float(row[j]);
      n2 = __dadd_rn(n2, __dmul_rn(x, x));
    }
    if (!(n2 > 0)) {
      atomicMin(&flags[1], static_cast<unsigned long long>(r));
      bad_row = true;
    }
    s_inv = n2 > 0 ? __double2float_rn(__ddiv_rn(1.0, __dsqrt_rn(n2))) : 0.f;
  }
  if (row_bad && threadIdx.x == 0) row_bad[r] = bad_row ? 1 : 0;
  if (out == nullptr) return;
  __syncthreads();
  float* o = out + r * cols;
  for (uint32_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float x = to_float(row[j]);
    o[j] = normalize ? __fmul_rn(x, s_inv) : x;
  }
}

/** Every slot of a row that row_bad marks: kInvalidId, NaN. */
__global__ void blank_bad_rows(const uint8_t* __restrict__ row_bad, size_t slots, uint32_t k,
                               uint32_t* __restrict__ ids, float* __restrict__ distances) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < slots;
       i += size_t(gridDim.x) * blockDim.x) {
    if (!row_bad[i / k]) continue;
    ids[i] = kInvalidId;
    if (distances) distances[i] = __int_as_float(0x7fc00000);
  }
}

}  // namespace dev

void launch_prepare_queries(const void* in, dtype in_type, int64_t rows, uint32_t cols, float* out,
                            bool normalize, unsigned long long* flags, cudaStream_t stream,
                            uint8_t* row_bad) {
  CAGRA_CUDA_TRY(cudaMemsetAsync(flags, 0xFF, 2 * sizeof(unsigned long long), stream));
  if (rows == 0) return;
  CAGRA_EXPECTS(rows <= int64_t{0x7FFFFFFF}, "too many queries for one device call (%lld)",
                (long long)rows);
  const dim3 grid(static_cast<unsigned>(rows));
  constexpr unsigned block = 128;
  switch (in_type) {
    case dtype::f32:
      dev::prepare_queries<<<grid, block, 0, stream>>>(static_cast<const float*>(in), rows, cols,
                                                       out, normalize, flags, row_bad);
      break;
    case dtype::f16:
      dev::prepare_queries<<<grid, block, 0, stream>>>(static_cast<const __half*>(in), rows, cols,
                                                       out, normalize, flags, row_bad);
      break;
    case dtype::u8:
      dev::prepare_queries<<<grid, block, 0, stream>>>(static_cast<const uint8_t*>(in), rows, cols,
                                                       out, normalize, flags, row_bad);
      break;
    case dtype::i8:
      dev::prepare_queries<<<grid, block, 0, stream>>>(static_cast<const int8_t*>(in), rows, cols,
                                                       out, normalize, flags, row_bad);
      break;
    default:
      CAGRA_FAIL("device queries of type %s cannot be converted (use f32, f16, u8 or i8)",
                 to_string(in_type));
  }
  CAGRA_CUDA_CHECK_LAUNCH();
}

void launch_blank_bad_rows(const uint8_t* row_bad, int64_t rows, uint32_t k, uint32_t* ids,
                           float* distances, cudaStream_t stream) {
  const size_t slots = size_t(rows) * k;
  if (slots == 0) return;
  constexpr unsigned block = 256;
  const unsigned grid = unsigned(std::min<size_t>((slots + block - 1) / block, 4096));
  dev::blank_bad_rows<<<grid, block, 0, stream>>>(row_bad, slots, k, ids, distances);
  CAGRA_CUDA_CHECK_LAUNCH();
}

device_normalize::device_normalize(search_workspace& w, uint32_t dim, int64_t nq)
    : w_(w), dim_(dim) {
  w_.prepared.reserve(size_t(nq) * dim);
  w_.query_flags.reserve(2 * size_t(nq));  // two words at 2 * first for each chunk
}

const float* device_normalize::operator()(const uint8_t* rows, int64_t first, int64_t n,
                                          cudaStream_t s) {
  float* out = w_.prepared.data() + size_t(first) * dim_;
  launch_prepare_queries(rows, dtype::f32, n, dim_, out, true,
                         w_.query_flags.data() + 2 * size_t(first), s);
  firsts_.push_back(first);
  return out;
}

void device_normalize::check() const {
  for (int64_t first : firsts_) {
    unsigned long long bad[2] = {0, 0};
    CAGRA_CUDA_TRY(cudaMemcpy(bad, w_.query_flags.data() + 2 * size_t(first), sizeof bad,
                              cudaMemcpyDeviceToHost));
    CAGRA_EXPECTS(bad[0] == ~0ull, "queries row %lld contains NaN or Inf",
                  (long long)(first + int64_t(bad[0])));
    CAGRA_EXPECTS(bad[1] == ~0ull,
                  "queries row %lld is all zeros: cosine distance is undefined for it",
                  (long long)(first + int64_t(bad[1])));
  }
}

}  // namespace cagra::cuda
