// The fixture the CUDA suites share: the bigann10k u8 index (graph degree 32, kNN degree 64, l2),
// built once per suite. A missing GPU or data set fails every test in SetUp(): a failure inside
// SetUpTestSuite() would only mark the tests skipped.
#pragma once

#include <cstdio>
#include <exception>

#include <gtest/gtest.h>

#include "cuda/backend.hpp"
#include "test_data.hpp"

namespace cagra::test {

class bigann_gpu_suite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (cuda::device_count() == 0) return;
    try {
      set_ = new real_set(bigann10k());
      index_params p;
      p.graph_degree = 32;
      p.intermediate_graph_degree = 64;
      u8_ = new cagra::index(build({}, p, set_->base));
    } catch (const std::exception& e) {
      std::printf("set-up failed: %s\n", e.what());
    }
  }
  void SetUp() override {
    ASSERT_GT(cuda::device_count(), 0) << "no CUDA device: the cuda tests need a GPU";
    ASSERT_NE(u8_, nullptr) << "bigann10k could not be loaded or indexed (see above)";
  }
  static void TearDownTestSuite() {
    delete u8_;
    u8_ = nullptr;
    delete set_;
    set_ = nullptr;
  }
  static matrix_view<const uint32_t> truth() { return set_->truth.as<uint32_t>(); }

  static inline real_set* set_ = nullptr;
  static inline cagra::index* u8_ = nullptr;
};

}  // namespace cagra::test
