// pair_distance (NN-descent's tiles of distances): every block shape (1-4 rows against 1-7
// columns: whole 3-column tiles and padded ones) at lengths around the kernels' 8- and
// 16-element steps and beyond one int32 chunk. Float pairs agree with a double reference and
// have the same bits in any block and either order; byte pairs equal the per-pair kernels
// exactly, for each metric.
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/distance.hpp"
#include "cpu/pair_distance.hpp"

namespace cagra::test {
namespace {

template <typename T>
std::vector<T> random_rows(size_t rows, size_t dim, uint32_t seed, bool extreme) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  std::vector<T> v(rows * dim);
  for (size_t i = 0; i < v.size(); ++i) {
    if constexpr (std::is_same_v<T, float>)
      v[i] = u(rng);
    else if (extreme)  // 255 / 0 and -128 / 127 alternating by row: the largest terms
      v[i] = T((i / dim) % 2 ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max());
    else
      v[i] = T(rng());
  }
  return v;
}

/** Every block of na rows (from row 0) against nb columns (from row 4) of `rows`. */
template <typename T, typename Check>
void for_each_block(const std::vector<T>& data, size_t dim, metric m, Check check) {
  cpu::pair_distance<T> pd(m, dim);
  std::vector<const T*> r(11);
  for (size_t i = 0; i < r.size(); ++i) r[i] = data.data() + i * dim;
  for (size_t na = 1; na <= cpu::pair_distance<T>::kMaxRows; ++na)
    for (size_t nb = 1; nb <= 7; ++nb) {
      std::vector<float> out(na * nb, -99.f);
      pd.block(r.data(), na, r.data() + 4, nb, out.data());
      for (size_t a = 0; a < na; ++a)
        for (size_t b = 0; b < nb; ++b) check(pd, r[a], r[4 + b], out[a * nb + b]);
    }
}

TEST(PairDistance, FloatBlocksMatchAReferenceAndEachOther) {
  for (size_t dim : {1u, 5u, 8u, 9u, 16u, 23u, 64u, 100u, 784u}) {
    const auto data = random_rows<float>(11, dim, uint32_t(dim), false);
    for (metric m : {metric::l2, metric::inner_product, metric::cosine}) {
      for_each_block(data, dim, m, [&](const auto& pd, const float* a, const float* b, float got) {
        double l2 = 0, dot = 0, sq = 0;
        for (size_t i = 0; i < dim; ++i) {
          l2 += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
          dot += double(a[i]) * b[i];
          sq += double(a[i]) * a[i] + double(b[i]) * b[i];
        }
        const double want = m == metric::l2 ? l2 : m == metric::cosine ? 1 - dot : -dot;
        EXPECT_NEAR(got, want, 1e-5 * sq + 1e-6) << "dim " << dim;
        // The same bits alone, in the other order, and in a block of another shape.
        EXPECT_EQ(got, pd(a, b)) << "dim " << dim;
        EXPECT_EQ(got, pd(b, a)) << "dim " << dim;
        const float* rows[4] = {b, b, b, b};
        float four[4];
        pd.block(rows, 4, &a, 1, four);
        for (float v : four) EXPECT_EQ(got, v) << "dim " << dim;
      });
    }
  }
}

template <typename T>
void byte_blocks_are_exact() {
  for (size_t dim : {1u, 15u, 16u, 17u, 31u, 128u, 784u, 32768u, 40000u}) {
    for (const bool extreme : {false, true}) {
      const auto data = random_rows<T>(11, dim, uint32_t(dim), extreme);
      for (metric m : {metric::l2, metric::inner_product, metric::cosine}) {
        const cpu::distance<T> one{m, dim};
        for_each_block(data, dim, m, [&](const auto&, const T* a, const T* b, float got) {
          EXPECT_EQ(got, one(a, b)) << "dim " << dim << (extreme ? " extreme" : "");
        });
      }
    }
  }
}

TEST(PairDistance, ByteBlocksEqualThePerPairKernels) {
  byte_blocks_are_exact<uint8_t>();
  byte_blocks_are_exact<int8_t>();
}

TEST(PairDistance, ADotProductThatOverflowsBothWaysIsTheFarthest) {
  // Finite rows whose products overflow to +inf in one element and -inf in another: the sum is
  // NaN, which would break the (distance, id) order of NN-descent's lists (fuzz_build_search
  // found builds that differed by thread count). It counts as +inf.
  const float a[3] = {6.5e30f, -1.9e19f, 1.0f};
  const float b[3] = {-2.4e33f, -3.0e26f, 1.0f};
  const float* ra[1] = {a};
  const float* rb[1] = {b};
  for (metric m : {metric::inner_product, metric::cosine}) {
    float out = 0;
    cpu::pair_distance<float>(m, 3).block(ra, 1, rb, 1, &out);
    EXPECT_TRUE(std::isinf(out) && out > 0) << to_string(m) << ": " << out;
  }
  float l2 = 0;
  cpu::pair_distance<float>(metric::l2, 3).block(ra, 1, rb, 1, &l2);
  EXPECT_TRUE(std::isinf(l2) && l2 > 0) << l2;
}

TEST(PairDistance, TooManyRowsIsAnError) {
  const std::vector<float> data(8 * 4, 1.f);
  const float* r[8];
  for (size_t i = 0; i < 8; ++i) r[i] = data.data() + i * 4;
  cpu::pair_distance<float> pd(metric::l2, 4);
  float out[8 * 8];
  EXPECT_THROW(pd.block(r, 5, r, 8, out), cagra::error);
}

}  // namespace
}  // namespace cagra::test
