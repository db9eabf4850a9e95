// The device copy of the initial-node pool (initial_pool.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/search/launch_args.hpp"  // multi_cta_launch
#include "cuda/state.hpp"

namespace cagra::cuda {

/** True when st's pool is the one of `rows_per_cta` x n_ctas rows of the index as it is. */
bool initial_pool_current(const index_state& st, uint32_t rows_per_cta, uint32_t n_ctas);

/** Makes st's pool that of rows_per_cta x lp's CTAs (on `stream`, a no-op when it is) and gives
 *  the launch its slices: the pointers, the shared memory for a slice (after the candidates, in
 *  place of the merge region: the launch must be one whose host merges the lists; its plan has
 *  no random initial nodes). The caller holds st.workspace_mutex,
 *  and no kernel that reads the pool runs while it is remade (the persistent kernel). */
void use_initial_pool(index_state& st, multi_cta_launch& lp, uint32_t rows_per_cta,
                      cudaStream_t stream);

}  // namespace cagra::cuda
