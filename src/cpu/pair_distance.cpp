// Tiles of pair distances (pair_distance.hpp): up to 4 rows against 3 (AVX2) or 6 (AVX-512), one
// accumulator a pair, so a step loads 4 + 3 (or 4 + 6) row blocks for 12 (24) pairs where the
// per-pair kernel loads 2 for 1. In the join's pattern (a node's 128 candidate rows of 784
// elements, the first 64 each against every row after it; scripts/dev/cpu-distance-kernels.cpp):
// - development machine (AMD EPYC, AVX2): a pair 31 ns (f32) and 18-20 ns (u8) in AVX2 4 x 3 tiles
//   against 73 and 31 ns pair by pair; 4 x 3 was the fastest f32 shape of 2 x 4, 3 x 3, 2 x 5,
//   3 x 4 and 4 x 3 (16 registers: 12 accumulators, the 4 row blocks and the column's block);
// - host of an H200 machine (Xeon, AVX-512; bench/results/logs/cpu-distance-kernels-h200-host.txt
//   and an earlier run): AVX-512 4 x 6 tiles 18.0-21.0 ns (f32) and 15.9-17.3 ns (u8) against
//   26.4-26.8 and 24.0-24.7 for AVX2 4 x 3 and 65-66 and 37 pair by pair (32 registers; 6 x 4
//   within 10% either way, 4 x 3 and 8 x 3 slower). Whole builds: 1.08-1.15x the AVX2 tiles.
//
// Float rows sum each pair in one accumulator, element i in lane i % W (W = 8 or 16 by the
// instruction set the CPU has), the lanes added in a fixed order, whatever the tile: so within a
// process a pair has the same bits in any tile and either order (the difference's square and
// the product do not depend on the order); between an AVX2 and an AVX-512 CPU the last bits can
// differ. Byte rows sum exactly in int32 chunks of kIntChunk elements (as distance.cpp does), so
// every kernel on every CPU agrees bit for bit.
#include "cpu/pair_distance.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include <cagra/error.hpp>

#include "cpu/avx2.hpp"
#include "cpu/distance.hpp"

#ifdef CAGRA_CPU_AVX2
#define CAGRA_PAIR_SIMD 1
#define CAGRA_AVX2_FN __attribute__((target("avx2,fma,f16c")))
#define CAGRA_AVX512_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))
#endif

namespace cagra::cpu {
namespace {

enum class tile_isa { portable, avx2, avx512 };

tile_isa pick_isa() {
#ifdef CAGRA_PAIR_SIMD
  if (!cpu_has_avx2_kernels()) return tile_isa::portable;
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
  return avx512 ? tile_isa::avx512 : tile_isa::avx2;
#else
  return tile_isa::portable;
#endif
}

/** The tiles' instruction set, picked on first use: a namespace-scope constant would be set
 *  during static initialization, possibly before distance.cpp's CPU checks it reads (their order
 *  across files is the link's), and a program linking the static library with this file first
 *  got the portable tiles. */
tile_isa isa() {
  static const tile_isa picked = pick_isa();
  return picked;
}

/** Portable tiles (no AVX2): 8 lanes in plain loops; float bits may differ from the SIMD tiles'. */
template <bool L2, size_t R, size_t C, typename T, typename S>
void tile_portable(const T* const* a, const T* const* b, size_t i0, size_t i1, S* out) {
  S acc[R * C][8] = {};
  for (size_t i = i0; i < i1; ++i)
    for (size_t r = 0; r < R; ++r)
      for (size_t j = 0; j < C; ++j) {
        const S x = S(a[r][i]), y = S(b[j][i]);
        acc[r * C + j][(i - i0) % 8] += L2 ? (x - y) * (x - y) : x * y;
      }
  for (size_t p = 0; p < R * C; ++p) {
    const S* l = acc[p];
    out[p] = ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
  }
}

#ifdef CAGRA_PAIR_SIMD

/** The two instruction sets' vectors and operations, so that one tile template serves both. */
struct avx2_ops {
  static constexpr size_t kFloats = 8, kBytes = 16;  // elements a float / byte step
  using vf = __m256;
  using vi = __m256i;
  CAGRA_AVX2_FN static vf fzero() { return _mm256_setzero_ps(); }
  CAGRA_AVX2_FN static vf fload(const float* p) { return _mm256_loadu_ps(p); }
  CAGRA_AVX2_FN static vf fload_first(const float* p, size_t n) {  // n < 8; zeros after
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_maskload_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), lane));
  }
  CAGRA_AVX2_FN static vf fsub(vf x, vf y) { return _mm256_sub_ps(x, y); }
  CAGRA_AVX2_FN static vf fma(vf x, vf y, vf s) { return _mm256_fmadd_ps(x, y, s); }
  CAGRA_AVX2_FN static float fsum(vf v) { return avx2::hsum(v); }
  CAGRA_AVX2_FN static vi izero() { return _mm256_setzero_si256(); }
  template <typename T>
  CAGRA_AVX2_FN static vi widen(const T* p) {  // 16 bytes to 16-bit lanes, by the type's sign
    return avx2::widen16(p);
  }
  template <typename T>
  CAGRA_AVX2_FN static vi widen_first(const T* p, size_t n) {  // n < 16; zeros after
    alignas(16) T v[16] = {};
    std::memcpy(v, p, n);
    return widen(v);
  }
  CAGRA_AVX2_FN static vi isub(vi x, vi y) { return _mm256_sub_epi16(x, y); }
  CAGRA_AVX2_FN static vi imadd(vi x, vi y, vi s) {
    return _mm256_add_epi32(s, _mm256_madd_epi16(x, y));
  }
  CAGRA_AVX2_FN static int32_t isum(vi v) { return avx2::hsum(v); }
};

struct avx512_ops {
  static constexpr size_t kFloats = 16, kBytes = 32;
  using vf = __m512;
  using vi = __m512i;
  CAGRA_AVX512_FN static vf fzero() { return _mm512_setzero_ps(); }
  CAGRA_AVX512_FN static vf fload(const float* p) { return _mm512_loadu_ps(p); }
  CAGRA_AVX512_FN static vf fload_first(const float* p, size_t n) {  // n < 16; zeros after
    return _mm512_maskz_loadu_ps(__mmask16((1u << n) - 1), p);
  }
  CAGRA_AVX512_FN static vf fsub(vf x, vf y) { return _mm512_sub_ps(x, y); }
  CAGRA_AVX512_FN static vf fma(vf x, vf y, vf s) { return _mm512_fmadd_ps(x, y, s); }
  CAGRA_AVX512_FN static float fsum(vf v) {  // the halves added, then the AVX2 order
    // The halves through memory: GCC 12's extract and shuffle intrinsics start from an
    // "undefined" vector and warn (-Wuninitialized) wherever they are inlined.
    alignas(64) float l[16];
    _mm512_store_ps(l, v);
    const __m256 h = _mm256_add_ps(_mm256_load_ps(l), _mm256_load_ps(l + 8));
    return avx2_ops::fsum(h);
  }
  CAGRA_AVX512_FN static vi izero() { return _mm512_setzero_si512(); }
  template <typename T>
  CAGRA_AVX512_FN static vi widen(const T* p) {  // 32 bytes to 16-bit lanes
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    if constexpr (std::is_signed_v<T>)
      return _mm512_cvtepi8_epi16(v);
    else
      return _mm512_cvtepu8_epi16(v);
  }
  template <typename T>
  CAGRA_AVX512_FN static vi widen_first(const T* p, size_t n) {  // n < 32; zeros after
    const __m256i v = _mm256_maskz_loadu_epi8(__mmask32((1ull << n) - 1), p);
    if constexpr (std::is_signed_v<T>)
      return _mm512_cvtepi8_epi16(v);
    else
      return _mm512_cvtepu8_epi16(v);
  }
  CAGRA_AVX512_FN static vi isub(vi x, vi y) { return _mm512_sub_epi16(x, y); }
  CAGRA_AVX512_FN static vi imadd(vi x, vi y, vi s) {
    return _mm512_add_epi32(s, _mm512_madd_epi16(x, y));
  }
  CAGRA_AVX512_FN static int32_t isum(vi v) {
    alignas(64) int32_t l[16];
    _mm512_store_si512(l, v);
    const __m256i h = _mm256_add_epi32(_mm256_load_si256(reinterpret_cast<const __m256i*>(l)),
                                       _mm256_load_si256(reinterpret_cast<const __m256i*>(l + 8)));
    return avx2_ops::isum(h);
  }
};

// The tiles, stamped out once per instruction set: a template cannot take its target attribute
// from a parameter, and code compiled for AVX-512 must not run on an AVX2-only CPU. A step loads
// R row blocks and then C column blocks, each added into its R pairs' accumulators; the last
// partial block is loaded with zeros after the end (they add nothing: (0 - 0)^2, 0 * 0), so
// every pair keeps one order whatever its tile.
// - f32_ISA: kFloats elements a step into float accumulators, the lanes then summed (Ops::fsum).
// - int_ISA: elements [i0, i1) (at most kIntChunk), kBytes a step widened to 16 bits and summed
//   in pairs (vpmaddwd) into int32. Exact.
#define CAGRA_TILE_STEP(V, LOAD, SUB, MADD)                   \
  {                                                           \
    V x[R];                                                   \
    for (size_t r = 0; r < R; ++r) x[r] = LOAD(a[r]);         \
    for (size_t j = 0; j < C; ++j) {                          \
      const V y = LOAD(b[j]);                                 \
      for (size_t r = 0; r < R; ++r) {                        \
        const V d = L2 ? SUB(x[r], y) : x[r];                 \
        acc[r * C + j] = MADD(d, L2 ? d : y, acc[r * C + j]); \
      }                                                       \
    }                                                         \
  }
#define CAGRA_PAIR_TILES(ISA, ATTR, Ops)                                                           \
  template <bool L2, size_t R, size_t C>                                                           \
  ATTR void f32_##ISA(const float* const* a, const float* const* b, size_t dim, float* out) {      \
    typename Ops::vf acc[R * C];                                                                   \
    for (auto& v : acc) v = Ops::fzero();                                                          \
    size_t i = 0;                                                                                  \
    for (; i + Ops::kFloats <= dim; i += Ops::kFloats)                                             \
      CAGRA_TILE_STEP(                                                                             \
          typename Ops::vf, [&](const float* p) ATTR { return Ops::fload(p + i); }, Ops::fsub,     \
          Ops::fma)                                                                                \
    if (i < dim)                                                                                   \
      CAGRA_TILE_STEP(                                                                             \
          typename Ops::vf, [&](const float* p) ATTR { return Ops::fload_first(p + i, dim - i); }, \
          Ops::fsub, Ops::fma)                                                                     \
    for (size_t p = 0; p < R * C; ++p) out[p] = Ops::fsum(acc[p]);                                 \
  }                                                                                                \
  template <bool L2, size_t R, size_t C, typename T>                                               \
  ATTR void int_##ISA(const T* const* a, const T* const* b, size_t i0, size_t i1, int32_t* out) {  \
    typename Ops::vi acc[R * C];                                                                   \
    for (auto& v : acc) v = Ops::izero();                                                          \
    size_t i = i0;                                                                                 \
    for (; i + Ops::kBytes <= i1; i += Ops::kBytes)                                                \
      CAGRA_TILE_STEP(                                                                             \
          typename Ops::vi, [&](const T* p) ATTR { return Ops::widen(p + i); }, Ops::isub,         \
          Ops::imadd)                                                                              \
    if (i < i1)                                                                                    \
      CAGRA_TILE_STEP(                                                                             \
          typename Ops::vi, [&](const T* p) ATTR { return Ops::widen_first(p + i, i1 - i); },      \
          Ops::isub, Ops::imadd)                                                                   \
    for (size_t p = 0; p < R * C; ++p) out[p] = Ops::isum(acc[p]);                                 \
  }

CAGRA_PAIR_TILES(avx2, CAGRA_AVX2_FN, avx2_ops)
CAGRA_PAIR_TILES(avx512, CAGRA_AVX512_FN, avx512_ops)
#undef CAGRA_PAIR_TILES
#undef CAGRA_TILE_STEP

#endif  // CAGRA_PAIR_SIMD

/** One tile of R rows against C columns on isa(): float sums for float rows, exact for bytes. */
template <bool L2, size_t R, size_t C, typename T>
void tile(const T* const* a, const T* const* b, size_t dim, float* out) {
  if constexpr (std::is_same_v<T, float>) {
#ifdef CAGRA_PAIR_SIMD
    if (isa() == tile_isa::avx512) return f32_avx512<L2, R, C>(a, b, dim, out);
    if (isa() == tile_isa::avx2) return f32_avx2<L2, R, C>(a, b, dim, out);
#endif
    tile_portable<L2, R, C>(a, b, 0, dim, out);
  } else {
    int64_t sum[R * C] = {};
    for (size_t i0 = 0; i0 < dim; i0 += kIntChunk) {
      const size_t i1 = std::min(dim, i0 + kIntChunk);
      int32_t part[R * C];
#ifdef CAGRA_PAIR_SIMD
      if (isa() == tile_isa::avx512)
        int_avx512<L2, R, C>(a, b, i0, i1, part);
      else if (isa() == tile_isa::avx2)
        int_avx2<L2, R, C>(a, b, i0, i1, part);
      else
#endif
        tile_portable<L2, R, C>(a, b, i0, i1, part);
      for (size_t p = 0; p < R * C; ++p) sum[p] += part[p];
    }
    for (size_t p = 0; p < R * C; ++p) out[p] = float(sum[p]);
  }
}

/** R rows against nb columns, C at a time; the last tile's missing columns repeat its last. */
template <bool L2, size_t R, size_t C, typename T>
void rows_block(const T* const* a, const T* const* b, size_t nb, size_t dim, float* out) {
  float t[R * C];
  for (size_t j0 = 0; j0 < nb; j0 += C) {
    const size_t nc = std::min(C, nb - j0);
    const T* cols[C];
    for (size_t j = 0; j < C; ++j) cols[j] = b[j0 + std::min(j, nc - 1)];
    tile<L2, R, C>(a, cols, dim, t);
    for (size_t r = 0; r < R; ++r)
      for (size_t j = 0; j < nc; ++j) out[r * nb + j0 + j] = t[r * C + j];
  }
}

template <bool L2, size_t C, typename T>
void any_rows_block(const T* const* a, size_t na, const T* const* b, size_t nb, size_t dim,
                    float* out) {
  switch (na) {
    case 1: return rows_block<L2, 1, C>(a, b, nb, dim, out);
    case 2: return rows_block<L2, 2, C>(a, b, nb, dim, out);
    case 3: return rows_block<L2, 3, C>(a, b, nb, dim, out);
    default: return rows_block<L2, 4, C>(a, b, nb, dim, out);
  }
}

/** Columns a tile: 6 where AVX-512 gives 32 registers, else 3. */
template <bool L2, typename T>
void blocks(const T* const* a, size_t na, const T* const* b, size_t nb, size_t dim, float* out) {
  if (isa() == tile_isa::avx512) return any_rows_block<L2, 6>(a, na, b, nb, dim, out);
  any_rows_block<L2, 3>(a, na, b, nb, dim, out);
}

}  // namespace

template <typename T>
void pair_distance<T>::block(const T* const* a, size_t na, const T* const* b, size_t nb,
                             float* out) const {
  if (na == 0 || nb == 0) return;
  CAGRA_EXPECTS(na <= kMaxRows, "pair_distance::block takes at most %zu rows (got %zu)", kMaxRows,
                na);
  if (m_ == metric::l2) return blocks<true>(a, na, b, nb, dim_, out);
  blocks<false>(a, na, b, nb, dim_, out);
  const bool cosine = m_ == metric::cosine;
  // A dot product of large finite floats can sum +inf and -inf: NaN. It counts as the farthest
  // (+inf), so that (distance, id) stays a strict order: with NaN in its lists NN-descent's
  // result depended on the order of the proposals, i.e. on the threads (fuzz_build_search).
  for (size_t p = 0; p < na * nb; ++p) {
    const float d = cosine ? 1.0f - out[p] : -out[p];
    out[p] = std::isnan(d) ? std::numeric_limits<float>::infinity() : d;
  }
}

template class pair_distance<float>;
template class pair_distance<uint8_t>;
template class pair_distance<int8_t>;

}  // namespace cagra::cpu
