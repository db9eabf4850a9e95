// Timing of the GPU build for a build with -DCAGRA_NND_TIMING=1 (a developer's measurement; a
// normal build compiles it out): build_trace, host-side wall-clock marks through NN-descent and
// the optimization (where the time between the kernels goes: allocations, transfers), and
// phase_timer, GPU time between events on a stream (NN-descent's per-iteration phases).
#pragma once

#include <chrono>
#include <cstdio>

#include <cuda_runtime_api.h>

#include "cuda/check.hpp"

#ifndef CAGRA_NND_TIMING
#define CAGRA_NND_TIMING 0
#endif

namespace cagra::cuda {

class build_trace {
 public:
  explicit build_trace(const char* stage) : stage_(stage) {}
  /** Prints the milliseconds since construction and since the previous mark. */
  void mark(const char* what) {
    if constexpr (CAGRA_NND_TIMING != 0) {
      const auto now = std::chrono::steady_clock::now();
      std::fprintf(stderr, "[gpu %s] %-28s at %8.2f ms (+%.2f ms)\n", stage_, what, ms(t0_, now),
                   ms(last_, now));
      last_ = now;
    }
  }

 private:
  using clock = std::chrono::steady_clock;
  static double ms(clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  }
  const char* stage_;
  clock::time_point t0_ = clock::now(), last_ = t0_;
};

/** Whether this build times its stages (-DCAGRA_NND_TIMING=1). */
constexpr bool timing_build() { return CAGRA_NND_TIMING != 0; }

/** With timing_build(): GPU time between marks (timing events exist only then). */
class phase_timer {
 public:
  phase_timer(cudaStream_t s, bool on) : s_(s), on_(on) {
    if (on_)
      for (auto& e : ev_) CAGRA_CUDA_TRY(cudaEventCreate(&e));
  }
  ~phase_timer() {
    if (on_)
      for (auto& e : ev_) CAGRA_CUDA_TRY_NO_THROW(cudaEventDestroy(e));
  }
  phase_timer(const phase_timer&) = delete;
  phase_timer& operator=(const phase_timer&) = delete;
  void mark(int i) {
    if (on_) CAGRA_CUDA_TRY(cudaEventRecord(ev_[i], s_));
  }
  float ms(int a, int b) const {
    float x = 0;
    if (on_) CAGRA_CUDA_TRY(cudaEventElapsedTime(&x, ev_[a], ev_[b]));
    return x;
  }

 private:
  cudaStream_t s_;
  bool on_;
  cudaEvent_t ev_[4] = {};
};

}  // namespace cagra::cuda
