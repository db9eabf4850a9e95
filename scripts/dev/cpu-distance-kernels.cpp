// One distance at a time, in isolation: GCC's vectorized loops (as src/cpu/distance.cpp's
// target_clones compile them at AVX2 width) against the hand-written AVX2 kernels there, on rows
// that stay in cache. u8 L2: the loop (32 bytes loaded and split, one accumulator) against 16
// bytes widened from memory into two vpmaddwd accumulators, and a byte absolute-difference
// variant; f32 L2: the `omp simd` loop (one accumulator) against four accumulators. The sums
// (checksums) must agree. Then the local join's pattern (src/cpu/nn_descent.cpp): a node's 128
// candidate rows (taken from a 4096-row pool, so they come from L2/L3 as in a build), the first
// 64 each against every row after it, pair by pair (f32 four, u8 widened) against the tiles of
// src/cpu/pair_distance.cpp (R rows against C, one accumulator a pair).
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

/** R rows against C, one 8-lane accumulator a pair (pair_distance.cpp's f32 tile, L2). */
template <int R, int C>
AVX2 void f32_tile(const float* const* a, const float* const* b, size_t n, float* out) {
  __m256 acc[R * C];
  for (auto& v : acc) v = _mm256_setzero_ps();
  for (size_t i = 0; i + 8 <= n; i += 8) {
    __m256 x[R];
    for (int r = 0; r < R; ++r) x[r] = _mm256_loadu_ps(a[r] + i);
    for (int j = 0; j < C; ++j) {
      const __m256 y = _mm256_loadu_ps(b[j] + i);
      for (int r = 0; r < R; ++r) {
        const __m256 d = _mm256_sub_ps(x[r], y);
        acc[r * C + j] = _mm256_fmadd_ps(d, d, acc[r * C + j]);
      }
    }
  }
  for (int p = 0; p < R * C; ++p) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(acc[p]), _mm256_extractf128_ps(acc[p], 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    out[p] = _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
  }
}

/** The byte tile (pair_distance.cpp's, L2): 16 elements widened, differenced, vpmaddwd. */
template <int R, int C>
AVX2 void u8_tile(const uint8_t* const* a, const uint8_t* const* b, size_t n, float* out) {
  __m256i acc[R * C];
  for (auto& v : acc) v = _mm256_setzero_si256();
  for (size_t i = 0; i + 16 <= n; i += 16) {
    __m256i x[R];
    for (int r = 0; r < R; ++r) x[r] = w(a[r] + i);
    for (int j = 0; j < C; ++j) {
      const __m256i y = w(b[j] + i);
      for (int r = 0; r < R; ++r) {
        const __m256i d = _mm256_sub_epi16(x[r], y);
        acc[r * C + j] = _mm256_add_epi32(acc[r * C + j], _mm256_madd_epi16(d, d));
      }
    }
  }
  for (int p = 0; p < R * C; ++p) out[p] = float(hsum_epi32(acc[p]));
}

#define AVX512 __attribute__((target("avx512f,avx512bw,avx2,fma"), noinline))

/** The f32 tile at AVX-512 width (16 lanes, 32 registers). */
template <int R, int C>
AVX512 void f32_tile512(const float* const* a, const float* const* b, size_t n, float* out) {
  __m512 acc[R * C];
  for (auto& v : acc) v = _mm512_setzero_ps();
  for (size_t i = 0; i + 16 <= n; i += 16) {
    __m512 x[R];
    for (int r = 0; r < R; ++r) x[r] = _mm512_loadu_ps(a[r] + i);
    for (int j = 0; j < C; ++j) {
      const __m512 y = _mm512_loadu_ps(b[j] + i);
      for (int r = 0; r < R; ++r) {
        const __m512 d = _mm512_sub_ps(x[r], y);
        acc[r * C + j] = _mm512_fmadd_ps(d, d, acc[r * C + j]);
      }
    }
  }
  for (int p = 0; p < R * C; ++p) out[p] = _mm512_reduce_add_ps(acc[p]);
}

__attribute__((target("avx512f,avx512bw,avx2,fma"))) inline __m512i w512(const uint8_t* p) {
  return _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

/** The byte tile at AVX-512 width: 32 elements widened to 16 bits, vpmaddwd. */
template <int R, int C>
AVX512 void u8_tile512(const uint8_t* const* a, const uint8_t* const* b, size_t n, float* out) {
  __m512i acc[R * C];
  for (auto& v : acc) v = _mm512_setzero_si512();
  for (size_t i = 0; i + 32 <= n; i += 32) {
    __m512i x[R];
    for (int r = 0; r < R; ++r) x[r] = w512(a[r] + i);
    for (int j = 0; j < C; ++j) {
      const __m512i y = w512(b[j] + i);
      for (int r = 0; r < R; ++r) {
        const __m512i d = _mm512_sub_epi16(x[r], y);
        acc[r * C + j] = _mm512_add_epi32(acc[r * C + j], _mm512_madd_epi16(d, d));
      }
    }
  }
  for (int p = 0; p < R * C; ++p) out[p] = float(_mm512_reduce_add_epi32(acc[p]));
}

/** The join's pattern over `nodes` nodes of 128 candidates: ns a pair, pair by pair. */
template <typename T, typename F>
double join_pairs(const std::vector<T>& pool, size_t dim, F f, double& check) {
  const size_t rows = 128, fresh = 64, nodes = 200;
  std::vector<const T*> r(rows);
  size_t pairs = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t node = 0; node < nodes; ++node) {
    for (size_t k = 0; k < rows; ++k) r[k] = &pool[((node * 131 + k * 37) % 4096) * dim];
    for (size_t a = 0; a < fresh; ++a)
      for (size_t b = a + 1; b < rows; ++b, ++pairs) check += double(f(r[a], r[b], dim));
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
         double(pairs);
}

/** The same pattern in R x C tiles (rows a..a+R-1 against the columns after a; the few pairs
 *  a tile computes twice count once per tile). */
template <int R, int C, typename T, typename Tile>
double join_tiles(const std::vector<T>& pool, size_t dim, Tile tile, double& check) {
  const size_t rows = 128, fresh = 64, nodes = 200;
  std::vector<const T*> r(rows);
  size_t pairs = 0;
  float out[R * C];
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t node = 0; node < nodes; ++node) {
    for (size_t k = 0; k < rows; ++k) r[k] = &pool[((node * 131 + k * 37) % 4096) * dim];
    for (size_t a = 0; a + R <= fresh; a += R)
      for (size_t b = a + 1; b + C <= rows; b += C, pairs += R * C) {
        tile(&r[a], &r[b], dim, out);
        check += double(out[0]);
      }
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
         double(pairs);
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
  std::vector<uint8_t> b(dim * 4096);
  std::vector<float> f(dim * 4096);
  for (size_t i = 0; i < b.size(); ++i) f[i] = float(b[i] = uint8_t(rng()));
  double check = 0;  // printed so that no loop is optimized away
  auto best = [](auto run) {  // the best of 5 runs
    double ns = 1e30;
    for (int rep = 0; rep < 5; ++rep) ns = std::min(ns, run());
    return ns;
  };
  std::printf("join pattern (128 candidates of 784 elements, 64 new), ns a pair:\n");
  std::printf("  f32 four, pair by pair  %6.1f\n", best([&] { return join_pairs(f, dim, f32_four, check); }));
  std::printf("  f32 tile 2x4            %6.1f\n", best([&] { return join_tiles<2, 4>(f, dim, f32_tile<2, 4>, check); }));
  std::printf("  f32 tile 3x3            %6.1f\n", best([&] { return join_tiles<3, 3>(f, dim, f32_tile<3, 3>, check); }));
  std::printf("  f32 tile 4x3            %6.1f\n", best([&] { return join_tiles<4, 3>(f, dim, f32_tile<4, 3>, check); }));
  std::printf("  u8 widened, pair by pair %5.1f\n", best([&] { return join_pairs(b, dim, u8_widened, check); }));
  std::printf("  u8 tile 3x3             %6.1f\n", best([&] { return join_tiles<3, 3>(b, dim, u8_tile<3, 3>, check); }));
  std::printf("  u8 tile 4x3             %6.1f\n", best([&] { return join_tiles<4, 3>(b, dim, u8_tile<4, 3>, check); }));
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    std::printf("  f32 tile512 4x3         %6.1f\n", best([&] { return join_tiles<4, 3>(f, dim, f32_tile512<4, 3>, check); }));
    std::printf("  f32 tile512 4x6         %6.1f\n", best([&] { return join_tiles<4, 6>(f, dim, f32_tile512<4, 6>, check); }));
    std::printf("  f32 tile512 6x4         %6.1f\n", best([&] { return join_tiles<6, 4>(f, dim, f32_tile512<6, 4>, check); }));
    std::printf("  f32 tile512 8x3         %6.1f\n", best([&] { return join_tiles<8, 3>(f, dim, f32_tile512<8, 3>, check); }));
    std::printf("  u8 tile512 4x3          %6.1f\n", best([&] { return join_tiles<4, 3>(b, dim, u8_tile512<4, 3>, check); }));
    std::printf("  u8 tile512 4x6          %6.1f\n", best([&] { return join_tiles<4, 6>(b, dim, u8_tile512<4, 6>, check); }));
    std::printf("  u8 tile512 6x4          %6.1f\n", best([&] { return join_tiles<6, 4>(b, dim, u8_tile512<6, 4>, check); }));
  } else {
    std::printf("  (no AVX-512F/BW here: the 512-bit tiles are not run)\n");
  }
  std::printf("(checksum %.0f)\n", check);
}
