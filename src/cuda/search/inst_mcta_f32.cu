// Explicit instantiation of the multi-CTA search for f32 storage (5 team sizes). One TU per
// storage type keeps each compile short and lets the four build in parallel.
#include <cuda_fp16.h>

#include "cuda/search/multi_cta.cuh"

namespace cagra::cuda {
template void launch_multi_cta<float>(const multi_cta_args&, uint32_t, uint32_t, uint32_t, size_t, cudaStream_t,
                                          const inline_query*);
template void launch_multi_cta_persistent<float>(const multi_cta_args&, const persistent_launch&, uint32_t, uint32_t,
                                              size_t, cudaStream_t);
}  // namespace cagra::cuda
