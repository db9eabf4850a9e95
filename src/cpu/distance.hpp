// Distance kernels of the CPU backend, one per (storage type, metric).
//
// Integer vectors (u8, i8) are compared in exact integer arithmetic against queries of the same
// type; float and half vectors against float queries. The kernels in distance.cpp are compiled
// for several instruction sets (AVX-512, AVX2, baseline) and picked at load time, so the library
// needs no -march flag and still runs at full width on the machine it lands on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cagra/types.hpp>

#include "core/half.hpp"

namespace cagra::cpu {

/** Element type of a query for vectors stored as T (exact comparison for integer types). */
template <typename T>
struct query_type {
  using type = T;
};
template <>
struct query_type<half> {
  using type = float;
};
template <typename T>
using query_t = typename query_type<T>::type;

// Raw kernels: squared L2 and dot product.
float l2_f32(const float* q, const float* x, size_t dim);
float dot_f32(const float* q, const float* x, size_t dim);
float l2_f16(const float* q, const half* x, size_t dim);
float dot_f16(const float* q, const half* x, size_t dim);
float l2_u8(const uint8_t* q, const uint8_t* x, size_t dim);
float dot_u8(const uint8_t* q, const uint8_t* x, size_t dim);
float l2_i8(const int8_t* q, const int8_t* x, size_t dim);
float dot_i8(const int8_t* q, const int8_t* x, size_t dim);

/** Which float kernels this process runs: "x86_64-avx2x4+f16c" where AVX2 is the widest vector
 *  unit (the four-accumulator kernels, distance.cpp), else "x86_64-<avx512f|avx2|default>[+f16c]"
 *  (the target_clones variant the loader picked, "default" where the build has no clones; "+f16c"
 *  when f16 rows are widened with F16C), or "other" off x86-64. Float results can differ in the
 *  last bits between profiles (reduction order), never within one. */
std::string kernel_profile();

/** AVX2, FMA and F16C present and enabled by the OS (x86-64 with GCC or clang; false
 *  elsewhere): what the hand-written AVX2 kernels here and in pair_distance.cpp need. */
bool cpu_has_avx2_kernels();

using core::float_to_half;  // IEEE binary16 <-> float (core/half.hpp)
using core::half_to_float;

inline float l2(const float* q, const float* x, size_t d) { return l2_f32(q, x, d); }
inline float l2(const float* q, const half* x, size_t d) { return l2_f16(q, x, d); }
inline float l2(const uint8_t* q, const uint8_t* x, size_t d) { return l2_u8(q, x, d); }
inline float l2(const int8_t* q, const int8_t* x, size_t d) { return l2_i8(q, x, d); }
inline float dot(const float* q, const float* x, size_t d) { return dot_f32(q, x, d); }
inline float dot(const float* q, const half* x, size_t d) { return dot_f16(q, x, d); }
inline float dot(const uint8_t* q, const uint8_t* x, size_t d) { return dot_u8(q, x, d); }
inline float dot(const int8_t* q, const int8_t* x, size_t d) { return dot_i8(q, x, d); }

/** The search/ordering distance of `m` (see cagra::metric): smaller is nearer. */
template <typename T>
struct distance {
  metric m;
  size_t dim;
  float operator()(const query_t<T>* q, const T* x) const {
    if (m == metric::l2) return l2(q, x, dim);
    float d = dot(q, x, dim);
    return m == metric::cosine ? 1.0f - d : -d;
  }
};

/** Calls f(T{}) with T the C++ type of storage dtype `t` (f32, f16, u8, i8). */
template <typename F>
decltype(auto) dispatch_storage(dtype t, F&& f) {
  switch (t) {
    case dtype::f32: return f(float{});
    case dtype::f16: return f(half{});
    case dtype::u8: return f(uint8_t{});
    case dtype::i8: return f(int8_t{});
    default: break;
  }
  CAGRA_FAIL("vectors of type %s cannot be indexed (use f32, f16, u8 or i8)", to_string(t));
}

}  // namespace cagra::cpu
