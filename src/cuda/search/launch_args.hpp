// The search kernels' argument blocks from a resolved plan (core/plan.cpp): the plan's values
// copied in, plus what follows from them mechanically (power-of-two sizes, the shared-memory
// layout, the multi-CTA launch's query chunk). No automatic value is chosen here.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cagra/plan.hpp>

#include "cuda/search/multi_cta.hpp"
#include "cuda/search/single_cta.hpp"
#include "cuda/state.hpp"

namespace cagra::cuda {

/** One single-CTA launch configuration (the device pointers are the caller's to fill in). */
struct single_cta_launch {
  single_cta_args args{};
  uint32_t team = 0, block = 0;
  size_t smem = 0;
};
single_cta_launch make_single_cta_launch(const index_state& st, const search_plan& plan, metric m);

/** One multi-CTA launch configuration; `chunk` is the most queries one launch takes (what the
 *  per-query device hash and lists allow in kMultiCtaWorkspace bytes). */
struct multi_cta_launch {
  multi_cta_args args{};
  uint32_t team = 0, block = 0, chunk = 0;
  size_t smem = 0;
};
multi_cta_launch make_multi_cta_launch(const index_state& st, const search_plan& plan, metric m);

/** Query type of a storage type: f32 for f32/f16, the same byte type for u8/i8. */
inline dtype query_dtype_for(dtype storage) {
  return storage == dtype::u8 || storage == dtype::i8 ? storage : dtype::f32;
}

/** Throws unless `smem` bytes (plus the kernel's static 512) fit one CTA on `device`. */
void check_shared_memory(size_t smem, int device, const char* kernel, const search_plan& plan);

}  // namespace cagra::cuda
