// Error checks for CUDA runtime calls: every call goes through CAGRA_CUDA_TRY, every kernel
// launch is followed by CAGRA_CUDA_CHECK_LAUNCH. Failures throw cagra::error naming the call,
// the CUDA error and the place (file:line), like every other failure of the library.
// Destructors use CAGRA_CUDA_TRY_NO_THROW: they must not throw (e.g. at process exit, when the
// driver may already be shutting down), so they drop the error after clearing it.
#pragma once

#include <string>

#include <cuda_runtime_api.h>

#include <cagra/error.hpp>

namespace cagra::cuda {
/** The message of a failed CUDA call: out of device memory says how much the device has free
 *  (whichever call ran out: an allocation, a stream, a library handle), anything else names the
 *  call and the CUDA error. */
inline std::string cuda_error_message(const char* call, cudaError_t err) {
  if (err != cudaErrorMemoryAllocation)
    return ::cagra::detail::format("CUDA error in %s: %s (%s)", call, cudaGetErrorString(err),
                                   cudaGetErrorName(err));
  size_t free_b = 0, total_b = 0;
  int device = -1;
  (void)cudaGetDevice(&device);
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) (void)cudaGetLastError();
  return ::cagra::detail::format(
      "out of device memory in %s on CUDA device %d (%.1f MiB free of %.1f MiB): use a smaller "
      "batch, a smaller index, or free GPU memory",
      call, device, free_b / 1048576.0, total_b / 1048576.0);
}
}  // namespace cagra::cuda

#define CAGRA_CUDA_TRY(call)                                                                   \
  do {                                                                                         \
    const cudaError_t cagra_cuda_err_ = (call);                                                \
    if (cagra_cuda_err_ != cudaSuccess) {                                                      \
      (void)cudaGetLastError(); /* clear a sticky-free error so later calls start clean */     \
      ::cagra::detail::throw_error(__FILE__, __LINE__,                                         \
                                   ::cagra::cuda::cuda_error_message(#call, cagra_cuda_err_)); \
    }                                                                                          \
  } while (0)

/** After a <<<...>>> launch: configuration errors (bad grid, too much shared memory) show here. */
#define CAGRA_CUDA_CHECK_LAUNCH() CAGRA_CUDA_TRY(cudaGetLastError())

#define CAGRA_CUDA_TRY_NO_THROW(call) \
  do {                                \
    if ((call) != cudaSuccess) {      \
      (void)cudaGetLastError();       \
    }                                 \
  } while (0)
