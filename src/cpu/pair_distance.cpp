// Tiles of pair distances (pair_distance.hpp): up to 4 rows against 3, one 8-lane accumulator a
// pair, so a step loads 4 + 3 row blocks for 12 pairs where the per-pair kernel loads 2 for 1.
// On the development machine (AMD EPYC, AVX2; a node's 128 candidate rows of 784 elements, the
// first 64 each against every row after it, as the join does; scripts/dev/cpu-distance-kernels.cpp)
// a pair took 31 ns (f32) and 18-20 ns (u8) against 73 and 31 ns pair by pair. 4 x 3 was the
// fastest f32 shape of 2 x 4, 3 x 3, 2 x 5, 3 x 4 and 4 x 3 (16 AVX2 registers: 12 accumulators,
// the 4 row blocks and the column's block), within 6% of the best for u8.
//
// Float rows sum each pair in one accumulator, element i in lane i % 8, the lanes added in a fixed
// order, whatever the block: so a pair has the same bits in any tile and either order (the
// difference's square and the product do not depend on the order). Byte rows sum exactly in
// int32 chunks of kIntChunk elements (as distance.cpp does), so every kernel agrees bit for bit.
#include "cpu/pair_distance.hpp"

#include <algorithm>
#include <type_traits>

#include <cagra/error.hpp>

#include "cpu/distance.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CAGRA_PAIR_AVX2 1
#define CAGRA_AVX2_FN __attribute__((target("avx2,fma,f16c")))
#endif

namespace cagra::cpu {
namespace {

constexpr size_t kCols = 3;           // columns of a tile
constexpr size_t kIntChunk = 32768;   // int32 sums of up to this many byte products stay in range
const bool kAvx2 = cpu_has_avx2_kernels();

/** Portable tiles (no AVX2): the same lane layout in plain loops; float bits may differ from
 *  the AVX2 tiles' where the compiler fuses the multiply-add. */
template <bool L2, size_t R, typename T, typename S>
void tile_portable(const T* const* a, const T* const* b, size_t i0, size_t i1, S* out) {
  S acc[R * kCols][8] = {};
  for (size_t i = i0; i < i1; ++i)
    for (size_t r = 0; r < R; ++r)
      for (size_t j = 0; j < kCols; ++j) {
        const S x = S(a[r][i]), y = S(b[j][i]);
        acc[r * kCols + j][(i - i0) % 8] += L2 ? (x - y) * (x - y) : x * y;
      }
  for (size_t p = 0; p < R * kCols; ++p) {
    const S* l = acc[p];
    out[p] = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
  }
}

#ifdef CAGRA_PAIR_AVX2

/** The lanes of v added as ((0+4) + (2+6)) + ((1+5) + (3+7)). */
CAGRA_AVX2_FN inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

CAGRA_AVX2_FN inline int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

/** One step of a float tile: 8 elements from i (the first `left` of them under a mask when
 *  Masked; masked lanes load zeros, which add nothing, so the tail keeps the lane layout). */
template <bool L2, size_t R, bool Masked>
CAGRA_AVX2_FN __attribute__((always_inline)) inline void f32_step(const float* const* a,
                                                                  const float* const* b, size_t i,
                                                                  __m256i mask, __m256* acc) {
  auto load = [&](const float* p) CAGRA_AVX2_FN {
    if constexpr (Masked)
      return _mm256_maskload_ps(p + i, mask);
    else
      return _mm256_loadu_ps(p + i);
  };
  __m256 x[R];
  for (size_t r = 0; r < R; ++r) x[r] = load(a[r]);
  for (size_t j = 0; j < kCols; ++j) {
    const __m256 y = load(b[j]);
    for (size_t r = 0; r < R; ++r) {
      __m256& s = acc[r * kCols + j];
      if constexpr (L2) {
        const __m256 d = _mm256_sub_ps(x[r], y);
        s = _mm256_fmadd_ps(d, d, s);
      } else {
        s = _mm256_fmadd_ps(x[r], y, s);
      }
    }
  }
}

/** Float tile over elements [0, dim), 8 at a time. */
template <bool L2, size_t R>
CAGRA_AVX2_FN void tile_f32(const float* const* a, const float* const* b, size_t dim, float* out) {
  __m256 acc[R * kCols];
  for (auto& v : acc) v = _mm256_setzero_ps();
  const __m256i all = _mm256_set1_epi32(-1);
  size_t i = 0;
  for (; i + 8 <= dim; i += 8) f32_step<L2, R, false>(a, b, i, all, acc);
  if (i < dim) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(dim - i)), lane);
    f32_step<L2, R, true>(a, b, i, mask, acc);
  }
  for (size_t p = 0; p < R * kCols; ++p) out[p] = hsum(acc[p]);
}

/** 16 byte elements widened to 16 bits (zero- or sign-extended by type) straight from memory. */
template <typename T>
CAGRA_AVX2_FN inline __m256i widen16(const T* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_signed_v<T>)
    return _mm256_cvtepi8_epi16(v);
  else
    return _mm256_cvtepu8_epi16(v);
}

/** Byte tile over elements [i0, i1) (at most kIntChunk): 16 at a time, widened and summed in
 *  pairs (vpmaddwd) into int32; the tail in plain code. Exact. */
template <bool L2, size_t R, typename T>
CAGRA_AVX2_FN void tile_int(const T* const* a, const T* const* b, size_t i0, size_t i1,
                            int32_t* out) {
  __m256i acc[R * kCols];
  for (auto& v : acc) v = _mm256_setzero_si256();
  size_t i = i0;
  for (; i + 16 <= i1; i += 16) {
    __m256i x[R];
    for (size_t r = 0; r < R; ++r) x[r] = widen16(a[r] + i);
    for (size_t j = 0; j < kCols; ++j) {
      const __m256i y = widen16(b[j] + i);
      for (size_t r = 0; r < R; ++r) {
        const __m256i d = L2 ? _mm256_sub_epi16(x[r], y) : x[r];
        acc[r * kCols + j] =
            _mm256_add_epi32(acc[r * kCols + j], _mm256_madd_epi16(d, L2 ? d : y));
      }
    }
  }
  for (size_t p = 0; p < R * kCols; ++p) {
    int32_t s = hsum(acc[p]);
    const T* x = a[p / kCols];
    const T* y = b[p % kCols];
    for (size_t k = i; k < i1; ++k) {
      const int32_t u = x[k], v = y[k];
      s += L2 ? (u - v) * (u - v) : u * v;
    }
    out[p] = s;
  }
}

#endif  // CAGRA_PAIR_AVX2

/** One tile of R rows against kCols columns: float sums for float rows, exact int64 for bytes. */
template <bool L2, size_t R, typename T>
void tile(const T* const* a, const T* const* b, size_t dim, float* out) {
  if constexpr (std::is_same_v<T, float>) {
#ifdef CAGRA_PAIR_AVX2
    if (kAvx2) return tile_f32<L2, R>(a, b, dim, out);
#endif
    tile_portable<L2, R>(a, b, 0, dim, out);
  } else {
    int64_t sum[R * kCols] = {};
    for (size_t i0 = 0; i0 < dim; i0 += kIntChunk) {
      const size_t i1 = std::min(dim, i0 + kIntChunk);
      int32_t part[R * kCols];
#ifdef CAGRA_PAIR_AVX2
      if (kAvx2)
        tile_int<L2, R>(a, b, i0, i1, part);
      else
#endif
        tile_portable<L2, R>(a, b, i0, i1, part);
      for (size_t p = 0; p < R * kCols; ++p) sum[p] += part[p];
    }
    for (size_t p = 0; p < R * kCols; ++p) out[p] = float(sum[p]);
  }
}

template <bool L2, size_t R, typename T>
void rows_block(const T* const* a, const T* const* b, size_t nb, size_t dim, float* out) {
  float t[R * kCols];
  for (size_t j0 = 0; j0 < nb; j0 += kCols) {
    const size_t nc = std::min(kCols, nb - j0);
    const T* cols[kCols];
    for (size_t j = 0; j < kCols; ++j) cols[j] = b[j0 + std::min(j, nc - 1)];  // pad: repeat
    tile<L2, R>(a, cols, dim, t);
    for (size_t r = 0; r < R; ++r)
      for (size_t j = 0; j < nc; ++j) out[r * nb + j0 + j] = t[r * kCols + j];
  }
}

template <bool L2, typename T>
void any_rows_block(const T* const* a, size_t na, const T* const* b, size_t nb, size_t dim,
                    float* out) {
  switch (na) {
    case 1: return rows_block<L2, 1>(a, b, nb, dim, out);
    case 2: return rows_block<L2, 2>(a, b, nb, dim, out);
    case 3: return rows_block<L2, 3>(a, b, nb, dim, out);
    default: return rows_block<L2, 4>(a, b, nb, dim, out);
  }
}

}  // namespace

template <typename T>
void pair_distance<T>::block(const T* const* a, size_t na, const T* const* b, size_t nb,
                             float* out) const {
  if (na == 0 || nb == 0) return;
  CAGRA_EXPECTS(na <= kMaxRows, "pair_distance::block takes at most %zu rows (got %zu)",
                kMaxRows, na);
  if (m_ == metric::l2) return any_rows_block<true>(a, na, b, nb, dim_, out);
  any_rows_block<false>(a, na, b, nb, dim_, out);
  const bool cosine = m_ == metric::cosine;
  for (size_t p = 0; p < na * nb; ++p) out[p] = cosine ? 1.0f - out[p] : -out[p];
}

template class pair_distance<float>;
template class pair_distance<uint8_t>;
template class pair_distance<int8_t>;

}  // namespace cagra::cpu
