// The CPU distance kernels against a double-precision reference: every dimension from 1 to 70
// (the SIMD body and the scalar tail of each kernel), f32 and f16 rows (the f16 kernels widen
// eight halves per instruction where the CPU has F16C, and convert in software elsewhere), u8
// and i8 exactly. Also half <-> float conversion round trips.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/distance.hpp"

namespace cagra::test {
namespace {

TEST(Distance, FloatAndHalfKernelsMatchADoubleReference) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  for (size_t dim = 1; dim <= 70; ++dim) {
    std::vector<float> q(dim), x(dim);
    std::vector<half> xh(dim);
    for (size_t i = 0; i < dim; ++i) {
      q[i] = u(rng);
      xh[i] = cpu::float_to_half(u(rng));
      x[i] = cpu::half_to_float(xh[i]);  // the same values in both storage types
    }
    double l2 = 0, dot = 0, sq = 0;
    for (size_t i = 0; i < dim; ++i) {
      l2 += (double(q[i]) - x[i]) * (double(q[i]) - x[i]);
      dot += double(q[i]) * x[i];
      sq += double(q[i]) * q[i] + double(x[i]) * x[i];
    }
    const double tol = 1e-5 * sq + 1e-6;  // float accumulation in any order
    EXPECT_NEAR(cpu::l2_f32(q.data(), x.data(), dim), l2, tol) << "dim " << dim;
    EXPECT_NEAR(cpu::dot_f32(q.data(), x.data(), dim), dot, tol) << "dim " << dim;
    EXPECT_NEAR(cpu::l2_f16(q.data(), xh.data(), dim), l2, tol) << "dim " << dim;
    EXPECT_NEAR(cpu::dot_f16(q.data(), xh.data(), dim), dot, tol) << "dim " << dim;
  }
}

// Random bytes at lengths around the AVX2 kernel's 32-element steps, and large values (255 and 0,
// -128 and 127 in alternate elements: differences of 255, products of 255 x 255 and -128 x -128)
// up to and beyond one int32 chunk (32768 elements), where the chunks' sums add in 64 bits.
TEST(Distance, ByteKernelsAreExact) {
  std::mt19937 rng(3);
  for (size_t dim : {1u, 7u, 16u, 31u, 32u, 33u, 63u, 95u, 128u, 784u, 32768u, 40000u}) {
    for (const bool extreme : {false, true}) {
      std::vector<uint8_t> a(dim), b(dim);
      std::vector<int8_t> c(dim), d(dim);
      int64_t l2u = 0, dotu = 0, l2i = 0, doti = 0;
      for (size_t i = 0; i < dim; ++i) {
        a[i] = extreme ? uint8_t(255) : uint8_t(rng());
        b[i] = extreme ? uint8_t(i % 2 ? 255 : 0) : uint8_t(rng());
        c[i] = extreme ? int8_t(-128) : int8_t(rng());
        d[i] = extreme ? int8_t(i % 2 ? -128 : 127) : int8_t(rng());
        l2u += (int64_t(a[i]) - b[i]) * (int64_t(a[i]) - b[i]);
        dotu += int64_t(a[i]) * b[i];
        l2i += (int64_t(c[i]) - d[i]) * (int64_t(c[i]) - d[i]);
        doti += int64_t(c[i]) * d[i];
      }
      EXPECT_EQ(cpu::l2_u8(a.data(), b.data(), dim), float(l2u)) << dim;
      EXPECT_EQ(cpu::dot_u8(a.data(), b.data(), dim), float(dotu)) << dim;
      EXPECT_EQ(cpu::l2_i8(c.data(), d.data(), dim), float(l2i)) << dim;
      EXPECT_EQ(cpu::dot_i8(c.data(), d.data(), dim), float(doti)) << dim;
    }
  }
}

TEST(Distance, HalfConversionRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000u; ++bits) {
    const half h{uint16_t(bits)};
    const float f = cpu::half_to_float(h);
    if (std::isnan(f)) continue;  // NaN payloads need not survive
    EXPECT_EQ(cpu::float_to_half(f).bits, h.bits) << std::hex << bits;
  }
  EXPECT_EQ(cpu::half_to_float(cpu::float_to_half(1.0f)), 1.0f);
  EXPECT_EQ(cpu::half_to_float(cpu::float_to_half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(cpu::half_to_float(cpu::float_to_half(1e6f))));
}

}  // namespace
}  // namespace cagra::test
