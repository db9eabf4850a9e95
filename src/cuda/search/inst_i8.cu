// The single-CTA search kernel for i8 storage (instantiate.hpp lists them all).
#include <cuda_fp16.h>

#include "cuda/search/instantiate.hpp"
#include "cuda/search/single_cta.cuh"

CAGRA_INSTANTIATE_SINGLE_CTA(int8_t)
