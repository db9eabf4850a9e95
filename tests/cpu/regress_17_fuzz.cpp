// Regressions for what the fuzz targets of issue 17 found (tests/fuzz/; the inputs themselves are
// in tests/fuzz/corpus/<target>/crash-*, replayed by scripts/fuzz.sh). Each test failed before
// its fix.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "test_data.hpp"

namespace cagra::test {
namespace {

resources cpu1() {
  resources r;
  r.target = backend::cpu;
  r.num_threads = 1;
  return r;
}

index_params small(metric m, storage_type s) {
  index_params p;
  p.metric = m;
  p.storage = s;
  p.graph_degree = 2;
  p.intermediate_graph_degree = 3;
  return p;
}

// fuzz_build_search: f32 values beyond the f16 range (|x| > 65504) built with f16 storage were
// stored as infinity: the index searched with infinite distances, and save wrote a file that
// load refuses. build now says which value does not fit.
TEST(FuzzFindings, F16StorageRefusesValuesBeyondItsRange) {
  host_matrix base(dtype::f32, 6, 2);
  float* v = static_cast<float*>(base.data());
  for (int i = 0; i < 12; ++i) v[i] = static_cast<float>(i);
  v[7] = 70000.0f;  // row 3, column 1
  try {
    (void)build(cpu1(), small(metric::l2, storage_type::f16), base);
    FAIL() << "no cagra::error";
  } catch (const cagra::error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("row 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("f16"), std::string::npos) << msg;
  }
  // 65504 is the largest finite half, and values up to it are fine.
  v[7] = 65504.0f;
  const cagra::index idx = build(cpu1(), small(metric::l2, storage_type::f16), base);
  const half* h = static_cast<const half*>(idx.vectors().data());
  for (int i = 0; i < 12; ++i) EXPECT_TRUE(std::isfinite(to_float(h[i]))) << i;
}

// fuzz_build_search: a cosine row of subnormal values (norm ~1e-44) was scaled by 1/norm rounded
// to float, which overflows to infinity: the stored row was infinite. It is now scaled in double,
// and comes out unit length like any other row.
TEST(FuzzFindings, CosineNormalizesSubnormalRows) {
  host_matrix base(dtype::f32, 5, 3);
  float* v = static_cast<float*>(base.data());
  for (int i = 0; i < 15; ++i) v[i] = 1.0f + static_cast<float>(i % 4);
  const float tiny = std::ldexp(1.0f, -140);  // subnormal
  v[6] = tiny, v[7] = 2 * tiny, v[8] = 0;     // row 2
  for (storage_type s : {storage_type::f32, storage_type::f16}) {
    const cagra::index idx = build(cpu1(), small(metric::cosine, s), base);
    const host_matrix& st = idx.vectors();
    for (int64_t i = 0; i < 5; ++i) {
      double n2 = 0;
      for (int64_t j = 0; j < 3; ++j) {
        const double x = st.type() == dtype::f32
                             ? static_cast<const float*>(st.data())[i * 3 + j]
                             : to_float(static_cast<const half*>(st.data())[i * 3 + j]);
        ASSERT_TRUE(std::isfinite(x)) << "row " << i;
        n2 += x * x;
      }
      EXPECT_NEAR(n2, 1.0, 2e-3) << "row " << i;
    }
  }
}

}  // namespace
}  // namespace cagra::test
