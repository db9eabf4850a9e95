// Team distance (paper §IV-B1, "warp splitting"): one distance is computed by a team of kTeam
// lanes (2..32, a power of two, aligned inside the warp). Each lane reads 16 bytes of the row per
// load (the widest load), so a team reads kTeam * 16 bytes per step; dim * sizeof(T) / 16 lanes
// cover a row in one step, and the other teams of the warp work on other candidates at the same
// time. The partial sums are combined with xor-shuffles restricted to the team's lanes, so teams
// of one warp may take different branches (e.g. run out of candidates) without deadlock.
//
// Float rows (f32, f16): the query sits in shared memory as float, one 16-byte chunk of the row
// = V = 16 / sizeof(T) elements = P = V / 4 float4 of the query, read with 16-byte loads. The P
// float4 of chunk c are stored XOR-swizzled (slot k ^ swizzle(c)) so that the 8 lanes of a
// quarter warp, which read 8 consecutive chunks, hit 8 different 16-byte bank groups.
//
// Byte rows (u8, i8): exact integer arithmetic with __dp4a (4 byte products summed per
// instruction), the query kept as bytes: dot = sum q*x, and L2 = |q|^2 + sum (x*x - 2 q*x). Two
// dp4a per 4 elements instead of a conversion, a subtraction and a multiply-add each, and the
// result is the CPU's exact integer, converted to float the same way (int32: dim <= 16384).
//
// Rows on the device and the query are zero padded to whole chunks, so the padding adds nothing.
#pragma once

#include <cstdint>
#include <type_traits>

#include <cuda_fp16.h>

namespace cagra::cuda::dev {

/** Per storage type: elements per 16-byte chunk; whether distances use integer dp4a. */
template <typename T>
struct elem_traits {
  static constexpr uint32_t V = 16 / sizeof(T);
  static constexpr bool is_byte = sizeof(T) == 1;
};

/** Index of the float4 holding query elements [4k, 4k + 4) of chunk c (float rows). */
template <typename T>
__device__ __forceinline__ uint32_t query_slot(uint32_t c, uint32_t k) {
  constexpr uint32_t P = elem_traits<T>::V / 4;
  if constexpr (P == 1) {
    return c;
  } else {
    static_assert(P == 2, "float rows are f32 or f16");
    return c * 2 + (k ^ ((c >> 2) & 1u));
  }
}

/** Float index in shared memory of query element e (for storing the query; float rows). */
template <typename T>
__device__ __forceinline__ uint32_t query_index(uint32_t e) {
  constexpr uint32_t V = elem_traits<T>::V;
  const uint32_t c = e / V, v = e % V;
  return query_slot<T>(c, v / 4) * 4 + v % 4;
}

/** Elements [4k, 4k + 4) of the chunk w as floats (float rows). */
template <typename T>
__device__ __forceinline__ float4 decode(const uint32_t (&w)[4], int k) {
  if constexpr (sizeof(T) == 4) {
    return make_float4(__uint_as_float(w[0]), __uint_as_float(w[1]), __uint_as_float(w[2]),
                       __uint_as_float(w[3]));
  } else {
    const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&w[2 * k]));
    const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&w[2 * k + 1]));
    return make_float4(a.x, a.y, b.x, b.y);
  }
}

__device__ __forceinline__ float acc_l2(float acc, float q, float x) {
  const float d = q - x;
  return fmaf(d, d, acc);
}

/** Float rows: acc += the chunk's sum of (q - x)^2 (kDot false) or q * x (kDot true). */
template <typename T, bool kDot>
__device__ __forceinline__ float chunk_accumulate(const uint4& v, const float4* q4, uint32_t c,
                                                  float acc) {
  constexpr uint32_t P = elem_traits<T>::V / 4;
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (uint32_t k = 0; k < P; ++k) {
    const float4 q = q4[query_slot<T>(c, k)];
    const float4 x = decode<T>(w, k);
    if constexpr (kDot) {
      acc = fmaf(q.x, x.x, acc);
      acc = fmaf(q.y, x.y, acc);
      acc = fmaf(q.z, x.z, acc);
      acc = fmaf(q.w, x.w, acc);
    } else {
      acc = acc_l2(acc, q.x, x.x);
      acc = acc_l2(acc, q.y, x.y);
      acc = acc_l2(acc, q.z, x.z);
      acc = acc_l2(acc, q.w, x.w);
    }
  }
  return acc;
}

/** Four bytes times four bytes, summed into c (unsigned for u8, signed for i8). */
template <typename T>
__device__ __forceinline__ int dp4(uint32_t a, uint32_t b, int c) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return static_cast<int>(__dp4a(a, b, static_cast<uint32_t>(c)));
  } else {
    return __dp4a(static_cast<int>(a), static_cast<int>(b), c);
  }
}

/** Byte rows: acc += the chunk's sum of x*x - 2 q*x (kDot false) or q*x (kDot true). */
template <typename T, bool kDot>
__device__ __forceinline__ int chunk_accumulate_bytes(const uint4& x, const uint4& q, int acc) {
  if constexpr (kDot) {
    acc = dp4<T>(q.x, x.x, acc);
    acc = dp4<T>(q.y, x.y, acc);
    acc = dp4<T>(q.z, x.z, acc);
    acc = dp4<T>(q.w, x.w, acc);
    return acc;
  } else {
    int xx = 0, qx = 0;
    xx = dp4<T>(x.x, x.x, xx);
    qx = dp4<T>(q.x, x.x, qx);
    xx = dp4<T>(x.y, x.y, xx);
    qx = dp4<T>(q.y, x.y, qx);
    xx = dp4<T>(x.z, x.z, xx);
    qx = dp4<T>(q.z, x.z, qx);
    xx = dp4<T>(x.w, x.w, xx);
    qx = dp4<T>(q.w, x.w, qx);
    return acc + xx - 2 * qx;
  }
}

/** Mask of the kTeam lanes of the calling thread's team inside its warp. */
template <uint32_t kTeam>
__device__ __forceinline__ uint32_t team_mask() {
  if constexpr (kTeam == 32) {
    return 0xFFFFFFFFu;
  } else {
    return ((1u << kTeam) - 1u) << ((threadIdx.x & 31u) & ~(kTeam - 1u));
  }
}

/** The team's total of its lanes' partial sums, in every lane (xor-shuffles within the team). */
template <uint32_t kTeam, typename Acc>
__device__ __forceinline__ Acc team_reduce(Acc acc) {
  const uint32_t mask = team_mask<kTeam>();
#pragma unroll
  for (uint32_t off = kTeam / 2; off > 0; off >>= 1) acc += __shfl_xor_sync(mask, acc, off, kTeam);
  return acc;
}

/** Float rows: the sum over the row (squared L2 or dot product) computed by the team; every
 *  lane of the team gets the total. Must be called by all kTeam lanes of a team together. */
template <typename T, uint32_t kTeam, bool kDot>
__device__ __forceinline__ float team_sum(const uint4* row, const float4* q4, uint32_t n_chunks,
                                          uint32_t lane) {
  float acc = 0.0f;
  // Two loads in flight per lane before the first use.
  for (uint32_t c0 = 0; c0 < n_chunks; c0 += 2 * kTeam) {
    const uint32_t ca = c0 + lane, cb = ca + kTeam;
    uint4 va = make_uint4(0, 0, 0, 0), vb = va;
    if (ca < n_chunks) va = __ldg(row + ca);
    if (cb < n_chunks) vb = __ldg(row + cb);
    if (ca < n_chunks) acc = chunk_accumulate<T, kDot>(va, q4, ca, acc);
    if (cb < n_chunks) acc = chunk_accumulate<T, kDot>(vb, q4, cb, acc);
  }
  return team_reduce<kTeam>(acc);
}

/** Byte rows: the team's exact sum over the row of q*x (kDot) or x*x - 2 q*x (add |q|^2 for
 *  the squared L2 distance); q16 = the query bytes, one uint4 per chunk. */
template <typename T, uint32_t kTeam, bool kDot>
__device__ __forceinline__ int team_sum_bytes(const uint4* row, const uint4* q16, uint32_t n_chunks,
                                              uint32_t lane) {
  int acc = 0;
  for (uint32_t c0 = 0; c0 < n_chunks; c0 += 2 * kTeam) {
    const uint32_t ca = c0 + lane, cb = ca + kTeam;
    uint4 va = make_uint4(0, 0, 0, 0), vb = va;
    if (ca < n_chunks) va = __ldg(row + ca);
    if (cb < n_chunks) vb = __ldg(row + cb);
    if (ca < n_chunks) acc = chunk_accumulate_bytes<T, kDot>(va, q16[ca], acc);
    if (cb < n_chunks) acc = chunk_accumulate_bytes<T, kDot>(vb, q16[cb], acc);
  }
  return team_reduce<kTeam>(acc);
}

/** Chunks per lane that a latency-bound distance (team_load_head) loads before the first use:
 *  one memory round trip for rows of up to 4 x kTeam chunks (128-d f32 at team 8, 128-d u8 at
 *  team 2), where team_sum keeps two loads in flight (two round trips for such a row). */
constexpr uint32_t kHeadChunks = 4;

/** The first N chunks of a lane's share of a row: chunk lane + j kTeam in v[j] (zero past the
 *  row). */
template <uint32_t N>
struct row_chunks {
  uint4 v[N];
};
using row_head = row_chunks<kHeadChunks>;

/** Issues the loads of the lane's first kHeadChunks chunks of `row` (chunk lane + j kTeam). */
template <uint32_t kTeam>
__device__ __forceinline__ row_head team_load_head(const uint4* row, uint32_t n_chunks,
                                                   uint32_t lane) {
  row_head h;
#pragma unroll
  for (uint32_t j = 0; j < kHeadChunks; ++j) {
    const uint32_t c = lane + j * kTeam;
    h.v[j] = c < n_chunks ? __ldg(row + c) : make_uint4(0, 0, 0, 0);
  }
  return h;
}

/** The lane's partial sum over the chunks of h (team_sum / team_sum_bytes before the reduction,
 *  in the same order): q = q4 (float rows) or q16 (byte rows). */
template <typename T, uint32_t kTeam, bool kDot, uint32_t N, typename Q>
__device__ __forceinline__ auto lane_sum_head(const row_chunks<N>& h, const Q* q, uint32_t n_chunks,
                                              uint32_t lane) {
  std::conditional_t<elem_traits<T>::is_byte, int, float> acc = 0;
#pragma unroll
  for (uint32_t j = 0; j < N; ++j) {
    const uint32_t c = lane + j * kTeam;
    if constexpr (elem_traits<T>::is_byte) {
      if (c < n_chunks) acc = chunk_accumulate_bytes<T, kDot>(h.v[j], q[c], acc);
    } else {
      if (c < n_chunks) acc = chunk_accumulate<T, kDot>(h.v[j], q, c, acc);
    }
  }
  return acc;
}

/** team_sum (float rows) with the head already loaded; the rest of a longer row is read here. */
template <typename T, uint32_t kTeam, bool kDot>
__device__ __forceinline__ float team_sum_head(const row_head& h, const uint4* row,
                                               const float4* q4, uint32_t n_chunks, uint32_t lane) {
  float acc = lane_sum_head<T, kTeam, kDot>(h, q4, n_chunks, lane);
  for (uint32_t c = lane + kHeadChunks * kTeam; c < n_chunks; c += kTeam)
    acc = chunk_accumulate<T, kDot>(__ldg(row + c), q4, c, acc);
  return team_reduce<kTeam>(acc);
}

/** team_sum_bytes with the head already loaded. */
template <typename T, uint32_t kTeam, bool kDot>
__device__ __forceinline__ int team_sum_bytes_head(const row_head& h, const uint4* row,
                                                   const uint4* q16, uint32_t n_chunks,
                                                   uint32_t lane) {
  int acc = lane_sum_head<T, kTeam, kDot>(h, q16, n_chunks, lane);
  for (uint32_t c = lane + kHeadChunks * kTeam; c < n_chunks; c += kTeam)
    acc = chunk_accumulate_bytes<T, kDot>(__ldg(row + c), q16[c], acc);
  return team_reduce<kTeam>(acc);
}

}  // namespace cagra::cuda::dev
