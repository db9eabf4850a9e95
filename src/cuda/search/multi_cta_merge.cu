// The second kernel of the multi-CTA search: one CTA per query turns the n_ctas lists of 32
// entries that the search kernel left in global memory into the query's top k.
//
// Thread mapping: the whole CTA loads the n_ctas * 32 entries into shared memory (padded to a
// power of two with (+inf, invalid)) and bitonic-sorts them by (distance, id) (bitonic.cuh,
// block_group); warp 0 then walks the sorted list 32 entries at a time, drops invalid entries
// and duplicates, and writes the first k survivors with a ballot compaction (fewer than k: the
// rest is padded with invalid ids). Why a sort and not a k-way merge of the sorted lists: at most
// 4096 entries (32 KB of shared memory), one CTA per query, and it reuses the tested sort. A node
// held by several CTAs carries the distance from the shared device hash in every list, so its
// copies are equal keys and end up adjacent: one comparison with the left neighbor drops them.
#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/primitives/bitonic.cuh"
#include "cuda/search/multi_cta.hpp"

namespace cagra::cuda {
namespace dev {
namespace {

constexpr uint32_t kInvalid = 0xFFFFFFFFu;  // cagra::kInvalidId

__global__ void __launch_bounds__(256) multi_cta_merge(const uint32_t* part_ids, const float* part_dists, uint32_t n,
                                                       uint32_t np2, uint32_t k, uint64_t query_offset,
                                                       uint32_t* ids, float* distances) {
  extern __shared__ __align__(16) uint8_t smem[];
  float* d = reinterpret_cast<float*>(smem);
  uint32_t* id = reinterpret_cast<uint32_t*>(smem + size_t{np2} * sizeof(float));
  const float far = __int_as_float(0x7F800000);
  const uint64_t in = uint64_t{blockIdx.x} * n;
  for (uint32_t i = threadIdx.x; i < np2; i += blockDim.x) {
    d[i] = i < n ? part_dists[in + i] : far;
    id[i] = i < n ? part_ids[in + i] : kInvalid;
  }
  __syncthreads();
  bitonic_sort(block_group{}, d, id, np2);  // ends with a barrier

  if (threadIdx.x >= 32) return;
  const uint32_t lane = threadIdx.x;
  const uint64_t out = (query_offset + blockIdx.x) * k;
  uint32_t written = 0;  // same on every lane
  for (uint32_t base = 0; base < np2 && written < k; base += 32) {
    const uint32_t i = base + lane;  // np2 >= 32 is a multiple of 32
    const uint32_t x = id[i];
    const bool keep = x != kInvalid && !(i > 0 && id[i - 1] == x);
    const uint32_t ballot = __ballot_sync(0xFFFFFFFFu, keep);
    const uint32_t pos = written + __popc(ballot & ((1u << lane) - 1u));
    if (keep && pos < k) {
      ids[out + pos] = x;
      if (distances) distances[out + pos] = d[i];
    }
    written += __popc(ballot);
  }
  for (uint32_t o = written + lane; o < k; o += 32) {
    ids[out + o] = kInvalid;
    if (distances) distances[out + o] = far;
  }
}

}  // namespace
}  // namespace dev

void launch_multi_cta_merge(const uint32_t* part_ids, const float* part_dists, uint32_t n_ctas, uint32_t k,
                            uint32_t n_queries, uint64_t query_offset, uint32_t* ids, float* distances,
                            cudaStream_t stream) {
  const uint32_t n = n_ctas * kMultiCtaList;
  uint32_t np2 = 32;
  while (np2 < n) np2 <<= 1;
  CAGRA_EXPECTS(np2 <= kMultiCtaMaxItopk, "the multi-CTA merge takes at most %u entries per query (got %u)",
                kMultiCtaMaxItopk, n);
  const uint32_t block = np2 / 2 < 32 ? 32 : np2 / 2 < 256 ? np2 / 2 : 256;  // warp 0 compacts: >= 32
  const size_t smem = size_t{np2} * (sizeof(float) + sizeof(uint32_t));
  dev::multi_cta_merge<<<n_queries, block, smem, stream>>>(part_ids, part_dists, n, np2, k, query_offset, ids,
                                                           distances);
  CAGRA_CUDA_CHECK_LAUNCH();
}

}  // namespace cagra::cuda
