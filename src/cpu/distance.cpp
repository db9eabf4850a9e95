// SIMD distance kernels, compiled for AVX-512 / AVX2 / baseline x86-64 and dispatched at load time
// (GCC target_clones). The loops are written so the compiler vectorizes them: float reductions
// via `omp simd reduction`, integer ones as plain int32 sums (exact; chunks keep them in range).
#include "cpu/distance.hpp"

#include "cpu/avx2.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define CAGRA_HAVE_F16C_PATH 1
#endif

// Sanitizer builds, as either compiler says it: GCC defines __SANITIZE_*__, clang has
// __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CAGRA_SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define CAGRA_SANITIZED_BUILD 1
#endif
#endif

// target_clones: GCC's (clang 14's attribute differs and is not used), through a glibc ifunc whose
// resolver the dynamic loader runs before main and before any constructor. Not in sanitized
// builds: under -fsanitize=thread the resolver is instrumented and crashes (SIGSEGV in ld.so
// before main: the sanitizer runtime is not up yet), and the other sanitizers' runtimes start just
// as late (ASan builds were already left out). Sanitized, clang and non-glibc builds run the
// baseline code on every machine, so their float results can differ from the multiversioned
// build's in the last bits (cpu::kernel_profile() reports which; tests/cpu/test_golden.cpp
// compares those cases only on one profile).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__) && \
    !defined(CAGRA_SANITIZED_BUILD)
#define CAGRA_MULTIVERSION __attribute__((target_clones("avx512f", "avx2", "default")))
#define CAGRA_MULTIVERSION_ENABLED 1
#else
#define CAGRA_MULTIVERSION
#endif

namespace cagra::cpu {

namespace {

// The loops the compiler vectorizes (target_clones): one accumulator, so at AVX2 width a 784-d
// distance waits on 98 dependent FMAs (kAvx2Widest below takes other kernels there).
CAGRA_MULTIVERSION float l2_f32_loop(const float* q, const float* x, size_t dim) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (size_t i = 0; i < dim; ++i) {
    float d = q[i] - x[i];
    s += d * d;
  }
  return s;
}

CAGRA_MULTIVERSION float dot_f32_loop(const float* q, const float* x, size_t dim) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (size_t i = 0; i < dim; ++i) s += q[i] * x[i];
  return s;
}

}  // namespace

// Half rows: with F16C (every x86-64 CPU with AVX2 since 2013) eight halves are widened per
// instruction; without it, a scalar conversion. The scalar path converted every element in
// software and made an f16 index 8x slower to search on the CPU than an f32 one (bigann10k,
// one thread: 1.8K vs 14.9K QPS at itopk 64).
#ifdef CAGRA_HAVE_F16C_PATH

namespace {

/** AVX2, FMA and F16C present, and the OS saves the YMM registers (else AVX instructions fault):
 *  what __builtin_cpu_supports("avx2"/"fma"/"f16c") says under GCC, read with CPUID because
 *  clang 14's __builtin_cpu_supports does not know "f16c" (one code path for both compilers). */
bool cpu_has_f16c_path() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const unsigned need1 = bit_OSXSAVE | bit_AVX | bit_FMA | bit_F16C;
  if ((c & need1) != need1) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;  // XGETBV(0): XCR0, bits 1 (SSE) and 2 (AVX) state
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0_lo & 6u) != 6u) return false;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return (b & bit_AVX2) != 0;
}

const bool kF16C = cpu_has_f16c_path();

/** AVX2 is the widest vector unit (AVX2, FMA and F16C, no AVX-512F): the f32 and byte-row
 *  kernels below replace the compiler's clones of the loops there. A CPU with AVX-512 keeps its
 *  AVX-512 clones (not measured against these kernels, and the float golden hashes are of them:
 *  tests/cpu/test_golden.cpp). */
bool cpu_avx2_widest() {
  if (!kF16C) return false;
#if defined(__GNUC__)
  __builtin_cpu_init();
  return !__builtin_cpu_supports("avx512f");
#else
  return true;
#endif
}

const bool kAvx2Widest = cpu_avx2_widest();

inline float as_float(float v) { return v; }
inline float as_float(half v) { return half_to_float(v); }

__attribute__((target("avx2,fma,f16c"))) inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
__attribute__((target("avx2,fma,f16c"))) inline __m256 load8(const half* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

template <bool L2, typename X>
__attribute__((target("avx2,fma,f16c"))) inline __m256 f32_step(const float* a, const X* b,
                                                                __m256 acc) {
  const __m256 va = _mm256_loadu_ps(a), vb = load8(b);
  if constexpr (L2) {
    const __m256 d = _mm256_sub_ps(va, vb);
    return _mm256_fmadd_ps(d, d, acc);
  } else {
    return _mm256_fmadd_ps(va, vb, acc);
  }
}

/** A distance in f32 arithmetic to f32 or f16 rows (L2: the squared difference's sum; else
 *  the dot product) with kAccs accumulators of 8 lanes. Four (32 elements an iteration) where
 *  AVX2 is the widest unit: the single accumulator of the loop made a 784-d f32 distance wait on
 *  98 dependent FMAs, 108-126 ns against 41-59 ns on the development machine (AMD EPYC, AVX2;
 *  scripts/dev/cpu-distance-kernels.cpp). One for f16 rows elsewhere: the F16C kernel as it was,
 *  bit for bit. The sum's order differs between the two, so the last bits of a distance may
 *  differ too (as between the loop's clones). */
template <bool L2, typename X, int kAccs>
__attribute__((target("avx2,fma,f16c"))) float f32_avx2(const float* q, const X* x, size_t dim) {
  static_assert(kAccs == 1 || kAccs == 4);
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  size_t i = 0;
  if constexpr (kAccs == 4) {
    for (; i + 32 <= dim; i += 32) {
      a0 = f32_step<L2, X>(q + i, x + i, a0);
      a1 = f32_step<L2, X>(q + i + 8, x + i + 8, a1);
      a2 = f32_step<L2, X>(q + i + 16, x + i + 16, a2);
      a3 = f32_step<L2, X>(q + i + 24, x + i + 24, a3);
    }
  }
  for (; i + 8 <= dim; i += 8) a0 = f32_step<L2, X>(q + i, x + i, a0);
  float s =
      avx2::hsum(kAccs == 4 ? _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)) : a0);
  for (; i < dim; ++i) {
    const float xi = as_float(x[i]);
    if constexpr (L2) {
      const float d = q[i] - xi;
      s += d * d;
    } else {
      s += q[i] * xi;
    }
  }
  return s;
}

}  // namespace
#endif

float l2_f16(const float* q, const half* x, size_t dim) {
#ifdef CAGRA_HAVE_F16C_PATH
  if (kF16C)
    return kAvx2Widest ? f32_avx2<true, half, 4>(q, x, dim) : f32_avx2<true, half, 1>(q, x, dim);
#endif
  float s = 0;
  for (size_t i = 0; i < dim; ++i) {
    float d = q[i] - half_to_float(x[i]);
    s += d * d;
  }
  return s;
}

float dot_f16(const float* q, const half* x, size_t dim) {
#ifdef CAGRA_HAVE_F16C_PATH
  if (kF16C)
    return kAvx2Widest ? f32_avx2<false, half, 4>(q, x, dim) : f32_avx2<false, half, 1>(q, x, dim);
#endif
  float s = 0;
  for (size_t i = 0; i < dim; ++i) s += q[i] * half_to_float(x[i]);
  return s;
}

bool cpu_has_avx2_kernels() {
#ifdef CAGRA_HAVE_F16C_PATH
  return kF16C;
#else
  return false;
#endif
}

std::string kernel_profile() {
#ifdef CAGRA_HAVE_F16C_PATH
  std::string p = "x86_64-";
  if (kAvx2Widest) return p + "avx2x4+f16c";  // the four-accumulator kernels, every build
#ifdef CAGRA_MULTIVERSION_ENABLED
  // The clone the ifunc resolver picked: target_clones prefers avx512f, then avx2.
  __builtin_cpu_init();
  p += __builtin_cpu_supports("avx512f") ? "avx512f"
       : __builtin_cpu_supports("avx2")  ? "avx2"
                                         : "default";
#else
  p += "default";
#endif
  if (kF16C) p += "+f16c";
  return p;
#else
  return "other";
#endif
}

// Integer kernels: exact int32 sums in chunks of kIntChunk elements (cpu/avx2.hpp).
template <typename T>
static inline int32_t l2_int_chunk(const T* q, const T* x, size_t n) {
  int32_t s = 0;
  for (size_t i = 0; i < n; ++i) {
    int32_t d = static_cast<int32_t>(q[i]) - static_cast<int32_t>(x[i]);
    s += d * d;
  }
  return s;
}

template <typename T>
static inline int32_t dot_int_chunk(const T* q, const T* x, size_t n) {
  int32_t s = 0;
  for (size_t i = 0; i < n; ++i) s += static_cast<int32_t>(q[i]) * static_cast<int32_t>(x[i]);
  return s;
}

/** Sums `chunk(q, x, n)` over pieces of at most kIntChunk elements, exactly, as a float. */
template <typename T, typename Chunk>
static inline float chunked(const T* q, const T* x, size_t dim, Chunk chunk) {
  if (dim <= kIntChunk) return static_cast<float>(chunk(q, x, dim));
  int64_t s = 0;
  for (size_t i = 0; i < dim; i += kIntChunk)
    s += chunk(q + i, x + i, std::min(kIntChunk, dim - i));
  return static_cast<float>(s);
}

namespace {

CAGRA_MULTIVERSION float l2_u8_loop(const uint8_t* q, const uint8_t* x, size_t dim) {
  return chunked(q, x, dim, l2_int_chunk<uint8_t>);
}
CAGRA_MULTIVERSION float dot_u8_loop(const uint8_t* q, const uint8_t* x, size_t dim) {
  return chunked(q, x, dim, dot_int_chunk<uint8_t>);
}
CAGRA_MULTIVERSION float l2_i8_loop(const int8_t* q, const int8_t* x, size_t dim) {
  return chunked(q, x, dim, l2_int_chunk<int8_t>);
}
CAGRA_MULTIVERSION float dot_i8_loop(const int8_t* q, const int8_t* x, size_t dim) {
  return chunked(q, x, dim, dot_int_chunk<int8_t>);
}

#ifdef CAGRA_HAVE_F16C_PATH

/** An integer chunk (at most kIntChunk elements) with AVX2, exactly the loops' sum: 32 elements
 *  an iteration, widened from memory, differenced (L2) and summed in pairs (vpmaddwd) into two
 *  accumulators. GCC's vectorization of l2_int_chunk loads 32 bytes and splits them
 *  (vextracti128, one accumulator): a 784-d u8 distance took 45 ns against this kernel's 27-28 ns
 *  on the development machine (AMD EPYC, AVX2, rows in L1). */
template <typename T, bool L2>
__attribute__((target("avx2,fma,f16c"))) int32_t int_chunk_avx2(const T* q, const T* x, size_t n) {
  __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i q0 = avx2::widen16(q + i), x0 = avx2::widen16(x + i);
    __m256i q1 = avx2::widen16(q + i + 16), x1 = avx2::widen16(x + i + 16);
    if constexpr (L2) {
      q0 = x0 = _mm256_sub_epi16(q0, x0);
      q1 = x1 = _mm256_sub_epi16(q1, x1);
    }
    acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(q0, x0));
    acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(q1, x1));
  }
  const int32_t head = avx2::hsum(_mm256_add_epi32(acc0, acc1));
  return head + (L2 ? l2_int_chunk(q + i, x + i, n - i) : dot_int_chunk(q + i, x + i, n - i));
}

#endif

}  // namespace

float l2_f32(const float* q, const float* x, size_t dim) {
#ifdef CAGRA_HAVE_F16C_PATH
  if (kAvx2Widest) return f32_avx2<true, float, 4>(q, x, dim);
#endif
  return l2_f32_loop(q, x, dim);
}

float dot_f32(const float* q, const float* x, size_t dim) {
#ifdef CAGRA_HAVE_F16C_PATH
  if (kAvx2Widest) return f32_avx2<false, float, 4>(q, x, dim);
#endif
  return dot_f32_loop(q, x, dim);
}

// Integer rows: the sums are exact, so every kernel gives the same bits.
template <typename T, bool L2>
static float byte_distance(const T* q, const T* x, size_t dim,
                           float (*loop)(const T*, const T*, size_t)) {
#ifdef CAGRA_HAVE_F16C_PATH
  if (kAvx2Widest) return chunked(q, x, dim, int_chunk_avx2<T, L2>);
#endif
  return loop(q, x, dim);
}

float l2_u8(const uint8_t* q, const uint8_t* x, size_t dim) {
  return byte_distance<uint8_t, true>(q, x, dim, l2_u8_loop);
}
float dot_u8(const uint8_t* q, const uint8_t* x, size_t dim) {
  return byte_distance<uint8_t, false>(q, x, dim, dot_u8_loop);
}
float l2_i8(const int8_t* q, const int8_t* x, size_t dim) {
  return byte_distance<int8_t, true>(q, x, dim, l2_i8_loop);
}
float dot_i8(const int8_t* q, const int8_t* x, size_t dim) {
  return byte_distance<int8_t, false>(q, x, dim, dot_i8_loop);
}

}  // namespace cagra::cpu
