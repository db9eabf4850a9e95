// Error checks for CUDA runtime calls: every call goes through CAGRA_CUDA_TRY, every kernel
// launch is followed by CAGRA_CUDA_CHECK_LAUNCH. Failures throw cagra::error naming the call,
// the CUDA error and the place (file:line), like every other failure of the library.
// Destructors use CAGRA_CUDA_TRY_NO_THROW: they must not throw (e.g. at process exit, when the
// driver may already be shutting down), so they drop the error after clearing it.
#pragma once

#include <cuda_runtime_api.h>

#include <cagra/error.hpp>

#define CAGRA_CUDA_TRY(call)                                                                    \
  do {                                                                                          \
    const cudaError_t cagra_cuda_err_ = (call);                                                 \
    if (cagra_cuda_err_ != cudaSuccess) {                                                       \
      (void)cudaGetLastError(); /* clear a sticky-free error so later calls start clean */      \
      ::cagra::detail::throw_error(__FILE__, __LINE__,                                          \
                                   ::cagra::detail::format("CUDA error in %s: %s (%s)", #call,  \
                                                           cudaGetErrorString(cagra_cuda_err_), \
                                                           cudaGetErrorName(cagra_cuda_err_))); \
    }                                                                                           \
  } while (0)

/** After a <<<...>>> launch: configuration errors (bad grid, too much shared memory) show here. */
#define CAGRA_CUDA_CHECK_LAUNCH() CAGRA_CUDA_TRY(cudaGetLastError())

#define CAGRA_CUDA_TRY_NO_THROW(call) \
  do {                                \
    if ((call) != cudaSuccess) {      \
      (void)cudaGetLastError();       \
    }                                 \
  } while (0)
