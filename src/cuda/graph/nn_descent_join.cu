// The local join of the GPU NN-descent (see nn_descent.cu for the whole iteration). One CTA of
// 256 threads per node u:
//  1. Candidates: NEW = fwd_new(u) ∪ rev_new(u), OLD = (fwd_old(u) ∪ rev_old(u)) \ NEW, each at
//     most 2S = 64 (S <= 32), deduplicated; cand[0, nnew) are NEW, cand[nnew, C) OLD.
//  2. Distances of every NEW row against every candidate, a small GEMM: the rows are read in
//     chunks of 32 words (32 floats, or 128 bytes as 32 packed words) of every candidate into
//     shared memory (transposed, [word][candidate]).
//     - Float rows: thread (ty, tx) owns rows 4ty..4ty+3 and columns tx + 16j (j < 8) of the
//       [64 x 128] tile and accumulates a * b element by element in index order in fp32 (the
//       order of row_distance, so the same pair gives the same bits anywhere); l2 is
//       |a|^2 + |b|^2 - 2 a.b, the norms summed in the same order (one FMA an element where
//       (a - b)^2 took two instructions). From sm_80: tensor cores (mma.sync m16n8k8, tf32
//       inputs rounded to nearest, fp32 sums), laid out as the byte path below but unswizzled
//       ([element][candidate], rows of kLdt = 136 words: fragment loads free of bank conflicts);
//       the random start (nn_descent.cu, tf32_start_distances) sums a pair the same way, and
//       lists returned with distances are re-measured from the full elements.
//     - Byte rows: tensor cores (mma.sync m16n8k32, u8 x u8 or s8 x s8 into s32: exact integer
//       dot products, so the same bits as row_distance's dp4a sums); warp w owns columns
//       16w..16w+15 of every NEW row; distances are |a|^2 + |b|^2 - 2 a.b (l2) or a.b. The
//       chunk is stored with its columns XOR-swizzled by word (bits 2-4 of the column flip with
//       bits 2-4 of word / 4), so that both the staging stores and the fragment loads are free
//       of bank conflicts. Before sm_80 the dp4a tile of the float rows' shape is used instead.
//  3. Proposals: a NEW target t takes row t (every other candidate), an OLD target takes column
//     t (the NEW rows); entries below t's current worst distance (the snapshot of this
//     iteration) are counted by one warp, one atomicAdd reserves room in t's proposal buffer,
//     and they are written as (distance, id) keys; past the buffer's room an offer goes to the
//     slot its id hashes to, which keeps the nearer key (atomicMin). With check_listed (the
//     host's 1/8 rule) offers of ids the target's list already has are dropped first: they
//     would take the room and win the slots (bench/results/logs/nnd-buffer-emulation-cpu.txt;
//     on the GPU half the iterations, logs/nnd-hybrid-*.txt); the check searches a copy of the
//     target's list in shared memory (logs/nnd-shared-list-*.txt). (Keeping only each CTA's
//     4..32 nearest offers per target was tried: lower recall and slower; so was skipping the
//     mirrored half of NEW x NEW: no gain, a CTA waits for its busiest warps; so were four
//     binary searches in lockstep in global memory, and loading the next target's list while
//     searching the current one: no faster than loading it when there are offers.)
#include <cuda_runtime_api.h>

#include "cuda/check.hpp"
#include "cuda/graph/nn_descent_detail.cuh"

namespace cagra::cuda::nnd_detail {
namespace {

constexpr uint32_t kThreads = 256;
constexpr uint32_t kMaxNew = 64, kMaxCand = 128;
constexpr uint32_t kWords = 32;  // 32-bit words of a row per chunk
constexpr uint32_t kLdx = 132;   // chunk row length in words: 128 candidates + pad (multiple of 4)
constexpr uint32_t kLdb = 136;   // the same for the swizzled byte chunk (8 banks a word)
constexpr uint32_t kLdg = 129;   // distance-tile row length: column reads conflict-free
constexpr uint32_t kBufWords = (kMaxNew * kLdg > kWords * kLdb) ? kMaxNew * kLdg : kWords * kLdb;
constexpr uint32_t kFull = 0xFFFFFFFFu;
constexpr uint32_t kWarps = kThreads / 32;
constexpr uint32_t kSharedK = 128;  // lists up to this long are searched in a copy in shared memory
constexpr float kInf = __builtin_huge_valf();

constexpr uint32_t kLdt = 136;  // the tf32 chunk's row length: fragment loads conflict-free

/** Word `w`, candidate `c` of the swizzled byte chunk. */
__device__ __forceinline__ uint32_t byte_slot(uint32_t w, uint32_t c) {
  return w * kLdb + (c ^ (((w >> 2) & 7u) << 2));
}

/** c += a * b over 16 rows x 8 columns x 32 bytes (exact: s32 accumulators). */
template <typename T>
__device__ __forceinline__ void mma_bytes(int (&c)[4], const uint32_t (&a)[4],
                                          const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if constexpr (std::is_same_v<T, int8_t>)
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/** Key i of a list: in global memory read through the read-only cache (the lists do not change
 *  during the join), or a warp's copy in shared memory. */
template <bool kShared>
__device__ __forceinline__ unsigned long long list_key(const unsigned long long* list, uint32_t i) {
  if constexpr (kShared)
    return list[i];
  else
    return __ldg(list + i);
}
/** Whether `key` is one of the k ascending keys at `list`. */
template <bool kShared>
__device__ __forceinline__ bool in_sorted(const unsigned long long* list, uint32_t k,
                                          unsigned long long key) {
  uint32_t lo = 0, n = k;
  while (n > 0) {
    const uint32_t half = n / 2;
    if (list_key<kShared>(list, lo + half) < key) {
      lo += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  return lo < k && list_key<kShared>(list, lo) == key;
}

template <typename T, bool kDot>
__global__ void __launch_bounds__(kThreads, 4) join_kernel(join_args a) {
  using tr = unpack_traits<T>;
  constexpr bool kBytes = tr::kBytes;
  constexpr uint32_t kPer = tr::kPer;
  constexpr uint32_t kU = kWords / kPer;  // 16-byte words per chunk
  using acc_t = std::conditional_t<kBytes, int, float>;

  constexpr uint32_t kSlots = 2 * kMaxCand;  // dedup table: id -> its lowest candidate slot
  static_assert(kSlots <= kThreads, "one thread clears each table slot");
  __shared__ uint32_t hkey[kSlots], howner[kSlots];
  __shared__ uint32_t cand[kMaxCand];
  __shared__ float worst[kMaxCand];
  __shared__ int nrm[kMaxCand];      // byte rows, l2: |x|^2 of each candidate
  __shared__ float nrm_f[kMaxCand];  // float rows, l2
  __shared__ uint32_t wtot[4];
  __shared__ __align__(16) uint32_t buf[kBufWords];
  // The listed check, a warp's own: its target's list, the columns offered, which are listed.
  __shared__ unsigned long long list_copy[kWarps][kSharedK];
  __shared__ uint8_t offer_col[kWarps][kMaxCand], offer_listed[kWarps][kMaxCand];

  const int64_t u = blockIdx.x;
  const uint32_t t = threadIdx.x, lane = t & 31u, warp = t >> 5;
  const uint32_t s = a.s;

  // 1. Candidates. Threads 0..63: NEW slots (fwd 0..31, rev 32..63); 64..127: OLD slots. An id
  // in several slots keeps its first (so NEW wins over OLD): ids go into a shared hash table,
  // each slot's lowest thread by atomicMin.
  if (t < kSlots) {
    hkey[t] = kInvalidId;
    howner[t] = kMaxCand;
  }
  uint32_t my_id = kInvalidId, hslot = 0;
  if (t < kMaxCand) {
    const uint32_t part = t >> 6, idx = t & 63u;
    const uint32_t* fwd = part ? a.fwd_old : a.fwd_new;
    const uint32_t* rev = part ? a.rev_old : a.rev_new;
    const uint32_t* rc = part ? a.rcnt_old : a.rcnt_new;
    if (idx < 32) {
      if (idx < s) my_id = fwd[u * s + idx];
    } else if (idx - 32 < min(rc[u], s)) {
      my_id = rev[u * s + (idx - 32)];
    }
  }
  __syncthreads();  // the table is clear
  if (my_id != kInvalidId) {
    for (hslot = (my_id * 0x9E3779B1u) >> 24;; hslot = (hslot + 1) % kSlots) {
      const uint32_t prev = atomicCAS(&hkey[hslot], kInvalidId, my_id);
      if (prev == kInvalidId || prev == my_id) break;
    }
    atomicMin(&howner[hslot], t);
  }
  __syncthreads();
  bool keep = false;
  uint32_t bal = 0;
  if (t < kMaxCand) {
    keep = my_id != kInvalidId && howner[hslot] == t;  // first occurrence only
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
    nrm_f[c] = 0.0f;
  }

  // 2. The distance tile.
  constexpr bool kMma = kBytes && kTensorCores;    // bytes: s8/u8 mma
  constexpr bool kMmaF = !kBytes && kTensorCores;  // float rows: tf32 mma
  // Float rows (and bytes without tensor cores): thread (ty, tx) owns rows 4ty.., columns tx + 16j.
  const uint32_t ty = t >> 4, tx = t & 15u, r0 = ty * 4;
  const bool rows_on = r0 < nnew;
  const uint32_t jmax = (C + 15) / 16;
  acc_t acc[4][8];
  // Tensor cores: warp `warp` owns columns n0..n0+15 (2 tiles of 8) of every 16-row tile;
  // fragment coordinates (group, thread in group) as the PTX manual names them.
  const uint32_t grp = lane >> 2, tig = lane & 3u, n0 = warp * 16;
  const bool cols_on = n0 < C;
  int mma_acc[4][2][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      acc[i][j] = acc_t(0);
      mma_acc[i][j / 4][j % 4] = 0;
    }
  const uint32_t n_chunks = (a.row_u4 + kU - 1) / kU;
  float* xs = reinterpret_cast<float*>(buf);
  for (uint32_t c = 0; c < n_chunks; ++c) {
    __syncthreads();
    for (uint32_t e = t; e < C * kU; e += kThreads) {
      const uint32_t ci = e / kU, q = e % kU, gq = c * kU + q;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (gq < a.row_u4) v = __ldg(a.data + int64_t(cand[ci]) * a.row_u4 + gq);
      if constexpr (kMma) {
        buf[byte_slot(q * 4 + 0, ci)] = v.x;
        buf[byte_slot(q * 4 + 1, ci)] = v.y;
        buf[byte_slot(q * 4 + 2, ci)] = v.z;
        buf[byte_slot(q * 4 + 3, ci)] = v.w;
      } else if constexpr (kBytes) {
        buf[(q * 4 + 0) * kLdx + ci] = v.x;
        buf[(q * 4 + 1) * kLdx + ci] = v.y;
        buf[(q * 4 + 2) * kLdx + ci] = v.z;
        buf[(q * 4 + 3) * kLdx + ci] = v.w;
      } else if constexpr (kMmaF) {
        float f[kPer];
        unpack_floats<T>(v, f);
#pragma unroll
        for (uint32_t i = 0; i < kPer; ++i) buf[(q * kPer + i) * kLdt + ci] = tf32_bits(f[i]);
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
        for (uint32_t w = 0; w < kWords; ++w) {
          const uint32_t x = kMma ? buf[byte_slot(w, t)] : buf[w * kLdx + t];
          s2 = dev::dp4<T>(x, x, s2);
        }
        nrm[t] = s2;
      }
    } else if constexpr (!kBytes && !kDot) {
      if (t < C) {  // in element order, as row_distance (and the tf32 start) sums it
        float s2 = nrm_f[t];
#pragma unroll 8
        for (uint32_t w = 0; w < kWords; ++w) {
          const float x = kMmaF ? __uint_as_float(buf[w * kLdt + t]) : xs[w * kLdx + t];
          s2 = fmaf(x, x, s2);
        }
        nrm_f[t] = s2;
      }
    }
    if constexpr (kMma || kMmaF) {
      if (cols_on) {
        // Word k of candidate c: the byte chunk is swizzled, the tf32 chunk is not.
        auto at = [&](uint32_t k, uint32_t c) {
          if constexpr (kMma)
            return buf[byte_slot(k, c)];
          else
            return buf[k * kLdt + c];
        };
#pragma unroll
        for (uint32_t k8 = 0; k8 < kWords; k8 += 8) {  // 32 bytes or 8 elements a step
          uint32_t fb[2][2];
#pragma unroll
          for (int nt = 0; nt < 2; ++nt) {
            const uint32_t col = n0 + 8 * nt + grp;
            fb[nt][0] = at(k8 + tig, col);
            fb[nt][1] = at(k8 + 4 + tig, col);
          }
#pragma unroll
          for (int mt = 0; mt < 4; ++mt) {
            if (uint32_t(16 * mt) < nnew) {
              const uint32_t row = 16 * mt + grp;
              const uint32_t fa[4] = {at(k8 + tig, row), at(k8 + tig, row + 8),
                                      at(k8 + 4 + tig, row), at(k8 + 4 + tig, row + 8)};
              if constexpr (kMma) {
                mma_bytes<T>(mma_acc[mt][0], fa, fb[0]);
                mma_bytes<T>(mma_acc[mt][1], fa, fb[1]);
              } else {
                mma_tf32(reinterpret_cast<float(&)[4]>(acc[mt][0]), fa, fb[0]);
                mma_tf32(reinterpret_cast<float(&)[4]>(acc[mt][4]), fa, fb[1]);
              }
            }
          }
        }
      }
    } else if (rows_on) {
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
              for (int i = 0; i < 4; ++i) acc[i][j] = fmaf(ar[i], b, acc[i][j]);  // x . y
            }
          }
        }
      }
    }
  }
  __syncthreads();  // the chunk buffer becomes the distance tile
  float* g = reinterpret_cast<float*>(buf);
  auto byte_distance = [&](int dot, uint32_t row, uint32_t col) {
    const int v = kDot ? dot : nrm[row] + nrm[col] - 2 * dot;
    return finish_distance(static_cast<float>(v), kDot, a.cosine);
  };
  auto float_distance = [&](float dot, uint32_t row, uint32_t col) {
    return kDot ? finish_distance(dot, true, a.cosine) : l2_from_dot(nrm_f[row], nrm_f[col], dot);
  };
  if constexpr (kMma || kMmaF) {
    if (cols_on) {
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
          for (int h = 0; h < 4; ++h) {
            const uint32_t row = 16 * mt + grp + (h >= 2 ? 8 : 0);
            const uint32_t col = n0 + 8 * nt + 2 * tig + (h & 1);
            if (row < nnew && col < C) {
              if constexpr (kMma)
                g[row * kLdg + col] = byte_distance(mma_acc[mt][nt][h], row, col);
              else
                g[row * kLdg + col] = float_distance(acc[mt][4 * nt + h], row, col);
            }
          }
    }
  } else if (rows_on) {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const uint32_t row = r0 + i, col = tx + 16 * j;
        if (row < nnew && col < C) {
          if constexpr (kBytes)
            g[row * kLdg + col] = byte_distance(acc[i][j], row, col);
          else
            g[row * kLdg + col] = float_distance(acc[i][j], row, col);
        }
      }
  }
  __syncthreads();

  // 3. Proposals, one warp per target; lane l holds columns l, l + 32, l + 64, l + 96. First
  // come while the target's buffer has room; past it each offer competes in the slot its id
  // hashes to, which keeps the nearer key (the early iterations offer many times the room).
  static_assert(kMaxCand <= 32 * kWarps, "a warp's targets fit in one ballot");
  const uint32_t below = (1u << lane) - 1u;                           // lanes before this one
  const uint32_t slot_shift = 32u - uint32_t(__ffs(int(a.cap)) - 1);  // cap: a power of two
  for (uint32_t tt = warp; tt < C; tt += kWarps) {
    const bool tnew = tt < nnew;
    const uint32_t len = tnew ? C : nnew, nq = (len + 31) / 32;  // uniform over the warp
    const float wt = worst[tt];
    float dv[4];
    uint32_t offers[4], total = 0;  // offers[q]: ballot of the lanes offering column lane + 32 q
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      dv[q] = kInf;
      offers[q] = 0;
      if (uint32_t(q) < nq) {
        const uint32_t j = lane + 32 * q;
        if (j < len) {
          const float d = tnew ? g[tt * kLdg + j] : g[j * kLdg + tt];
          if (d < wt && j != tt) dv[q] = d;
        }
      }
    }
    const uint32_t target = cand[tt];
    if (a.check_listed &&
        __any_sync(kFull, dv[0] < kInf || dv[1] < kInf || dv[2] < kInf || dv[3] < kInf)) {
      // Offers of ids the target's list already has take room and win hashed slots: dropped
      // here in the iterations where they are many (the host's 1/8 rule). A listed id is the
      // same (distance, id) key (a distance has the same bits wherever it is computed), found
      // by a binary search of the sorted list. The warp copies the list into shared memory
      // first (k <= kSharedK), one round trip where the searches in global memory made log2(k)
      // dependent ones, and compacts the offers to its first lanes, one search a lane, not a
      // round of searches for each of the 4 columns a lane holds.
      const unsigned long long* list = a.keys + int64_t(target) * a.k;
      unsigned long long* copy = list_copy[warp];
      uint8_t *cols = offer_col[warp], *listed = offer_listed[warp];
      const bool in_shared = a.k <= kSharedK;
      __syncwarp();  // the previous target's searches are done
      if (in_shared) {
        unsigned long long v[kSharedK / 32];  // every load in flight before the first store
#pragma unroll
        for (uint32_t r = 0; r < kSharedK / 32; ++r)
          if (lane + 32 * r < a.k) v[r] = __ldg(list + lane + 32 * r);
#pragma unroll
        for (uint32_t r = 0; r < kSharedK / 32; ++r)
          if (lane + 32 * r < a.k) copy[lane + 32 * r] = v[r];
      }
      uint32_t n_offers = 0;
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const uint32_t b = __ballot_sync(kFull, dv[q] < kInf);
        if (dv[q] < kInf) cols[n_offers + __popc(b & below)] = uint8_t(lane + 32 * q);
        n_offers += __popc(b);
      }
      __syncwarp();
      for (uint32_t o = lane; o < n_offers; o += 32) {
        const uint32_t j = cols[o];
        const unsigned long long key =
            make_key(tnew ? g[tt * kLdg + j] : g[j * kLdg + tt], cand[j]);
        listed[j] = in_shared ? in_sorted<true>(copy, a.k, key) : in_sorted<false>(list, a.k, key);
      }
      __syncwarp();
#pragma unroll
      for (int q = 0; q < 4; ++q)
        if (dv[q] < kInf && listed[lane + 32 * q]) dv[q] = kInf;
    }
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      offers[q] = uint32_t(q) < nq ? __ballot_sync(kFull, dv[q] < kInf) : 0u;
      total += __popc(offers[q]);
    }
    if (total == 0) continue;
    unsigned long long* out = a.props + int64_t(target) * a.cap;
    uint32_t base = 0;
    if (lane == 0) base = atomicAdd(a.pcount + target, total);
    base = __shfl_sync(kFull, base, 0);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if (dv[q] < kInf) {
        const uint32_t slot = base + __popc(offers[q] & below), id = cand[lane + 32 * q];
        const unsigned long long key = make_key(dv[q], id);
        if (slot < a.cap) {
          out[slot] = key;
        } else {  // the buffer is full: the slot the id hashes to keeps the nearer key (no read
                  // of the slot first: a round trip each, which cost more than the atomics saved)
          atomicMin(out + ((id * 0x9E3779B1u) >> slot_shift), key);
        }
      }
      base += __popc(offers[q]);
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
