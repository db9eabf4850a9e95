// One distance at a time, in isolation: GCC's vectorized loops (as src/cpu/distance.cpp's
// target_clones compile them at AVX2 width) against the hand-written AVX2 kernels there, on rows
// that stay in cache. u8 L2: the loop (32 bytes loaded and split, one accumulator) against 16
// bytes widened from memory into two vpmaddwd accumulators, and a byte absolute-difference
// variant; f32 L2: the `omp simd` loop (one accumulator) against four accumulators. The sums
// (checksums) must agree.
//
//   g++ -O3 -fopenmp-simd -o /tmp/cpu-distance-kernels scripts/dev/cpu-distance-kernels.cpp
//   /tmp/cpu-distance-kernels   -> ns a distance for each kernel and row count
#include <immintrin.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#define AVX2 __attribute__((target("avx2,fma"), noinline))

AVX2 int32_t u8_loop(const uint8_t* q, const uint8_t* x, size_t n) {
  int32_t s = 0;
  for (size_t i = 0; i < n; ++i) {
    const int32_t d = int32_t(q[i]) - int32_t(x[i]);
    s += d * d;
  }
  return s;
}

__attribute__((target("avx2,fma"))) inline int32_t hsum_epi32(__m256i a) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(a), _mm256_extracti128_si256(a, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

__attribute__((target("avx2,fma"))) inline __m256i w(const uint8_t* p) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

AVX2 int32_t u8_widened(const uint8_t* q, const uint8_t* x, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i d0 = _mm256_sub_epi16(w(q + i), w(x + i));
    const __m256i d1 = _mm256_sub_epi16(w(q + i + 16), w(x + i + 16));
    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(d0, d0));
    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(d1, d1));
  }
  int32_t r = hsum_epi32(_mm256_add_epi32(a0, a1));
  for (; i < n; ++i) r += (int32_t(q[i]) - x[i]) * (int32_t(q[i]) - x[i]);
  return r;
}

AVX2 int32_t u8_absdiff(const uint8_t* q, const uint8_t* x, size_t n) {
  __m256i a0 = _mm256_setzero_si256(), a1 = a0;
  const __m256i z = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + i));
    const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i d = _mm256_or_si256(_mm256_subs_epu8(qv, xv), _mm256_subs_epu8(xv, qv));
    const __m256i lo = _mm256_unpacklo_epi8(d, z), hi = _mm256_unpackhi_epi8(d, z);
    a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(lo, lo));
    a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(hi, hi));
  }
  int32_t r = hsum_epi32(_mm256_add_epi32(a0, a1));
  for (; i < n; ++i) r += (int32_t(q[i]) - x[i]) * (int32_t(q[i]) - x[i]);
  return r;
}

AVX2 float f32_loop(const float* q, const float* x, size_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (size_t i = 0; i < n; ++i) {
    const float d = q[i] - x[i];
    s += d * d;
  }
  return s;
}

AVX2 float f32_four(const float* q, const float* x, size_t n) {
  __m256 a[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                 _mm256_setzero_ps()};
  size_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) {
      const __m256 d =
          _mm256_sub_ps(_mm256_loadu_ps(q + i + 8 * k), _mm256_loadu_ps(x + i + 8 * k));
      a[k] = _mm256_fmadd_ps(d, d, a[k]);
    }
  for (; i + 8 <= n; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(q + i), _mm256_loadu_ps(x + i));
    a[0] = _mm256_fmadd_ps(d, d, a[0]);
  }
  const __m256 v = _mm256_add_ps(_mm256_add_ps(a[0], a[1]), _mm256_add_ps(a[2], a[3]));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  float r = _mm_cvtss_f32(s);
  for (; i < n; ++i) r += (q[i] - x[i]) * (q[i] - x[i]);
  return r;
}

template <typename T, typename F>
void time_kernel(const char* name, const std::vector<T>& v, size_t dim, size_t rows, F f) {
  const size_t reps = 200 * 128 * 128 / (rows * rows) + 1;
  double check = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t r = 0; r < reps; ++r)
    for (size_t a = 0; a < rows; ++a)
      for (size_t b = 0; b < rows; ++b) check += double(f(&v[a * dim], &v[b * dim], dim));
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
      (double(reps) * rows * rows);
  std::printf("%-12s %4zu rows of %zu: %6.1f ns a distance (checksum %.0f)\n", name, rows, dim, ns,
              check);
}

int main() {
  const size_t dim = 784;
  std::mt19937 rng(1);
  for (const size_t rows : {16, 128, 1024}) {
    std::vector<uint8_t> b(dim * rows);
    std::vector<float> f(dim * rows);
    for (size_t i = 0; i < b.size(); ++i) f[i] = float(b[i] = uint8_t(rng()));
    time_kernel("u8 loop", b, dim, rows, u8_loop);
    time_kernel("u8 widened", b, dim, rows, u8_widened);
    time_kernel("u8 absdiff", b, dim, rows, u8_absdiff);
    time_kernel("f32 loop", f, dim, rows, f32_loop);
    time_kernel("f32 four", f, dim, rows, f32_four);
  }
}
