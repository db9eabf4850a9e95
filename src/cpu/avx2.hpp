// AVX2 pieces shared by the CPU distance kernels (distance.cpp: one pair at a time;
// pair_distance.cpp: tiles of pairs): lane sums and byte widening, on x86-64 with GCC or clang
// (CAGRA_CPU_AVX2 is defined there). Callers check cpu_has_avx2_kernels() first.
#pragma once
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace cagra::cpu {

/** An int32 sum of up to this many byte products or squared byte differences stays below 2^31
 *  (255^2 * 32768 < 2^31): the integer kernels sum longer rows in chunks of it, in int64. */
constexpr size_t kIntChunk = 32768;

}  // namespace cagra::cpu

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CAGRA_CPU_AVX2 1

// always_inline: called, these returned with the upper YMM halves in use, and so did their
// callers (GCC puts no vzeroupper after a call), which slowed the SSE code they returned to.
#define CAGRA_AVX2_INLINE __attribute__((target("avx2,fma,f16c"), always_inline)) inline

namespace cagra::cpu::avx2 {

/** The lanes of v added as ((0+4) + (2+6)) + ((1+5) + (3+7)). */
CAGRA_AVX2_INLINE float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

/** The int32 lanes of v added (exact while the sum fits). */
CAGRA_AVX2_INLINE int32_t hsum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

/** 16 byte elements widened to 16 bits (zero- or sign-extended by type) straight from memory. */
template <typename T>
CAGRA_AVX2_INLINE __m256i widen16(const T* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (std::is_signed_v<T>)
    return _mm256_cvtepi8_epi16(v);
  else
    return _mm256_cvtepu8_epi16(v);
}

}  // namespace cagra::cpu::avx2

#endif
