// Prefetch of the next parents' graph rows, for both search kernels. What and why: an
// iteration's critical path is two dependent DRAM round trips, the parents' graph rows and then
// their neighbours' vectors (a 1M-row graph does not stay in L2). The next iteration's parents
// are known, with high probability, one step earlier: they are the list entries ranked right
// after this iteration's parents (the runner-ups), unless a new candidate beats the last of
// them. So the runner-ups' graph rows are prefetched into L2 when the parents are picked, and
// each warp prefetches the row of its best new candidate once that candidate's distance is
// known, if it beats the last runner-up. The next graph read then finds its row in L2 whenever
// the guess was right. A prefetch is a hint: the answer is the same with or without it.
#pragma once

#include <cstdint>

#include "cuda/search/search_common.cuh"

namespace cagra::cuda::dev {

/** Issues L2 prefetches of node `id`'s graph row (degree ids, every 128-byte line it touches). */
__device__ __forceinline__ void prefetch_graph_row(const uint32_t* graph, uint32_t degree,
                                                   uint32_t id) {
  const uint8_t* row = reinterpret_cast<const uint8_t*>(graph + uint64_t{id} * degree);
  const uint32_t bytes = degree * static_cast<uint32_t>(sizeof(uint32_t));
  for (uint32_t off = 0; off < bytes; off += 128)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(row + off));
  if (bytes % 128 != 0) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + bytes - 1));
}

/** A whole warp, once its teams have written dists[s] of their candidates (team s % n_teams,
 *  kTeam lanes each, so the warp's teams are 32 / kTeam consecutive ones): the graph row of the
 *  warp's nearest candidate is prefetched when it is nearer than *likely. Reading the distances
 *  back from shared memory keeps the distance loop's registers free (a running minimum there
 *  made ptxas spill). */
template <uint32_t kTeam>
__device__ __forceinline__ void prefetch_if_parent_likely(const uint32_t* graph, uint32_t degree,
                                                          const uint32_t* ids, const float* dists,
                                                          uint32_t n, const float* likely) {
  constexpr uint32_t kTeamsPerWarp = 32 / kTeam;
  const uint32_t lane = threadIdx.x & 31u, first_team = threadIdx.x / 32u * kTeamsPerWarp,
                 n_teams = blockDim.x / kTeam;
  __syncwarp();  // the team leaders' distances, visible to the warp
  float best = __int_as_float(0x7F800000);
  uint32_t best_s = kNoId;
  for (uint32_t i = lane;; i += 32) {  // s grows with i: the warp's teams, round by round
    const uint32_t s = first_team + i % kTeamsPerWarp + i / kTeamsPerWarp * n_teams;
    if (s >= n) break;
    if (dists[s] < best) {
      best = dists[s];
      best_s = s;
    }
  }
  const uint32_t key = float_key(best);
  const uint32_t kmin = __reduce_min_sync(0xFFFFFFFFu, key);
  const uint32_t holders = __ballot_sync(0xFFFFFFFFu, key == kmin && best_s != kNoId);
  if (holders != 0 && lane == static_cast<uint32_t>(__ffs(holders) - 1) && best < *likely) {
    const uint32_t id = ids[best_s];
    if (id != kNoId) prefetch_graph_row(graph, degree, id & ~kParentFlag);
  }
}

}  // namespace cagra::cuda::dev
