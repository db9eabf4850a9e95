// Device helpers shared by nn_descent.cu, nn_descent_join.cu and nn_descent_lists.cu (the GPU
// NN-descent): the launchers, the (distance, id) sort keys and the pair distance every file
// computes with the same arithmetic in the same order, so that a pair has the same bits wherever
// it is computed.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include "core/bits.hpp"
#include "cuda/graph/nn_descent.hpp"
#include "cuda/primitives/team_distance.cuh"  // dev::dp4 (exact byte products)

namespace cagra::cuda::nnd_detail {

/** The local join (nn_descent_join.cu): one CTA per node. Pointers are device memory. */
struct join_args {
  const uint4* data;                    // [n, row_u4] rows, zero padded to 16 bytes
  uint32_t row_u4;                      // 16-byte words per row
  const unsigned long long* keys;       // [n, k] (orderable distance << 32 | id), rows ascending
  uint32_t k, s, cap;                   // degree, sample size (<= 32), proposal capacity per node
  const uint32_t *fwd_new, *fwd_old;    // [n, s], kInvalidId padded
  const uint32_t *rev_new, *rev_old;    // [n, s], the first min(rcnt, s) valid
  const uint32_t *rcnt_new, *rcnt_old;  // [n]
  unsigned long long* props;            // [n, cap] proposals (keys) to each node
  uint32_t* pcount;                     // [n] proposals offered (may exceed cap)
  int64_t n;
  bool dot, cosine;   // inner product or cosine (else l2); cosine: 1 - dot
  bool check_listed;  // drop offers of ids the target's list has (this iteration's snapshot)
};
void launch_join(dtype t, const join_args& a, cudaStream_t stream);

/** The random start (nn_descent_lists.cu): keys [n, k] (rows sorted) and flags [n, k] (all new).
 *  scratch: n floats of device memory the call may use (float rows' norms for l2). */
void launch_start(dtype t, const uint4* data, uint32_t row_u4, int64_t n, uint32_t k, uint64_t seed,
                  bool dot, bool cosine, float* scratch, unsigned long long* keys, uint8_t* flags,
                  cudaStream_t st);
/** Keys [n, k] -> ids [n, k] and, when dists is not null, distances [n, k] (float rows
 *  re-measured from the full elements and each list re-sorted; nn_descent_lists.cu). */
void launch_lists_out(dtype t, const uint4* data, uint32_t row_u4, int64_t n, uint32_t k, bool dot,
                      bool cosine, const unsigned long long* keys, uint32_t* ids, float* dists,
                      cudaStream_t st);

/** Float bits mapped so that unsigned order is float order (as in brute_force.cu). */
__device__ __forceinline__ uint32_t orderable(float f) {
  const uint32_t u = __float_as_uint(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
__device__ __forceinline__ float from_orderable(uint32_t u) {
  return __uint_as_float((u & 0x80000000u) ? (u & 0x7fffffffu) : ~u);
}
/** Sort key: (distance, id) order as one unsigned 64-bit compare. */
__device__ __forceinline__ unsigned long long make_key(float d, uint32_t id) {
  return (static_cast<unsigned long long>(orderable(d)) << 32) | id;
}
__device__ __forceinline__ float key_distance(unsigned long long key) {
  return from_orderable(static_cast<uint32_t>(key >> 32));
}
/** The metric's distance from the accumulated sum (squared L2, or the dot product); -0 -> +0 so
 *  that equal distances have equal key bits. */
__device__ __forceinline__ float finish_distance(float acc, bool dot, bool cosine) {
  const float d =
      !dot ? acc : bits::distance_from_dot(cosine ? metric::cosine : metric::inner_product, acc);
  return d == 0.0f ? 0.0f : d;
}

/** Squared l2 distance of float rows from their squared norms and dot product: one FMA an
 *  element in the join's distance tile where (x - y)^2 took a subtraction too. Its error is a few
 *  units in the last place of |x|^2 + |y|^2 (the pair's own distance may be far smaller: the lists'
 *  distances are re-measured exactly at the end). Symmetric in x and y, so a pair has the same
 *  bits wherever it is computed; never negative. */
__device__ __forceinline__ float l2_from_dot(float xx, float yy, float xy) {
  const float d = fmaf(-2.0f, xy, xx + yy);
  return d > 0.0f ? d : 0.0f;
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
constexpr bool kTensorCores = true;  // mma.sync with s8/u8 and tf32 inputs
#else
constexpr bool kTensorCores = false;
#endif

/** x rounded to tf32 (10 mantissa bits, to nearest, ties away), as bits for an mma operand. */
__device__ __forceinline__ uint32_t tf32_bits(float x) {
  uint32_t r = __float_as_uint(x);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
#endif
  return r;
}

/** c += a * b over 16 rows x 8 columns x 8 tf32 elements, fp32 sums. A pair's sum depends only on
 *  its two rows' elements and the order of the k-steps: the join and the random start, which
 *  step through the elements 8 at a time in the same order, give it the same bits, in either
 *  order of the pair (the products are the same, at the same positions). */
__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/** 16-byte word -> values. Float rows (f32: 4, f16: 8 elements) give floats; byte rows give 4
 *  packed 32-bit words (4 bytes each, for dp4a). kPer values per 16-byte word. */
template <typename T>
struct unpack_traits {
  static constexpr uint32_t kPer = 4;
  static constexpr bool kBytes = true;
};
template <>
struct unpack_traits<float> {
  static constexpr uint32_t kPer = 4;
  static constexpr bool kBytes = false;
};
template <>
struct unpack_traits<__half> {
  static constexpr uint32_t kPer = 8;
  static constexpr bool kBytes = false;
};

template <typename T>
__device__ __forceinline__ void unpack_floats(const uint4& v, float* out) {
  if constexpr (std::is_same_v<T, float>) {
    out[0] = __uint_as_float(v.x);
    out[1] = __uint_as_float(v.y);
    out[2] = __uint_as_float(v.z);
    out[3] = __uint_as_float(v.w);
  } else {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[i]));
      out[2 * i] = f.x;
      out[2 * i + 1] = f.y;
    }
  }
}

/** Distance of rows a and b, accumulated element by element in index order (float rows: fp32
 *  accumulators, fmaf, l2 from the norms and the dot product; byte rows: exact integers). The
 *  join kernel accumulates in the same order, so both produce the same bits for the same pair. */
template <typename T>
__device__ float row_distance(const uint4* a, const uint4* b, uint32_t row_u4, bool dot,
                              bool cosine) {
  if constexpr (unpack_traits<T>::kBytes) {
    int ab = 0, aa = 0, bb = 0;
    for (uint32_t q = 0; q < row_u4; ++q) {
      const uint4 x = __ldg(a + q), y = __ldg(b + q);
      ab = dev::dp4<T>(x.x, y.x, ab);
      ab = dev::dp4<T>(x.y, y.y, ab);
      ab = dev::dp4<T>(x.z, y.z, ab);
      ab = dev::dp4<T>(x.w, y.w, ab);
      if (!dot) {
        aa = dev::dp4<T>(x.x, x.x, aa);
        aa = dev::dp4<T>(x.y, x.y, aa);
        aa = dev::dp4<T>(x.z, x.z, aa);
        aa = dev::dp4<T>(x.w, x.w, aa);
        bb = dev::dp4<T>(y.x, y.x, bb);
        bb = dev::dp4<T>(y.y, y.y, bb);
        bb = dev::dp4<T>(y.z, y.z, bb);
        bb = dev::dp4<T>(y.w, y.w, bb);
      }
    }
    return finish_distance(static_cast<float>(dot ? ab : aa + bb - 2 * ab), dot, cosine);
  } else {
    constexpr uint32_t P = unpack_traits<T>::kPer;
    float xy = 0.0f, xx = 0.0f, yy = 0.0f;
    for (uint32_t q = 0; q < row_u4; ++q) {
      float x[P], y[P];
      unpack_floats<T>(__ldg(a + q), x);
      unpack_floats<T>(__ldg(b + q), y);
#pragma unroll
      for (uint32_t e = 0; e < P; ++e) {
        xy = fmaf(x[e], y[e], xy);
        if (!dot) {
          xx = fmaf(x[e], x[e], xx);
          yy = fmaf(y[e], y[e], yy);
        }
      }
    }
    return dot ? finish_distance(xy, true, cosine) : l2_from_dot(xx, yy, xy);
  }
}

/** The distance of float rows in fp32 from the full elements, in index order ((x - y)^2 for l2):
 *  the lists' distances when they leave the GPU, re-measured after the iterations. */
template <typename T>
__device__ float row_distance_exact(const uint4* a, const uint4* b, uint32_t row_u4, bool dot,
                                    bool cosine) {
  constexpr uint32_t P = unpack_traits<T>::kPer;
  float acc = 0.0f;
  for (uint32_t q = 0; q < row_u4; ++q) {
    float x[P], y[P];
    unpack_floats<T>(__ldg(a + q), x);
    unpack_floats<T>(__ldg(b + q), y);
#pragma unroll
    for (uint32_t e = 0; e < P; ++e) {
      const float t = dot ? x[e] : x[e] - y[e];
      acc = fmaf(t, dot ? y[e] : t, acc);
    }
  }
  return finish_distance(acc, dot, cosine);
}

}  // namespace cagra::cuda::nnd_detail
