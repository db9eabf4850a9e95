// The GPU NN-descent's two ends (nn_descent.cu runs the iterations between them):
//   start — init_kernel, one CTA per node: k distinct random neighbors drawn from a
//           counter-based hash of the seed, their distances, the row sorted. Float rows from
//           sm_80 sum each pair with the join's tf32 mma steps (tf32_start_distances), others
//           with row_distance, so that a pair's key has the same bits here as in every join
//           (the update's duplicate test relies on it).
//   out   — keys -> ids (decode_kernel), or, for float rows returned with their distances,
//           each list re-measured from the full elements in fp32 and re-sorted
//           (exact_lists_kernel): the iterations' keys come from tf32 products and, for l2,
//           from |x|^2 + |y|^2 - 2 x.y, whose error follows the norms, not the distance.
#include <algorithm>

#include <cuda_runtime_api.h>

#include "core/bits.hpp"
#include "core/device_memory.hpp"
#include "cuda/check.hpp"
#include "cuda/graph/nn_descent_detail.cuh"
#include "cuda/primitives/bitonic.cuh"

namespace cagra::cuda::nnd_detail {
namespace {

using u64 = unsigned long long;
constexpr uint32_t kFull = 0xFFFFFFFFu;
using bits::mix64;

/** Element e of a float row (f32 or f16; 0 past the row's padded end). */
template <typename T>
__device__ __forceinline__ float row_elem(const uint4* row, uint32_t e, uint32_t row_u4) {
  constexpr uint32_t P = unpack_traits<T>::kPer;
  if (e >= row_u4 * P) return 0.0f;
  if constexpr (std::is_same_v<T, float>)
    return __ldg(reinterpret_cast<const float*>(row) + e);
  else
    return __half2float(reinterpret_cast<const __half*>(row)[e]);
}

/** Float rows on tensor cores: the keys of node u against its k start neighbors, computed as the
 *  join computes a pair (tf32 products summed by mma 8 elements a step, over the join's chunks
 *  of 32 elements; l2 from the squared norms of the rounded elements), so that a pair has the
 *  same bits here and in every join. Each warp takes 8 neighbors at a time as the mma's columns,
 *  with u in every row; sk[j] for j < kp2 (~0 past k). Needs blockDim.x == 128. */
template <typename T>
__device__ void tf32_start_distances(const uint4* data, uint32_t row_u4, int64_t u,
                                     const uint32_t* ids, uint32_t k, uint32_t kp2, bool dot,
                                     bool cosine, u64* sk) {
  constexpr uint32_t kSlotU = core::gpu::kNnDescentMaxK;  // u's squared norm; the neighbors' before
  __shared__ float norms[kSlotU + 1];
  constexpr uint32_t P = unpack_traits<T>::kPer;
  const uint32_t elems = (row_u4 * P + 31) / 32 * 32;  // the join's chunks, zero padded
  const uint32_t t = threadIdx.x, lane = t & 31u, warp = t >> 5;
  const uint4* ru = data + u * row_u4;
  if (!dot) {
    for (uint32_t j = t; j <= k; j += blockDim.x) {
      const uint4* r = j < k ? data + int64_t(ids[j]) * row_u4 : ru;
      float s2 = 0.0f;
      for (uint32_t e = 0; e < elems; ++e) {
        const float x = __uint_as_float(tf32_bits(row_elem<T>(r, e, row_u4)));
        s2 = fmaf(x, x, s2);
      }
      norms[j == k ? kSlotU : j] = s2;
    }
    __syncthreads();
  }
  const uint32_t grp = lane >> 2, tig = lane & 3u;
  for (uint32_t g8 = warp * 8; g8 < kp2; g8 += 8 * (blockDim.x / 32)) {
    const uint32_t j = g8 + grp;  // this lane's column: neighbor j
    const uint4* rv = j < k ? data + int64_t(ids[j]) * row_u4 : nullptr;
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (uint32_t k8 = 0; k8 < elems; k8 += 8) {
      const uint32_t x0 = tf32_bits(row_elem<T>(ru, k8 + tig, row_u4));
      const uint32_t x1 = tf32_bits(row_elem<T>(ru, k8 + 4 + tig, row_u4));
      const uint32_t a[4] = {x0, x0, x1, x1};
      const uint32_t b[2] = {
          rv ? tf32_bits(row_elem<T>(rv, k8 + tig, row_u4)) : 0u,
          rv ? tf32_bits(row_elem<T>(rv, k8 + 4 + tig, row_u4)) : 0u};
      mma_tf32(c, a, b);
    }
    if (grp == 0) {  // row 0: columns 2 tig and 2 tig + 1
#pragma unroll
      for (uint32_t h = 0; h < 2; ++h) {
        const uint32_t jj = g8 + 2 * tig + h;
        if (jj >= kp2) continue;
        u64 key = ~0ull;
        if (jj < k) {
          const float d = dot ? finish_distance(c[h], true, cosine)
                              : l2_from_dot(norms[kSlotU], norms[jj], c[h]);
          key = make_key(d, ids[jj]);
        }
        sk[jj] = key;
      }
    }
  }
}

/** One CTA per node: k distinct random neighbors (warp 0 draws them), distances, sorted row. */
template <typename T>
__global__ void init_kernel(const uint4* data, uint32_t row_u4, int64_t n, uint32_t k, uint32_t kp2,
                            uint64_t seed, bool dot, bool cosine, u64* keys, uint8_t* flags) {
  extern __shared__ u64 sk[];                             // [kp2]
  uint32_t* ids = reinterpret_cast<uint32_t*>(sk + kp2);  // [k]
  const int64_t u = blockIdx.x;
  const uint32_t t = threadIdx.x, lane = t & 31u;
  if (t < 32) {
    uint32_t m = 0;
    const uint64_t base = mix64(seed ^ mix64(uint64_t(u)));
    for (uint32_t round = 0; m < k; ++round) {
      const uint64_t h = mix64(base + uint64_t(round) * 32 + lane);
      const uint32_t c = uint32_t(((h >> 32) * uint64_t(n)) >> 32);
      bool ok = c != uint32_t(u);
      const uint32_t same = __match_any_sync(kFull, c);
      ok = ok && (__ffs(same) - 1) == int(lane);  // the lowest lane drawing c
      for (uint32_t j = 0; j < m && ok; ++j) ok = ids[j] != c;
      const uint32_t b = __ballot_sync(kFull, ok);
      const uint32_t pos = m + __popc(b & ((1u << lane) - 1u));
      if (ok && pos < k) ids[pos] = c;
      m = min(k, m + __popc(b));
      __syncwarp();
    }
  }
  __syncthreads();
  const uint4* ru = data + u * row_u4;
  if constexpr (!unpack_traits<T>::kBytes && kTensorCores) {
    tf32_start_distances<T>(data, row_u4, u, ids, k, kp2, dot, cosine, sk);
  } else {
    for (uint32_t j = t; j < kp2; j += blockDim.x) {
      u64 key = ~0ull;
      if (j < k)
        key = make_key(
            row_distance<T>(ru, data + int64_t(ids[j]) * row_u4, row_u4, dot, cosine),
            ids[j]);
      sk[j] = key;
    }
  }
  __syncthreads();
  dev::block_sort_u64(sk, kp2);
  for (uint32_t j = t; j < k; j += blockDim.x) {
    keys[u * k + j] = sk[j];
    flags[u * k + j] = 1;
  }
}

/** Float rows: the lists' distances re-measured from the full elements ((x - y)^2 for l2; the
 *  iterations' distances come from tf32 products, and l2 from the norms and the dot product,
 *  whose error follows |x|^2 + |y|^2, not the distance), each list re-sorted, then decoded. One
 *  CTA per node. */
template <typename T>
__global__ void exact_lists_kernel(const uint4* data, uint32_t row_u4, uint32_t k, uint32_t kp2,
                                   bool dot, bool cosine, const u64* keys, uint32_t* ids,
                                   float* dists) {
  extern __shared__ u64 sk[];  // [kp2]
  const int64_t u = blockIdx.x;
  const uint4* ru = data + u * row_u4;
  for (uint32_t j = threadIdx.x; j < kp2; j += blockDim.x) {
    u64 key = ~0ull;
    if (j < k) {
      const uint32_t id = uint32_t(keys[u * k + j]);
      key = make_key(
          row_distance_exact<T>(ru, data + int64_t(id) * row_u4, row_u4, dot, cosine),
          id);
    }
    sk[j] = key;
  }
  __syncthreads();
  dev::block_sort_u64(sk, kp2);
  for (uint32_t j = threadIdx.x; j < k; j += blockDim.x) {
    ids[u * k + j] = uint32_t(sk[j]);
    dists[u * k + j] = key_distance(sk[j]);
  }
}

/** Keys -> ids and distances (dists may be null). */
__global__ void decode_kernel(const u64* keys, size_t total, uint32_t* ids, float* dists) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < total;
       i += size_t(gridDim.x) * blockDim.x) {
    const u64 key = keys[i];
    ids[i] = uint32_t(key);
    if (dists) dists[i] = key_distance(key);
  }
}

template <typename T>
void launch_start_typed(const uint4* data, uint32_t row_u4, int64_t n, uint32_t k, uint64_t seed,
                        bool dot, bool cosine, u64* keys, uint8_t* flags, cudaStream_t st) {
  const uint32_t kp2 = bits::next_pow2(k);
  const size_t smem = kp2 * sizeof(u64) + k * sizeof(uint32_t);
  init_kernel<T><<<unsigned(n), 128, smem, st>>>(data, row_u4, n, k, kp2, seed, dot, cosine, keys,
                                                 flags);
}

}  // namespace

void launch_start(dtype t, const uint4* data, uint32_t row_u4, int64_t n, uint32_t k,
                  uint64_t seed, bool dot, bool cosine, u64* keys, uint8_t* flags,
                  cudaStream_t st) {
  switch (t) {
    case dtype::f32: launch_start_typed<float>(data, row_u4, n, k, seed, dot, cosine, keys, flags, st); break;
    case dtype::f16: launch_start_typed<__half>(data, row_u4, n, k, seed, dot, cosine, keys, flags, st); break;
    case dtype::u8: launch_start_typed<uint8_t>(data, row_u4, n, k, seed, dot, cosine, keys, flags, st); break;
    case dtype::i8: launch_start_typed<int8_t>(data, row_u4, n, k, seed, dot, cosine, keys, flags, st); break;
    default:
      CAGRA_FAIL("the GPU NN-descent takes f32, f16, u8 or i8 vectors, not %s", to_string(t));
  }
  CAGRA_CUDA_CHECK_LAUNCH();
}

void launch_lists_out(dtype t, const uint4* data, uint32_t row_u4, int64_t n, uint32_t k, bool dot,
                      bool cosine, const u64* keys, uint32_t* ids, float* dists,
                      cudaStream_t st) {
  if (dists && (t == dtype::f32 || t == dtype::f16)) {
    const uint32_t kp2 = bits::next_pow2(k);
    auto kernel = t == dtype::f32 ? exact_lists_kernel<float> : exact_lists_kernel<__half>;
    kernel<<<unsigned(n), 128, kp2 * sizeof(u64), st>>>(data, row_u4, k, kp2, dot, cosine, keys,
                                                        ids, dists);
  } else {
    const size_t total = size_t(n) * k;
    decode_kernel<<<unsigned(std::min<size_t>((total + 255) / 256, 65535)), 256, 0, st>>>(
        keys, total, ids, dists);
  }
  CAGRA_CUDA_CHECK_LAUNCH();
}

}  // namespace cagra::cuda::nnd_detail
