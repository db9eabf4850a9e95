// Reading the multi-CTA kernel's trace stamps (a -DCAGRA_TRACE_KERNELS=ON build): the means
// of traced launches (summarize) and the persistent kernel's call taken apart (trace_persistent),
// for bench/cuda/cuda_latency.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>

#include "cuda/search/multi_cta.hpp"  // CAGRA_MCTA_TRACE

namespace cagra::test {

#if CAGRA_MCTA_TRACE
/** Means over traced multi-CTA calls (multi_cta.hpp's stamps), in microseconds. */
struct trace_summary {
  double query_copy = 0, query_convert = 0, init = 0, pick = 0, claim = 0, iteration0 = 0,
         iteration = 0, published = 0, counted = 0, merged = 0, span = 0;
};

/** The means over `calls` (each n_ctas x kMultiCtaTraceSlots stamps). */
trace_summary summarize(const std::vector<std::vector<uint64_t>>& calls, uint32_t n_ctas);

/** The persistent kernel's call on `idx` with `plan`, taken apart over the queries `q1` and
 *  printed under `label` (d_trace: device memory of trace_words words). */
void trace_persistent(const std::string& label, const cagra::index& idx,
                      const std::vector<host_matrix>& q1, const search_plan& plan,
                      uint64_t* d_trace, size_t trace_words, uint32_t* ids, float* dist);
#endif

}  // namespace cagra::test
