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

/** Squared norms of float rows as the join sums them for l2: tf32-rounded elements (from sm_80;
 *  the elements themselves before), fmaf in element order. One thread per row. */
template <typename T>
__global__ void row_norms_kernel(const uint4* data, uint32_t row_u4, int64_t n, float* norms) {
  const int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (r >= n) return;
  constexpr uint32_t P = unpack_traits<T>::kPer;
  const uint4* row = data + r * row_u4;
  float s2 = 0.0f;
  for (uint32_t q = 0; q < row_u4; ++q) {
    float x[P];
    unpack_floats<T>(__ldg(row + q), x);
#pragma unroll
    for (uint32_t e = 0; e < P; ++e) {
      const float y = __uint_as_float(tf32_bits(x[e]));
      s2 = fmaf(y, y, s2);
    }
  }
  norms[r] = s2;
}

/** Float rows on tensor cores: the keys of node u against its k start neighbors, computed as the
 *  join computes a pair (tf32 products summed by mma 8 elements a step, over the join's chunks
 *  of 32 elements; l2 from `norms`, row_norms_kernel's), so that a pair has the same bits here
 *  and in every join. Each warp takes 8 neighbors at a time as the mma's columns, with u in
 *  every row. A chunk of the 8 rows comes in 16-byte loads (the next one's loads in flight while
 *  the current one is multiplied) and is staged in shared memory as tf32, rows kStage words
 *  apart (the fragment reads are then free of bank conflicts); sk[j] for j < kp2 (~0 past k). */
template <typename T>
__device__ void tf32_start_distances(const uint4* data, uint32_t row_u4, int64_t u,
                                     const uint32_t* ids, uint32_t k, uint32_t kp2, bool dot,
                                     bool cosine, const float* norms, u64* sk) {
  constexpr uint32_t P = unpack_traits<T>::kPer;      // elements a 16-byte word
  constexpr uint32_t kWordsPerRow = 32 / P;           // 16-byte words of a row's chunk
  constexpr uint32_t kLoads = 8 * kWordsPerRow / 32;  // a lane's words of the 8 rows' chunk
  constexpr uint32_t kStage = 36;  // row pitch: 36 grp + tig covers every bank once
  constexpr uint32_t kWarpsMax = 4;
  __shared__ uint32_t stage[kWarpsMax][8 * kStage];
  const uint32_t chunks = (row_u4 + kWordsPerRow - 1) / kWordsPerRow;
  const uint32_t t = threadIdx.x, lane = t & 31u, warp = t >> 5, warps = blockDim.x / 32;
  const uint32_t grp = lane >> 2, tig = lane & 3u;
  uint32_t* sv = stage[warp];
  const uint4* ru = data + u * row_u4;
  const float norm_u = dot ? 0.0f : norms[u];
  for (uint32_t g8 = warp * 8; g8 < kp2; g8 += 8 * warps) {
    // Lane word i: row (lane + 32 i) / kWordsPerRow of the 8, word (lane + 32 i) % kWordsPerRow.
    const uint4* src[kLoads];
#pragma unroll
    for (uint32_t i = 0; i < kLoads; ++i) {
      const uint32_t jr = g8 + (lane + 32 * i) / kWordsPerRow;
      src[i] = jr < k ? data + int64_t(ids[jr]) * row_u4 + (lane + 32 * i) % kWordsPerRow : nullptr;
    }
    const uint32_t q0 = lane % kWordsPerRow;  // the same for every i (32 is a multiple)
    uint4 next[kLoads];
    auto load = [&](uint32_t c) {
#pragma unroll
      for (uint32_t i = 0; i < kLoads; ++i)
        next[i] = src[i] && c * kWordsPerRow + q0 < row_u4 ? __ldg(src[i] + c * kWordsPerRow)
                                                           : make_uint4(0, 0, 0, 0);
    };
    load(0);
    float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (uint32_t ch = 0; ch < chunks; ++ch) {
      __syncwarp();  // the previous chunk's fragments are read
#pragma unroll
      for (uint32_t i = 0; i < kLoads; ++i) {
        float f[P];
        unpack_floats<T>(next[i], f);
        uint32_t* row = sv + ((lane + 32 * i) / kWordsPerRow) * kStage + q0 * P;
#pragma unroll
        for (uint32_t e = 0; e < P; ++e) row[e] = tf32_bits(f[e]);
      }
      if (ch + 1 < chunks) load(ch + 1);
      __syncwarp();
#pragma unroll
      for (uint32_t st = 0; st < 4; ++st) {
        const uint32_t e0 = ch * 32 + 8 * st;
        const uint32_t x0 = tf32_bits(row_elem<T>(ru, e0 + tig, row_u4));
        const uint32_t x1 = tf32_bits(row_elem<T>(ru, e0 + 4 + tig, row_u4));
        const uint32_t a[4] = {x0, x0, x1, x1};
        const uint32_t b[2] = {sv[grp * kStage + 8 * st + tig],
                               sv[grp * kStage + 8 * st + 4 + tig]};
        mma_tf32(c, a, b);
      }
    }
    if (grp == 0) {  // row 0: columns 2 tig and 2 tig + 1
#pragma unroll
      for (uint32_t h = 0; h < 2; ++h) {
        const uint32_t jj = g8 + 2 * tig + h;
        if (jj >= kp2) continue;
        u64 key = ~0ull;
        if (jj < k) {
          const float d =
              dot ? finish_distance(c[h], true, cosine) : l2_from_dot(norm_u, norms[ids[jj]], c[h]);
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
                            uint64_t seed, bool dot, bool cosine, const float* norms, u64* keys,
                            uint8_t* flags) {
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
    tf32_start_distances<T>(data, row_u4, u, ids, k, kp2, dot, cosine, norms, sk);
  } else {
    for (uint32_t j = t; j < kp2; j += blockDim.x) {
      u64 key = ~0ull;
      if (j < k)
        key = make_key(row_distance<T>(ru, data + int64_t(ids[j]) * row_u4, row_u4, dot, cosine),
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
      key =
          make_key(row_distance_exact<T>(ru, data + int64_t(id) * row_u4, row_u4, dot, cosine), id);
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
                        bool dot, bool cosine, float* scratch, u64* keys, uint8_t* flags,
                        cudaStream_t st) {
  constexpr bool kFloat = !unpack_traits<T>::kBytes;
  if (kFloat && !dot)
    row_norms_kernel<T><<<unsigned((n + 255) / 256), 256, 0, st>>>(data, row_u4, n, scratch);
  const uint32_t kp2 = bits::next_pow2(k);
  const size_t smem = kp2 * sizeof(u64) + k * sizeof(uint32_t);
  init_kernel<T><<<unsigned(n), 128, smem, st>>>(data, row_u4, n, k, kp2, seed, dot, cosine,
                                                 scratch, keys, flags);
}

}  // namespace

void launch_start(dtype t, const uint4* data, uint32_t row_u4, int64_t n, uint32_t k, uint64_t seed,
                  bool dot, bool cosine, float* scratch, u64* keys, uint8_t* flags,
                  cudaStream_t st) {
  switch (t) {
    case dtype::f32:
      launch_start_typed<float>(data, row_u4, n, k, seed, dot, cosine, scratch, keys, flags, st);
      break;
    case dtype::f16:
      launch_start_typed<__half>(data, row_u4, n, k, seed, dot, cosine, scratch, keys, flags, st);
      break;
    case dtype::u8:
      launch_start_typed<uint8_t>(data, row_u4, n, k, seed, dot, cosine, scratch, keys, flags, st);
      break;
    case dtype::i8:
      launch_start_typed<int8_t>(data, row_u4, n, k, seed, dot, cosine, scratch, keys, flags, st);
      break;
    default:
      CAGRA_FAIL("the GPU NN-descent takes f32, f16, u8 or i8 vectors, not %s", to_string(t));
  }
  CAGRA_CUDA_CHECK_LAUNCH();
}

void launch_lists_out(dtype t, const uint4* data, uint32_t row_u4, int64_t n, uint32_t k, bool dot,
                      bool cosine, const u64* keys, uint32_t* ids, float* dists, cudaStream_t st) {
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
