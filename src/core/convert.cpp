// Conversion of user vectors to storage / query types (see convert.hpp for the rules).
#include "core/convert.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/backend.hpp"
#include "core/half.hpp"
#include "core/team.hpp"

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

/** Element j of a row of T, as double (exact for every type). */
inline double as_double(float x) { return x; }
inline double as_double(half h) { return half_to_float(h); }
inline double as_double(uint8_t x) { return x; }
inline double as_double(int8_t x) { return x; }
inline double as_double(uint32_t x) { return x; }
inline double as_double(int32_t x) { return x; }

/** One row of T to float: values widened to double, the norm summed in element order, the row
 *  scaled by the float of 1 / sqrt(norm2) when `normalize`. False for an all-zero row to
 *  normalize. */
template <typename T>
bool row_to_float(const T* r, int64_t cols, bool normalize, float* out) {
  double norm2 = 0;
  for (int64_t j = 0; j < cols; ++j) {
    const double x = as_double(r[j]);
    out[j] = static_cast<float>(x);
    norm2 += x * x;
  }
  if (!normalize) return true;
  if (!(norm2 > 0)) return false;
  const double inv = 1.0 / std::sqrt(norm2);
  const float inv_f = static_cast<float>(inv);
  if (std::isfinite(inv_f)) {
    for (int64_t j = 0; j < cols; ++j) out[j] *= inv_f;
  } else {
    // A row of subnormal values (norm below ~3e-39): 1/norm overflows float, so the row is
    // scaled in double (found by fuzzing: it was stored as infinities). Other rows keep the
    // float product above, bit for bit.
    for (int64_t j = 0; j < cols; ++j) out[j] = static_cast<float>(as_double(r[j]) * inv);
  }
  return true;
}

/** The first all-zero row (when normalizing) and the first element beyond the f16 range (f16
 *  output), -1 for none. */
struct convert_report {
  int64_t zero_row = -1, beyond_f16 = -1;
};

/** Rows of T to float or half (Out), rows over the threads, with typed loads: value_at's switch
 *  per element on one thread took seconds for a 1M x 768 set. f16 output goes through a row of
 *  float per thread, rounded like the float matrix it replaces (same bytes). */
template <typename T, typename Out>
convert_report convert_rows(const T* src, int64_t rows, int64_t cols, bool normalize, Out* o,
                            int nt) {
  constexpr bool kHalf = std::is_same_v<Out, half>;
  int64_t zero_row = rows, beyond = rows * cols;
  // Row i into `out` (f16: through `tmp`); lowers zero_row / beyond where it finds one.
  const auto convert = [&](int64_t i, float* tmp, int64_t& first_zero, int64_t& first_beyond) {
    float* out = nullptr;
    if constexpr (kHalf)
      out = tmp;
    else
      out = o + i * cols;
    if (!row_to_float(src + i * cols, cols, normalize, out)) first_zero = std::min(first_zero, i);
    if constexpr (kHalf) {
      half* h = o + i * cols;
      for (int64_t j = 0; j < cols; ++j) {
        h[j] = float_to_half(out[j]);
        if ((h[j].bits & 0x7C00u) == 0x7C00u) first_beyond = std::min(first_beyond, i * cols + j);
      }
    }
  };
  // A few rows (a search's queries) run on the caller's thread.
  run_team(threads_for_elements(nt, rows * cols), [&] {
    std::vector<float> tmp(kHalf ? size_t(cols) : 0);
    int64_t first_zero = rows, first_beyond = rows * cols;
#pragma omp for schedule(static) nowait
    for (int64_t i = 0; i < rows; ++i) convert(i, tmp.data(), first_zero, first_beyond);
#pragma omp critical(cagra_convert_rows)
    zero_row = std::min(zero_row, first_zero), beyond = std::min(beyond, first_beyond);
  });
  return {zero_row == rows ? -1 : zero_row, beyond == rows * cols ? -1 : beyond};
}

/** convert_rows for the element type of `v`. */
template <typename Out>
convert_report convert_view(const dataset_view& v, bool normalize, Out* o, int nt) {
  switch (v.type) {
    case dtype::f32:
      return convert_rows(static_cast<const float*>(v.data), v.rows, v.cols, normalize, o, nt);
    case dtype::f16:
      return convert_rows(static_cast<const half*>(v.data), v.rows, v.cols, normalize, o, nt);
    case dtype::u8:
      return convert_rows(static_cast<const uint8_t*>(v.data), v.rows, v.cols, normalize, o, nt);
    case dtype::i8:
      return convert_rows(static_cast<const int8_t*>(v.data), v.rows, v.cols, normalize, o, nt);
    case dtype::u32:
      return convert_rows(static_cast<const uint32_t*>(v.data), v.rows, v.cols, normalize, o, nt);
    case dtype::i32:
      return convert_rows(static_cast<const int32_t*>(v.data), v.rows, v.cols, normalize, o, nt);
  }
  return {};
}

void expect_no_zero_row(const convert_report& r, const char* what) {
  CAGRA_EXPECTS(r.zero_row < 0, "%s row %lld is all zeros: cosine distance is undefined for it",
                what, (long long)r.zero_row);
}

/** Copies `v` into a float matrix, normalizing each row when `normalize`. */
host_matrix to_float(const dataset_view& v, bool normalize, int nt, const char* what) {
  host_matrix out = host_matrix::uninitialized(dtype::f32, v.rows, v.cols);
  expect_no_zero_row(convert_view(v, normalize, static_cast<float*>(out.data()), nt), what);
  return out;
}

}  // namespace

namespace {
/** The first row i < rows for which `is_hit(i)` holds, or -1; rows over the threads. */
template <typename IsHit>
int64_t first_row_where(int64_t rows, int64_t cols, IsHit is_hit, int nt) {
  int64_t first_hit = rows;
  // A few rows (a search's queries) run on the caller's thread.
  run_team(threads_for_elements(nt, rows * cols), [&] {
    int64_t first = rows;
#pragma omp for schedule(static) nowait
    for (int64_t i = 0; i < rows; ++i)
      if (i < first && is_hit(i)) first = i;
#pragma omp critical(cagra_first_row_where)
    first_hit = std::min(first_hit, first);
  });
  return first_hit == rows ? -1 : first_hit;
}

/** First row of an [rows, cols] matrix of float words (f32: W = uint32_t, f16: uint16_t) with a
 *  NaN or an infinity (exponent bits all ones), or -1. Bit tests on the raw words: the check runs
 *  on every search call's queries, and the generic value_at loop (a switch per element, one
 *  thread) was a large part of a GPU call's host time for f32 queries. */
template <typename W>
int64_t first_nonfinite_row(const void* data, int64_t rows, int64_t cols, W exp_mask, int nt) {
  const W* w = static_cast<const W*>(data);
  return first_row_where(
      rows, cols,
      [&](int64_t i) {
        const W* r = w + i * cols;
        bool any = false;
        for (int64_t j = 0; j < cols; ++j) any |= (r[j] & exp_mask) == exp_mask;
        return any;
      },
      nt);
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
  if (target == dtype::f32) return to_float(input, m == metric::cosine, nt, "dataset");
  // f16 storage: straight from the input, without a float matrix in between.
  host_matrix h = host_matrix::uninitialized(dtype::f16, input.rows, input.cols);
  const convert_report r =
      convert_view(input, m == metric::cosine, static_cast<half*>(h.data()), nt);
  expect_no_zero_row(r, "dataset");
  // Beyond the f16 range the value would be stored as infinity (searches with infinite
  // distances, and a file that load refuses): say which one instead (found by fuzzing).
  if (r.beyond_f16 >= 0) {
    const int64_t row = r.beyond_f16 / input.cols, col = r.beyond_f16 % input.cols;
    // The value it held as float (after the normalization, as the f16 rounding saw it).
    const dataset_view one(static_cast<const uint8_t*>(input.data) + row * input.row_bytes(),
                           input.type, 1, input.cols);
    std::vector<float> tmp(size_t(input.cols));
    convert_view(one, m == metric::cosine, tmp.data(), 1);
    const float value = tmp[size_t(col)];
    CAGRA_FAIL(
        "dataset row %lld, column %lld holds %g, beyond the f16 range (|x| <= 65504); "
        "index it with f32 storage or scale the data",
        (long long)row, (long long)col, double(value));
  }
  return h;
}

host_matrix normalized_in_place(host_matrix&& rows, int nt) {
  CAGRA_EXPECTS(rows.type() == dtype::f32, "in-place normalization takes f32 rows, not %s",
                to_string(rows.type()));
  const int64_t n = rows.rows(), cols = rows.cols();
  check_finite(rows.view(), "dataset", nt);
  // A row is all zeros when every word is +0 or -0. Checked before any row changes, so that a
  // refused matrix is left as it was (row_to_float below cannot fail).
  const uint32_t* w = static_cast<const uint32_t*>(rows.data());
  const int64_t zero = first_row_where(
      n, cols,
      [&](int64_t i) {
        uint32_t bits = 0;
        for (int64_t j = 0; j < cols; ++j) bits |= w[i * cols + j] & 0x7FFFFFFFu;
        return bits == 0;
      },
      nt);
  expect_no_zero_row({zero, -1}, "dataset");
  float* x = static_cast<float*>(rows.data());
  // In place: row_to_float writes each element back unchanged, then scales it (the same bits as
  // to_storage's copy).
  run_team(threads_for_elements(nt, n * cols), [&] {
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) row_to_float(x + i * cols, cols, true, x + i * cols);
  });
  return std::move(rows);
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
