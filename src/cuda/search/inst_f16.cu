// The single-CTA search kernel for f16 storage (instantiate.hpp lists them all).
#include <cuda_fp16.h>

#include "cuda/search/instantiate.hpp"
#include "cuda/search/single_cta.cuh"

CAGRA_INSTANTIATE_SINGLE_CTA(__half)
