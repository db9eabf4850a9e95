// Copies an index to the device once and caches it in the index (see state.hpp). Rows are
// re-laid out with a 16-byte-aligned stride (zero padding: adds nothing to L2 or dot products)
// because the distance teams read rows only with 16-byte vector loads.
#include "cuda/state.hpp"

#include <cagra/error.hpp>

namespace cagra::cuda {
namespace {
std::mutex
    cache_mutex;  // guards idx.backend_cache() (a const index may be searched by many threads)
}

std::shared_ptr<index_state> device_index(const index& idx, int device) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto& slot = idx.backend_cache();
  if (auto cached = std::dynamic_pointer_cast<index_state>(slot);
      cached && cached->device == device)
    return cached;

  auto s = std::make_shared<index_state>();
  s->device = device;
  s->rows = idx.size();
  s->dim = idx.dim();
  s->degree = idx.graph_degree();
  s->type = idx.storage_dtype();
  const size_t row_bytes = size_t{s->dim} * dtype_size(s->type);
  s->row_stride = static_cast<uint32_t>((row_bytes + 15) / 16 * 16);
  CAGRA_EXPECTS(s->rows > 0 && s->degree > 0, "the index is empty");

  const size_t data_bytes = size_t(s->rows) * s->row_stride;
  s->dataset.reserve(data_bytes);
  if (s->row_stride != row_bytes)
    CAGRA_CUDA_TRY(cudaMemsetAsync(s->dataset.data(), 0, data_bytes, s->stream.get()));
  CAGRA_CUDA_TRY(cudaMemcpy2DAsync(s->dataset.data(), s->row_stride, idx.vectors().data(),
                                   row_bytes, row_bytes, size_t(s->rows), cudaMemcpyHostToDevice,
                                   s->stream.get()));
  const size_t graph_elems = size_t(s->rows) * s->degree;
  s->graph.reserve(graph_elems);
  CAGRA_CUDA_TRY(cudaMemcpyAsync(s->graph.data(), idx.graph().data, graph_elems * sizeof(uint32_t),
                                 cudaMemcpyHostToDevice, s->stream.get()));
  s->stream.sync();
  slot = s;
  return s;
}

}  // namespace cagra::cuda
