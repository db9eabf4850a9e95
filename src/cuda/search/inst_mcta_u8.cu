// The multi-CTA and persistent search kernels for u8 storage (instantiate.hpp lists them all).
#include <cuda_fp16.h>

#include "cuda/search/instantiate.hpp"
#include "cuda/search/persistent.cuh"

CAGRA_INSTANTIATE_MULTI_CTA(uint8_t)
