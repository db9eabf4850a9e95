// The conversion of user rows to the stored type (core/convert.cpp): rows over the threads, typed
// loads, and f16 storage straight from the input. What it must keep: the same bytes for any
// thread count, and f16 storage equal to the f16 rounding of the f32 storage element for element
// (the definition the f16 path had when it went through a float matrix), for every input type,
// cosine (normalized rows, including a row of subnormal values) and L2. The errors name the
// first all-zero row and the first value beyond the f16 range, by row and column.
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "core/convert.hpp"
#include "core/half.hpp"

namespace cagra::test {
namespace {

/** rows x cols of type t, random values that type can hold; row 3 of f32 input subnormal. */
host_matrix random_rows(dtype t, int64_t rows, int64_t cols, uint32_t seed) {
  host_matrix m(t, rows, cols);
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 3.f);
  std::uniform_int_distribution<int> bytes(0, 255);
  for (int64_t i = 0; i < rows * cols; ++i) {
    const float x = nd(rng);
    switch (t) {
      case dtype::f32: m.as<float>().data[i] = x; break;
      case dtype::f16: m.as<half>().data[i] = core::float_to_half(x); break;
      case dtype::u8: m.as<uint8_t>().data[i] = uint8_t(bytes(rng)); break;
      case dtype::i8: m.as<int8_t>().data[i] = int8_t(bytes(rng) - 128); break;
      default: break;
    }
  }
  if (t == dtype::f32)
    for (int64_t j = 0; j < cols; ++j) m.as<float>().data[3 * cols + j] = std::ldexp(1.f + j, -140);
  return m;
}

bool same_bytes(const host_matrix& a, const host_matrix& b) {
  return a.type() == b.type() && a.size_bytes() == b.size_bytes() &&
         std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

TEST(Convert, F16StorageIsTheRoundingOfF32StorageForAnyThreadCount) {
  for (dtype t : {dtype::f32, dtype::f16, dtype::u8, dtype::i8})
    for (metric m : {metric::cosine, metric::l2}) {
      const host_matrix in = random_rows(t, 257, 67, 11);
      const std::string what =
          std::string(to_string(t)) + (m == metric::cosine ? " cosine" : " l2");
      const host_matrix f32 = core::to_storage(in, m, storage_type::f32, 1);
      const host_matrix f16 = core::to_storage(in, m, storage_type::f16, 1);
      ASSERT_EQ(f32.type(), dtype::f32) << what;
      ASSERT_EQ(f16.type(), dtype::f16) << what;
      for (int64_t i = 0; i < in.rows() * in.cols(); ++i)
        ASSERT_EQ(f16.as<half>().data[i].bits, core::float_to_half(f32.as<float>().data[i]).bits)
            << what << ", element " << i;
      for (int nt : {2, 3, 8}) {
        EXPECT_TRUE(same_bytes(core::to_storage(in, m, storage_type::f32, nt), f32)) << what << nt;
        EXPECT_TRUE(same_bytes(core::to_storage(in, m, storage_type::f16, nt), f16)) << what << nt;
      }
      if (m == metric::cosine && t == dtype::f32) {  // the subnormal row comes out unit length
        double n2 = 0;
        for (int64_t j = 0; j < in.cols(); ++j) {
          const double x = f32.as<float>().data[3 * in.cols() + j];
          n2 += x * x;
        }
        EXPECT_NEAR(n2, 1.0, 1e-5);
      }
    }
}

TEST(Convert, ErrorsNameTheFirstBadRowAndColumn) {
  host_matrix in(dtype::f32, 40, 5);
  for (int64_t i = 0; i < 200; ++i) in.as<float>().data[i] = 1.f + float(i % 7);
  in.as<float>().data[17 * 5 + 2] = 70000.f;  // beyond f16, as is and (l2) after conversion
  in.as<float>().data[31 * 5 + 4] = -80000.f;
  try {
    (void)core::to_storage(in, metric::l2, storage_type::f16, 4);
    FAIL() << "no cagra::error";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("row 17, column 2 holds 70000"), std::string::npos)
        << e.what();
  }
  // Normalized, the same rows fit in f16: no error.
  EXPECT_NO_THROW((void)core::to_storage(in, metric::cosine, storage_type::f16, 4));
  for (int64_t j = 0; j < 5; ++j) in.as<float>().data[23 * 5 + j] = 0.f;
  for (int64_t j = 0; j < 5; ++j) in.as<float>().data[29 * 5 + j] = 0.f;
  for (storage_type s : {storage_type::f32, storage_type::f16}) {
    try {
      (void)core::to_storage(in, metric::cosine, s, 4);
      FAIL() << "no cagra::error";
    } catch (const error& e) {
      EXPECT_NE(std::string(e.what()).find("dataset row 23 is all zeros"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace cagra::test
