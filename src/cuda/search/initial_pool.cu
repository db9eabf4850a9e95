// The device copy of the initial-node pool (core/initial_pool.hpp): the pool's row ids and a
// compact copy of their rows, gathered from the index's device rows when a plan first takes the
// pool (search_plan::pool_rows_per_cta) and again when the row count or the pool's size changed;
// CTA c's slice is rows [c x rows_per_cta, (c + 1) x rows_per_cta), which the persistent kernel
// copies into shared memory once.
#include "cuda/search/initial_pool.hpp"

#include <vector>

#include "core/initial_pool.hpp"
#include "cuda/check.hpp"

namespace cagra::cuda {
namespace {

/** Pool row g = ids[g] with its chunks rotated: chunk c at (c + s) mod chunks, s = g's row in
 *  its CTA's slice (the scan's layout: multi_cta_steps.cuh, pool_chunk_at). */
__global__ void gather_pool_kernel(const uint4* rows, uint32_t chunks, const uint32_t* ids,
                                   uint32_t n, uint32_t rows_per_cta, uint4* out) {
  const uint64_t total = uint64_t{n} * chunks;
  for (uint64_t i = uint64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total;
       i += uint64_t{gridDim.x} * blockDim.x) {
    const uint64_t g = i / chunks;
    const uint32_t c = static_cast<uint32_t>(i % chunks);
    const uint32_t p = (c + static_cast<uint32_t>(g % rows_per_cta % chunks)) % chunks;
    out[g * chunks + p] = rows[uint64_t{ids[g]} * chunks + c];
  }
}

}  // namespace

bool initial_pool_current(const index_state& st, uint32_t rows_per_cta, uint32_t n_ctas) {
  return st.pool_rows_of == st.rows && st.pool_ids.size() == size_t{rows_per_cta} * n_ctas;
}

void use_initial_pool(index_state& st, multi_cta_launch& lp, uint32_t rows_per_cta,
                      cudaStream_t stream) {
  multi_cta_args& a = lp.args;
  const uint32_t p = rows_per_cta * a.n_ctas;
  if (!initial_pool_current(st, rows_per_cta, a.n_ctas)) {
    const std::vector<uint32_t> ids = core::initial_pool_rows(uint64_t(st.rows), p);
    st.pool_rows_of = -1;  // until both buffers hold the new pool
    st.pool_ids = device_buffer<uint32_t>(p);
    st.pool_vectors = device_buffer<uint8_t>(size_t{p} * st.row_stride);
    CAGRA_CUDA_TRY(cudaMemcpyAsync(st.pool_ids.data(), ids.data(), size_t{p} * 4,
                                   cudaMemcpyHostToDevice, stream));
    const uint32_t chunks = st.row_stride / 16;
    gather_pool_kernel<<<1024, 256, 0, stream>>>(reinterpret_cast<const uint4*>(st.dataset.data()),
                                                 chunks, st.pool_ids.data(), p, rows_per_cta,
                                                 reinterpret_cast<uint4*>(st.pool_vectors.data()));
    CAGRA_CUDA_CHECK_LAUNCH();
    CAGRA_CUDA_TRY(cudaStreamSynchronize(stream));  // ids: a host vector about to go
    st.pool_rows_of = st.rows;
  }
  a.d_pool_vectors = st.pool_vectors.data();
  a.d_pool_ids = st.pool_ids.data();
  a.pool_rows_per_cta = rows_per_cta;
  // After the candidate buffers, over the last CTA's merge region, which the latency path never
  // uses (the host merges the lists): with a slice of kPoolSliceBytes two CTAs fit an SM
  // (core/initial_pool.hpp).
  a.smem_pool = a.smem_cand_i + (2 * a.cand_cap * 4 + 15) / 16 * 16;
  lp.smem = a.smem_pool + size_t{rows_per_cta} * (st.row_stride + core::kPoolRowExtraBytes);
}

}  // namespace cagra::cuda
