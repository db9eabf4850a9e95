// Plan -> kernel argument blocks (launch_args.hpp).
#include "cuda/search/launch_args.hpp"

#include <algorithm>

#include <cuda_runtime_api.h>

#include "core/bits.hpp"
#include "cuda/backend.hpp"
#include "cuda/check.hpp"

namespace cagra::cuda {
namespace {

using bits::next_pow2;

uint32_t align16(uint32_t x) { return (x + 15u) & ~15u; }

/** Bytes of device workspace (hash + per-CTA lists) one multi-CTA launch may use: larger
 *  batches are split into launches of as many queries as fit (at least one). The hash is kept
 *  twice (two halves, see multi_cta.cuh), so the workspace is about twice this. */
constexpr size_t kMultiCtaWorkspace = size_t{128} << 20;

/** Shared memory of the query in its distance layout: bytes as they are (dp4a), float rows as
 *  float (one float per element). */
uint32_t query_smem(const index_state& st) {
  const size_t elem = dtype_size(st.type);
  const uint32_t n_chunks = st.row_stride / 16;
  return elem == 1 ? n_chunks * 16 : n_chunks * static_cast<uint32_t>(16 / elem) * 4;
}
uint32_t query_bytes(const index_state& st) {
  return st.dim * static_cast<uint32_t>(dtype_size(query_dtype_for(st.type)));
}

/** The fields both kernels' argument blocks share, from the device index and the plan. */
template <typename Args>
void set_common(Args& a, const index_state& st, const search_plan& plan, metric m) {
  a.n_rows = static_cast<uint64_t>(st.rows);
  a.seed = plan.seed;
  a.dim = st.dim;
  a.row_stride = st.row_stride;
  a.n_chunks = st.row_stride / 16;
  a.degree = st.degree;
  a.k = plan.k;
  a.max_iterations = plan.max_iterations;
  a.min_iterations = plan.min_iterations;
  a.hash_bits = plan.hash_bits;
  a.metric = m;
}

}  // namespace

single_cta_launch make_single_cta_launch(const index_state& st, const search_plan& plan, metric m) {
  single_cta_launch lp;
  single_cta_args& a = lp.args;
  set_common(a, st, plan, m);
  a.itopk = plan.itopk;
  a.itopk_p2 = next_pow2(plan.itopk);
  a.width = plan.search_width;
  a.n_cand = plan.search_width * st.degree;
  a.cand_p2 = next_pow2(a.n_cand);
  a.n_init = plan.initial_nodes;  // the CPU's draws, so results stay bit-identical
  a.init_p2 = next_pow2(a.n_init);
  a.reset_interval = plan.hash_reset_interval;
  lp.team = plan.team_size;
  lp.block = plan.block_size;

  const uint32_t list = a.itopk_p2 + std::max(a.cand_p2, a.init_p2);
  a.smem_query = 0;
  a.smem_dist = align16(query_smem(st));
  a.smem_ids = a.smem_dist + align16(list * 4);
  a.smem_hash = a.smem_ids + align16(list * 4);
  lp.smem = a.smem_hash + std::max<size_t>(size_t{4} << a.hash_bits, align16(query_bytes(st)));
  return lp;
}

multi_cta_launch make_multi_cta_launch(const index_state& st, const search_plan& plan, metric m) {
  multi_cta_launch lp;
  multi_cta_args& a = lp.args;
  set_common(a, st, plan, m);
  a.n_ctas = plan.ctas_per_query;
  a.n_init = plan.initial_nodes;
  // Each candidate buffer takes a parent's neighbors, the random initial nodes or the pool's
  // kMultiCtaList picks (pool_claim): below degree 32 the picks would run into the other
  // buffer, which iteration 0's claims fill.
  a.cand_cap = std::max({st.degree, a.n_init, plan.pool_rows_per_cta ? kMultiCtaList : 0u});
  a.list_k = std::min(plan.k, kMultiCtaList);
  a.merge_p2 = std::max(32u, next_pow2(a.n_ctas * kMultiCtaList));
  lp.team = plan.team_size;
  lp.block = plan.block_size;

  a.smem_query = 0;
  a.smem_raw = align16(query_smem(st));
  a.smem_cand_d = a.smem_raw + align16(query_bytes(st));
  a.smem_cand_i = a.smem_cand_d + align16(2 * a.cand_cap * 4);
  // The merge's sort reuses the raw query and the candidates once the search is over.
  a.smem_merge = a.smem_raw;
  lp.smem = std::max<size_t>(a.smem_cand_i + align16(2 * a.cand_cap * 4),
                             a.smem_merge + size_t{a.merge_p2} * 8);
  // The latency path (the host merges): half teams for the initial nodes where the rows allow
  // (core/plan.hpp; plan_kernels.cpp sizes the CTA for them).
  a.init_half_team = core::gpu::host_merges(plan.io) &&
                     core::gpu::multi_cta_half_init_team(plan.team_size, a.n_chunks);

  const size_t per_query = (size_t{4} << a.hash_bits) + size_t{a.n_ctas} * kMultiCtaList * 8;
  lp.chunk = static_cast<uint32_t>(std::clamp<size_t>(kMultiCtaWorkspace / per_query, 1, 65535));
  return lp;
}

void check_shared_memory(size_t smem, int device, const char* kernel, const search_plan& plan) {
  const int limit = smem_per_block_optin(device);
  CAGRA_EXPECTS(
      smem + 512 <= size_t(limit),
      "the %s search needs %zu bytes of shared memory per CTA (itopk %u, search_width %u, "
      "initial nodes %u, hash 2^%u), more than the device's %d",
      kernel, smem, plan.itopk, plan.search_width, plan.initial_nodes, plan.hash_bits, limit);
}

}  // namespace cagra::cuda
