// Conversion of user vectors to storage / query types (see convert.hpp for the rules).
#include "core/convert.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.hpp"

namespace cagra::core {
namespace {

/** Reads element j of row i of `v` as double (any dtype). */
double value_at(const dataset_view& v, int64_t i, int64_t j) {
  const uint8_t* p = static_cast<const uint8_t*>(v.data) + (i * v.cols + j) * dtype_size(v.type);
  switch (v.type) {
    case dtype::f32: {
      float x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case dtype::f16: {
      half h;
      std::memcpy(&h, p, 2);
      return half_to_float(h);
    }
    case dtype::u8: return *p;
    case dtype::i8: return static_cast<int8_t>(*p);
    case dtype::u32: {
      uint32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
    case dtype::i32: {
      int32_t x;
      std::memcpy(&x, p, 4);
      return x;
    }
  }
  return 0;
}

void require_host(const dataset_view& v, const char* what) {
  CAGRA_EXPECTS(v.space == memory_space::host, "%s: the CPU backend needs host memory", what);
  CAGRA_EXPECTS(v.rows > 0 && v.cols > 0 && v.data != nullptr, "%s is empty (%lld x %lld)", what,
                (long long)v.rows, (long long)v.cols);
}

/** Copies `v` into a float matrix, normalizing each row when `normalize`. */
host_matrix to_float(const dataset_view& v, bool normalize, int nt, const char* what) {
  host_matrix out(dtype::f32, v.rows, v.cols);
  float* o = static_cast<float*>(out.data());
  int64_t bad_row = -1;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t i = 0; i < v.rows; ++i) {
    double norm2 = 0;
    for (int64_t j = 0; j < v.cols; ++j) {
      double x = value_at(v, i, j);
      o[i * v.cols + j] = static_cast<float>(x);
      norm2 += x * x;
    }
    if (normalize) {
      if (!(norm2 > 0)) {
#pragma omp critical
        if (bad_row < 0 || i < bad_row) bad_row = i;
        continue;
      }
      const double inv = 1.0 / std::sqrt(norm2);
      const float inv_f = static_cast<float>(inv);
      if (std::isfinite(inv_f)) {
        for (int64_t j = 0; j < v.cols; ++j) o[i * v.cols + j] *= inv_f;
      } else {
        // A row of subnormal values (norm below ~3e-39): 1/norm overflows float, so the row is
        // scaled in double (found by fuzzing: it was stored as infinities). Other rows keep the
        // float product above, bit for bit.
        for (int64_t j = 0; j < v.cols; ++j)
          o[i * v.cols + j] = static_cast<float>(value_at(v, i, j) * inv);
      }
    }
  }
  CAGRA_EXPECTS(bad_row < 0, "%s row %lld is all zeros: cosine distance is undefined for it", what,
                (long long)bad_row);
  return out;
}

}  // namespace

namespace {
/** First row of an [rows, cols] matrix of float words (f32: W = uint32_t, f16: uint16_t) with a
 *  NaN or an infinity (exponent bits all ones), or -1. Bit tests on the raw words, rows over the
 *  threads: the check runs on every search call's queries, and the generic value_at loop (a
 *  switch per element, one thread) was a large part of a GPU call's host time for f32 queries. */
template <typename W>
int64_t first_nonfinite_row(const void* data, int64_t rows, int64_t cols, W exp_mask, int nt) {
  const W* w = static_cast<const W*>(data);
  int64_t bad = rows;
#pragma omp parallel for num_threads(std::max(nt, 1)) schedule(static) reduction(min : bad)
  for (int64_t i = 0; i < rows; ++i) {
    const W* r = w + i * cols;
    bool special = false;
    for (int64_t j = 0; j < cols; ++j) special |= (r[j] & exp_mask) == exp_mask;
    if (special && i < bad) bad = i;
  }
  return bad == rows ? -1 : bad;
}
}  // namespace

void check_finite(dataset_view v, const char* what, int nt) {
  int64_t bad = -1;
  if (v.type == dtype::f32)
    bad = first_nonfinite_row<uint32_t>(v.data, v.rows, v.cols, 0x7F800000u, nt);
  else if (v.type == dtype::f16)
    bad = first_nonfinite_row<uint16_t>(v.data, v.rows, v.cols, uint16_t{0x7C00u}, nt);
  CAGRA_EXPECTS(bad < 0, "%s row %lld contains NaN or Inf", what, (long long)bad);
}

dtype storage_dtype_for(dtype input, metric m, storage_type s) {
  if (s == storage_type::f16) return dtype::f16;
  if (s == storage_type::f32 || m == metric::cosine) return dtype::f32;
  CAGRA_EXPECTS(
      input == dtype::f32 || input == dtype::f16 || input == dtype::u8 || input == dtype::i8,
      "vectors of type %s cannot be indexed (use f32, f16, u8 or i8)", to_string(input));
  return input;
}

host_matrix to_storage(dataset_view input, metric m, storage_type s, int nt) {
  require_host(input, "dataset");
  check_finite(input, "dataset", nt);
  dtype target = storage_dtype_for(input.type, m, s);
  if (target == input.type && m != metric::cosine) return host_matrix::copy_of(input);
  host_matrix f = to_float(input, m == metric::cosine, nt, "dataset");
  if (target == dtype::f32) return f;
  host_matrix h(dtype::f16, f.rows(), f.cols());  // f16 storage
  const float* src = static_cast<const float*>(f.data());
  half* dst = static_cast<half*>(h.data());
  for (int64_t i = 0; i < f.rows() * f.cols(); ++i) {
    dst[i] = float_to_half(src[i]);
    // Beyond the f16 range the value would be stored as infinity (searches with infinite
    // distances, and a file that load refuses): say which one instead (found by fuzzing).
    CAGRA_EXPECTS((dst[i].bits & 0x7C00u) != 0x7C00u,
                  "dataset row %lld, column %lld holds %g, beyond the f16 range (|x| <= 65504); "
                  "index it with f32 storage or scale the data",
                  (long long)(i / f.cols()), (long long)(i % f.cols()), double(src[i]));
  }
  return h;
}

bool queries_as_is(dataset_view queries, dtype storage, metric m) {
  if (queries.space != memory_space::host) return false;
  if (storage == dtype::f32 || storage == dtype::f16)
    return queries.type == dtype::f32 && m != metric::cosine;
  return queries.type == storage;
}

host_matrix queries_for(dataset_view queries, dtype storage, metric m, int nt) {
  require_host(queries, "queries");
  check_finite(queries, "queries", nt);
  if (queries_as_is(queries, storage, m)) return host_matrix::copy_of(queries);
  if (storage == dtype::f32 || storage == dtype::f16)
    return to_float(queries, m == metric::cosine, nt, "queries");
  // Integer storage: queries must hold exactly representable integers.
  const double lo = storage == dtype::u8 ? 0 : -128, hi = storage == dtype::u8 ? 255 : 127;
  host_matrix out(storage, queries.rows, queries.cols);
  uint8_t* o = static_cast<uint8_t*>(out.data());
  for (int64_t i = 0; i < queries.rows; ++i)
    for (int64_t j = 0; j < queries.cols; ++j) {
      double x = value_at(queries, i, j);
      CAGRA_EXPECTS(x == std::floor(x) && x >= lo && x <= hi,
                    "query row %lld holds %g, which a %s index cannot compare exactly (values must "
                    "be integers in [%g, %g])",
                    (long long)i, x, to_string(storage), lo, hi);
      int v = static_cast<int>(x);
      o[i * queries.cols + j] =
          static_cast<uint8_t>(storage == dtype::u8 ? v : static_cast<int8_t>(v));
    }
  return out;
}

}  // namespace cagra::core
