// The one list of what the search kernels are compiled for: storage types float, __half,
// uint8_t and int8_t (one translation unit each per kernel, inst_*.cu, so the eight compile in
// parallel), each with the team sizes of cuda/launch.hpp's with_team (2, 4, 8, 16, 32).
#pragma once

#define CAGRA_INSTANTIATE_SINGLE_CTA(T)                                                            \
  namespace cagra::cuda {                                                                          \
  template void launch_single_cta<T>(const single_cta_args&, uint32_t, uint32_t, uint32_t, size_t, \
                                     cudaStream_t);                                                \
  }

#define CAGRA_INSTANTIATE_MULTI_CTA(T)                                                           \
  namespace cagra::cuda {                                                                        \
  template void launch_multi_cta<T>(const multi_cta_args&, uint32_t, uint32_t, uint32_t, size_t, \
                                    cudaStream_t, const inline_query*);                          \
  template void launch_multi_cta_persistent<T>(const multi_cta_args&, const persistent_launch&,  \
                                               uint32_t, uint32_t, size_t, cudaStream_t);        \
  template uint32_t multi_cta_persistent_ctas_per_sm<T>(uint32_t, uint32_t, size_t);             \
  }
