// testing::warp_list_merge: one warp's list merges (warp_list.cuh) run alone on the device, so
// that tests can hold merge_head's head against a sort on the host on lists they choose.
#include <cagra/error.hpp>

#include "cuda/check.hpp"
#include "cuda/memory.hpp"
#include "cuda/primitives/warp_list.cuh"
#include "cuda/testing.hpp"

namespace cagra::cuda {
namespace {

constexpr uint32_t kMaxCandidates = 96;

__global__ void warp_list_merge_kernel(float* list_d, uint32_t* list_i, const float* cand_d,
                                       const uint32_t* cand_i, uint32_t n, uint32_t head) {
  const float far = __int_as_float(0x7F800000);
  __shared__ float cd[kMaxCandidates];
  __shared__ uint32_t ci[kMaxCandidates];
  for (uint32_t s = threadIdx.x; s < n; s += 32) {
    cd[s] = cand_d[s];
    ci[s] = cand_i[s];
  }
  __syncwarp();
  float ld = list_d[threadIdx.x];
  uint32_t li = list_i[threadIdx.x];
  if (head == 0)
    dev::merge_list(ld, li, cd, ci, n, far);
  else
    dev::merge_head(ld, li, cd, ci, n, far, head);
  list_d[threadIdx.x] = ld;
  list_i[threadIdx.x] = li;
}

}  // namespace

void testing::warp_list_merge(float* list_d, uint32_t* list_i, const float* cand_d,
                              const uint32_t* cand_i, uint32_t n, uint32_t head) {
  CAGRA_EXPECTS(n <= kMaxCandidates && head <= 32, "warp_list_merge: n <= 96, head <= 32");
  device_buffer<uint8_t> bytes(2 * 32 * 4 + 2 * kMaxCandidates * 4);
  float* d_list_d = reinterpret_cast<float*>(bytes.data());
  uint32_t* d_list_i = reinterpret_cast<uint32_t*>(d_list_d + 32);
  float* d_cand_d = reinterpret_cast<float*>(d_list_i + 32);
  uint32_t* d_cand_i = reinterpret_cast<uint32_t*>(d_cand_d + kMaxCandidates);
  CAGRA_CUDA_TRY(cudaMemcpy(d_list_d, list_d, 32 * 4, cudaMemcpyHostToDevice));
  CAGRA_CUDA_TRY(cudaMemcpy(d_list_i, list_i, 32 * 4, cudaMemcpyHostToDevice));
  if (n) {
    CAGRA_CUDA_TRY(cudaMemcpy(d_cand_d, cand_d, n * 4, cudaMemcpyHostToDevice));
    CAGRA_CUDA_TRY(cudaMemcpy(d_cand_i, cand_i, n * 4, cudaMemcpyHostToDevice));
  }
  warp_list_merge_kernel<<<1, 32, 0, cudaStreamLegacy>>>(d_list_d, d_list_i, d_cand_d, d_cand_i, n,
                                                         head);
  CAGRA_CUDA_TRY(cudaGetLastError());
  CAGRA_CUDA_TRY(cudaMemcpy(list_d, d_list_d, 32 * 4, cudaMemcpyDeviceToHost));
  CAGRA_CUDA_TRY(cudaMemcpy(list_i, d_list_i, 32 * 4, cudaMemcpyDeviceToHost));
}

}  // namespace cagra::cuda
