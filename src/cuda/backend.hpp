// The CUDA backend's interface to the rest of the library. Plain C++ (no CUDA types), so that
// src/core/dispatch.cpp, the only caller, compiles without nvcc. Everything behind it lives in
// src/cuda/**/*.cu and is built only when CMake finds nvcc (CAGRA_HAVE_CUDA).
#pragma once

#include <cstdint>

#include <cagra/cagra.hpp>

#include "cpu/backend.hpp"  // search_plan: AUTO values resolved once, shared by both backends

namespace cagra::cuda {

/** Number of CUDA devices visible (0 when the driver or a device is missing; never throws). */
int device_count();

/** A device's identity, for logs and benchmark records. */
struct device_info {
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  size_t global_mem_bytes = 0;
  size_t l2_bytes = 0;
  size_t smem_per_block_optin = 0;  ///< shared memory one CTA may use (bytes)
  int driver_version = 0, runtime_version = 0;
};
/** Properties of CUDA device `device`; throws cagra::error when it does not exist. */
device_info cuda_info(int device = 0);
/** One line: "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 81559 MiB, driver 13000, runtime 13000)". */
std::string describe(const device_info& d);

/** GPU search (paper §IV-B/C). `queries` are host rows of the index's query type
 *  (core::queries_for), [nq, dim]; ids/distances are host [nq, k] (distances may be null).
 *  The index's vectors and graph are copied to the device on first use and cached in
 *  idx.backend_cache(). */
void search(const index& idx, const host_matrix& queries, uint32_t k, const search_params& params,
            const cpu::search_plan& plan, uint32_t* ids, float* distances, int device);

}  // namespace cagra::cuda
