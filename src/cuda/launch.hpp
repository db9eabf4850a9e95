// Launch helpers shared by the search kernels: the dynamic shared-memory opt-in, and the
// dispatch of a run-time team size (the one table of team sizes: 2, 4, 8, 16, 32) and storage
// type to the kernels' template parameters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cagra/types.hpp>

#include "cuda/check.hpp"

namespace cagra::cuda {

/** Launches `kernel` with `smem` bytes of dynamic shared memory (opting in above 48 KB). */
template <typename... P, typename... A>
void launch_with_smem(void (*kernel)(P...), dim3 grid, uint32_t block, size_t smem,
                      cudaStream_t stream, const A&... args) {
  if (smem > 48 * 1024)
    CAGRA_CUDA_TRY(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kernel<<<grid, block, smem, stream>>>(args...);
  CAGRA_CUDA_CHECK_LAUNCH();
}

/** Calls f(std::integral_constant<uint32_t, team>{}) for a supported team size. */
template <typename F>
void with_team(uint32_t team, F&& f) {
  switch (team) {
    case 2: return f(std::integral_constant<uint32_t, 2>{});
    case 4: return f(std::integral_constant<uint32_t, 4>{});
    case 8: return f(std::integral_constant<uint32_t, 8>{});
    case 16: return f(std::integral_constant<uint32_t, 16>{});
    case 32: return f(std::integral_constant<uint32_t, 32>{});
    default: CAGRA_FAIL("team size %u is not one of 2, 4, 8, 16, 32", team);
  }
}

/** Calls f(T{}) with T the device type of storage dtype `t` (float, __half, uint8_t, int8_t). */
template <typename F>
void with_device_type(dtype t, F&& f) {
  switch (t) {
    case dtype::f32: return f(float{});
    case dtype::f16: return f(__half{});
    case dtype::u8: return f(uint8_t{});
    case dtype::i8: return f(int8_t{});
    default: CAGRA_FAIL("the CUDA backend cannot search vectors of type %s", to_string(t));
  }
}

}  // namespace cagra::cuda
