// The local join of the GPU NN-descent (see nn_descent.cu for the whole iteration). One CTA of
// 256 threads per node u:
//  1. Candidates: NEW = fwd_new(u) ∪ rev_new(u), OLD = (fwd_old(u) ∪ rev_old(u)) \ NEW, each at
//     most 2S = 64 (S <= 32), deduplicated; cand[0, nnew) are NEW, cand[nnew, C) OLD.
//  2. Distances of every NEW row against every candidate, a register-tiled small GEMM: the rows
//     are read in chunks of 32 words (32 floats, or 128 bytes as 32 packed words) of every
//     candidate into shared memory (transposed, [word][candidate]); thread (ty, tx) owns rows
//     4ty..4ty+3 and columns tx + 16j (j < 8) of the [64 x 128] tile. Float rows accumulate
//     (a - b)^2 or a * b element by element in index order in fp32 (the order of row_distance,
//     so the same pair gives the same bits anywhere); byte rows use exact dp4a dot products and
//     |a|^2 + |b|^2 - 2 a.b.
//  3. Proposals: a NEW target t takes row t (every other candidate), an OLD target takes column
//     t (the NEW rows); entries below t's current worst distance (the snapshot of this
//     iteration) are counted by one warp, one atomicAdd reserves room in t's proposal buffer,
//     and they are written as (distance, id) keys; what does not fit is dropped. (Keeping only
//     each CTA's 4..32 nearest offers per target was tried: lower recall and slower; so was
//     skipping the mirrored half of NEW x NEW: no gain, a CTA waits for its busiest warps.)
#include <cuda_runtime_api.h>

#include "cuda/check.hpp"
#include "cuda/graph/nn_descent_detail.cuh"

namespace cagra::cuda::nnd_detail {
namespace {

constexpr uint32_t kThreads = 256;
constexpr uint32_t kMaxNew = 64, kMaxCand = 128;
constexpr uint32_t kWords = 32;  // 32-bit words of a row per chunk
constexpr uint32_t kLdx = 132;   // chunk row length in words: 128 candidates + pad (multiple of 4)
constexpr uint32_t kLdg = 129;   // distance-tile row length: column reads conflict-free
constexpr uint32_t kBufWords = (kMaxNew * kLdg > kWords * kLdx) ? kMaxNew * kLdg : kWords * kLdx;
constexpr uint32_t kFull = 0xFFFFFFFFu;
constexpr float kInf = __builtin_huge_valf();

template <typename T, bool kDot>
__global__ void __launch_bounds__(kThreads) join_kernel(join_args a) {
  using tr = unpack_traits<T>;
  constexpr bool kBytes = tr::kBytes;
  constexpr uint32_t kPer = tr::kPer;
  constexpr uint32_t kU = kWords / kPer;  // 16-byte words per chunk
  using acc_t = std::conditional_t<kBytes, int, float>;

  __shared__ uint32_t raw[kMaxCand];
  __shared__ uint32_t cand[kMaxCand];
  __shared__ float worst[kMaxCand];
  __shared__ int nrm[kMaxCand];
  __shared__ uint32_t wtot[4];
  __shared__ __align__(16) uint32_t buf[kBufWords];

  const int64_t u = blockIdx.x;
  const uint32_t t = threadIdx.x, lane = t & 31u, warp = t >> 5;
  const uint32_t s = a.s;

  // 1. Candidates. Threads 0..63: NEW slots (fwd 0..31, rev 32..63); 64..127: OLD slots.
  if (t < kMaxCand) {
    const uint32_t part = t >> 6, idx = t & 63u;
    const uint32_t* fwd = part ? a.fwd_old : a.fwd_new;
    const uint32_t* rev = part ? a.rev_old : a.rev_new;
    const uint32_t* rc = part ? a.rcnt_old : a.rcnt_new;
    uint32_t id = kInvalidId;
    if (idx < 32) {
      if (idx < s) id = fwd[u * s + idx];
    } else if (idx - 32 < min(rc[u], s)) {
      id = rev[u * s + (idx - 32)];
    }
    raw[t] = id;
  }
  __syncthreads();
  bool keep = false;
  uint32_t my_id = kInvalidId, bal = 0;
  if (t < kMaxCand) {
    my_id = raw[t];
    keep = my_id != kInvalidId;
    for (uint32_t j = 0; j < t; ++j) keep = keep && raw[j] != my_id;  // first occurrence only
    bal = __ballot_sync(kFull, keep);
    if (lane == 0) wtot[warp] = __popc(bal);
  }
  __syncthreads();
  const uint32_t nnew = wtot[0] + wtot[1], nold = wtot[2] + wtot[3], C = nnew + nold;
  if (nnew == 0 || C < 2) return;  // no pair (uniform over the CTA)
  if (keep) {
    const uint32_t before = warp == 0 ? 0 : warp == 1 ? wtot[0] : warp == 2 ? nnew : nnew + wtot[2];
    cand[before + __popc(bal & ((1u << lane) - 1u))] = my_id;
  }
  __syncthreads();
  for (uint32_t c = t; c < C; c += kThreads) {
    worst[c] = key_distance(a.keys[int64_t(cand[c]) * a.k + a.k - 1]);
    nrm[c] = 0;
  }

  // 2. The distance tile.
  const uint32_t ty = t >> 4, tx = t & 15u, r0 = ty * 4;
  const bool rows_on = r0 < nnew;
  const uint32_t jmax = (C + 15) / 16;
  acc_t acc[4][8];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = acc_t(0);
  const uint32_t n_chunks = (a.row_u4 + kU - 1) / kU;
  float* xs = reinterpret_cast<float*>(buf);
  for (uint32_t c = 0; c < n_chunks; ++c) {
    __syncthreads();
    for (uint32_t e = t; e < C * kU; e += kThreads) {
      const uint32_t ci = e / kU, q = e % kU, gq = c * kU + q;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (gq < a.row_u4) v = __ldg(a.data + int64_t(cand[ci]) * a.row_u4 + gq);
      if constexpr (kBytes) {
        buf[(q * 4 + 0) * kLdx + ci] = v.x;
        buf[(q * 4 + 1) * kLdx + ci] = v.y;
        buf[(q * 4 + 2) * kLdx + ci] = v.z;
        buf[(q * 4 + 3) * kLdx + ci] = v.w;
      } else {
        float f[kPer];
        unpack_floats<T>(v, f);
#pragma unroll
        for (uint32_t i = 0; i < kPer; ++i) xs[(q * kPer + i) * kLdx + ci] = f[i];
      }
    }
    __syncthreads();
    if constexpr (kBytes && !kDot) {
      if (t < C) {
        int s2 = nrm[t];
#pragma unroll 8
        for (uint32_t w = 0; w < kWords; ++w)
          s2 = dev::dp4<T>(buf[w * kLdx + t], buf[w * kLdx + t], s2);
        nrm[t] = s2;
      }
    }
    if (rows_on) {
#pragma unroll 2
      for (uint32_t w = 0; w < kWords; ++w) {
        if constexpr (kBytes) {
          const uint4 av = *reinterpret_cast<const uint4*>(buf + w * kLdx + r0);
          const uint32_t ar[4] = {av.x, av.y, av.z, av.w};
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            if (uint32_t(j) < jmax) {
              const uint32_t b = buf[w * kLdx + tx + 16 * j];
#pragma unroll
              for (int i = 0; i < 4; ++i) acc[i][j] = dev::dp4<T>(ar[i], b, acc[i][j]);
            }
          }
        } else {
          const float4 av = *reinterpret_cast<const float4*>(xs + w * kLdx + r0);
          const float ar[4] = {av.x, av.y, av.z, av.w};
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            if (uint32_t(j) < jmax) {
              const float b = xs[w * kLdx + tx + 16 * j];
#pragma unroll
              for (int i = 0; i < 4; ++i) {
                if constexpr (kDot) {
                  acc[i][j] = fmaf(ar[i], b, acc[i][j]);
                } else {
                  const float d = ar[i] - b;
                  acc[i][j] = fmaf(d, d, acc[i][j]);
                }
              }
            }
          }
        }
      }
    }
  }
  __syncthreads();  // the chunk buffer becomes the distance tile
  float* g = reinterpret_cast<float*>(buf);
  if (rows_on) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const uint32_t row = r0 + i, col = tx + 16 * j;
        if (row < nnew && col < C) {
          float d;
          if constexpr (kBytes) {
            const int v = kDot ? acc[i][j] : nrm[row] + nrm[col] - 2 * acc[i][j];
            d = finish_distance(static_cast<float>(v), kDot, a.cosine);
          } else {
            d = finish_distance(acc[i][j], kDot, a.cosine);
          }
          g[row * kLdg + col] = d;
        }
      }
  }
  __syncthreads();

  // 3. Proposals, one warp per target; lane l holds columns l, l + 32, l + 64, l + 96.
  for (uint32_t tt = warp; tt < C; tt += kThreads / 32) {
    const bool tnew = tt < nnew;
    const uint32_t len = tnew ? C : nnew;
    const float wt = worst[tt];
    float dv[4];
    uint32_t total = 0;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const uint32_t j = lane + 32 * q;
      dv[q] = kInf;
      if (j < len) {
        const float d = tnew ? g[tt * kLdg + j] : g[j * kLdg + tt];
        if (d < wt && j != tt) dv[q] = d;
      }
      total += __popc(__ballot_sync(kFull, dv[q] < kInf));
    }
    if (total == 0) continue;
    const uint32_t target = cand[tt];
    unsigned long long* out = a.props + int64_t(target) * a.cap;
    uint32_t base = 0;
    if (lane == 0) base = atomicAdd(a.pcount + target, total);
    base = __shfl_sync(kFull, base, 0);
    if (base >= a.cap) continue;
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const bool ok = dv[q] < kInf;
      const uint32_t b = __ballot_sync(kFull, ok);
      if (ok) {
        const uint32_t slot = base + __popc(b & ((1u << lane) - 1u));
        if (slot < a.cap) out[slot] = make_key(dv[q], cand[lane + 32 * q]);
      }
      base += __popc(b);
    }
  }
}

template <typename T>
void launch_typed(const join_args& a, cudaStream_t stream) {
  if (a.dot)
    join_kernel<T, true><<<unsigned(a.n), kThreads, 0, stream>>>(a);
  else
    join_kernel<T, false><<<unsigned(a.n), kThreads, 0, stream>>>(a);
}

}  // namespace

void launch_join(dtype t, const join_args& a, cudaStream_t stream) {
  switch (t) {
    case dtype::f32: launch_typed<float>(a, stream); break;
    case dtype::f16: launch_typed<__half>(a, stream); break;
    case dtype::u8: launch_typed<uint8_t>(a, stream); break;
    case dtype::i8: launch_typed<int8_t>(a, stream); break;
    default:
      CAGRA_FAIL("the GPU NN-descent takes f32, f16, u8 or i8 vectors, not %s", to_string(t));
  }
  CAGRA_CUDA_CHECK_LAUNCH();
}

}  // namespace cagra::cuda::nnd_detail
