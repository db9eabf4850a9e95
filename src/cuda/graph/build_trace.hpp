// Host-side wall-clock marks through the GPU build (NN-descent, optimize), printed to stderr by a
// build with -DCAGRA_NND_TIMING=1 (a developer's measurement: where the time between the kernels
// goes, e.g. allocations and transfers); a normal build compiles them out.
#pragma once

#include <chrono>
#include <cstdio>

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

}  // namespace cagra::cuda
