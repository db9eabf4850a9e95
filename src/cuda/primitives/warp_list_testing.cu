// testing::list_merge: the multi-CTA kernel's list merges (warp_list.cuh) run alone on the device,
// so that tests can hold them against a sort on the host on lists they choose: merge_list on one
// warp, merge_head_cta on a CTA of the pooled plan's size (256 threads).
#include <vector>

#include <cagra/error.hpp>

#include "cuda/check.hpp"
#include "cuda/memory.hpp"
#include "cuda/primitives/warp_list.cuh"
#include "cuda/testing.hpp"

namespace cagra::cuda {
namespace {

constexpr uint32_t kMaxCandidates = 96;

__global__ void list_merge_kernel(float* list_d, uint32_t* list_i, const float* cand_d,
                                  const uint32_t* cand_i, uint32_t n, uint32_t head,
                                  const uint32_t* allowed) {
  const float far = __int_as_float(0x7F800000);
  __shared__ float cd[kMaxCandidates];
  __shared__ uint32_t ci[kMaxCandidates];
  for (uint32_t s = threadIdx.x; s < n; s += blockDim.x) {
    cd[s] = cand_d[s];
    ci[s] = cand_i[s];
  }
  __syncthreads();
  float ld = threadIdx.x < 32 ? list_d[threadIdx.x] : far;
  uint32_t li = threadIdx.x < 32 ? list_i[threadIdx.x] : dev::kNoId;
  if (head == 0) {
    if (threadIdx.x < 32) dev::merge_list(ld, li, cd, ci, n, far, allowed);
  } else {
    dev::merge_head_cta(ld, li, cd, ci, n, far, head, allowed);
  }
  if (threadIdx.x < 32) {
    list_d[threadIdx.x] = ld;
    list_i[threadIdx.x] = li;
  }
}

}  // namespace

void testing::list_merge(float* list_d, uint32_t* list_i, const float* cand_d,
                         const uint32_t* cand_i, uint32_t n, uint32_t head,
                         const uint32_t* allowed, uint32_t allowed_words) {
  CAGRA_EXPECTS(head <= 32 && n <= (head == 0 ? kMaxCandidates : dev::kHeadMergeMax),
                "list_merge: head <= 32, n <= 96 (merge_list) or 32 (merge_head_cta)");
  device_buffer<uint8_t> bytes(2 * 32 * 4 + 2 * kMaxCandidates * 4 + allowed_words * 4);
  float* d_list_d = reinterpret_cast<float*>(bytes.data());
  uint32_t* d_list_i = reinterpret_cast<uint32_t*>(d_list_d + 32);
  float* d_cand_d = reinterpret_cast<float*>(d_list_i + 32);
  uint32_t* d_cand_i = reinterpret_cast<uint32_t*>(d_cand_d + kMaxCandidates);
  uint32_t* d_allowed = d_cand_i + kMaxCandidates;
  CAGRA_CUDA_TRY(cudaMemcpy(d_list_d, list_d, 32 * 4, cudaMemcpyHostToDevice));
  CAGRA_CUDA_TRY(cudaMemcpy(d_list_i, list_i, 32 * 4, cudaMemcpyHostToDevice));
  CAGRA_CUDA_TRY(cudaMemcpy(d_cand_d, cand_d, n * 4, cudaMemcpyHostToDevice));
  CAGRA_CUDA_TRY(cudaMemcpy(d_cand_i, cand_i, n * 4, cudaMemcpyHostToDevice));
  if (allowed)
    CAGRA_CUDA_TRY(cudaMemcpy(d_allowed, allowed, allowed_words * 4, cudaMemcpyHostToDevice));
  list_merge_kernel<<<1, head == 0 ? 32 : 256, 0, cudaStreamLegacy>>>(
      d_list_d, d_list_i, d_cand_d, d_cand_i, n, head, allowed ? d_allowed : nullptr);
  CAGRA_CUDA_TRY(cudaGetLastError());
  CAGRA_CUDA_TRY(cudaMemcpy(list_d, d_list_d, 32 * 4, cudaMemcpyDeviceToHost));
  CAGRA_CUDA_TRY(cudaMemcpy(list_i, d_list_i, 32 * 4, cudaMemcpyDeviceToHost));
}

}  // namespace cagra::cuda
