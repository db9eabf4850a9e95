// Searches whose labels land in device memory (cagra::search into matrix_view<int64_t> on the
// device): the search writes row ids into stream-ordered scratch memory (a pool of our own), and
// one kernel maps them to the index's labels, read from a copy of the labels kept on the device
// (state.hpp, device_labels), so that nothing goes through the host and a stream-ordered call
// stays one. Rows are the kernels' currency; labels are mapped at the edge
// (docs/living_index.md).
#include <algorithm>
#include <mutex>
#include <vector>

#include "cuda/backend.hpp"
#include "cuda/check.hpp"
#include "cuda/memory.hpp"
#include "cuda/state.hpp"

namespace cagra::cuda {
namespace {

/** out[i] = the label of row rows[i] (`labels` null: the row number itself), -1 for kInvalidId. */
__global__ void rows_to_labels(const uint32_t* __restrict__ rows,
                               const int64_t* __restrict__ labels, int64_t* __restrict__ out,
                               size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const uint32_t r = rows[i];
    out[i] = r == kInvalidId ? -1 : labels ? labels[r] : int64_t{r};
  }
}

/** The scratch rows' memory pool of `device`: a pool of our own that keeps what it reserved
 *  (release threshold: all), so that a waiting call, which synchronizes every time, does not
 *  hand its memory back to the driver and map it again on the next call, as the device's
 *  default pool (threshold 0) would; and the caller's pools are left alone. Made on first use,
 *  kept for the process. */
cudaMemPool_t scratch_pool(int device) {
  static std::mutex m;
  static std::vector<cudaMemPool_t> pools;
  std::lock_guard<std::mutex> lock(m);
  if (pools.size() <= size_t(device)) pools.resize(size_t(device) + 1, nullptr);
  cudaMemPool_t& pool = pools[size_t(device)];
  if (!pool) {
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    CAGRA_CUDA_TRY(cudaMemPoolCreate(&pool, &props));
    uint64_t keep = ~uint64_t{0};
    CAGRA_CUDA_TRY(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  }
  return pool;
}

/** Memory from scratch_pool in the caller stream's order (cudaMallocFromPoolAsync), given back
 *  on that stream when the call ends, also by an exception: work queued there before the free
 *  still reads it safely. */
class stream_scratch {
 public:
  stream_scratch(size_t bytes, int device, cudaStream_t stream) : stream_(stream) {
    CAGRA_CUDA_TRY(
        cudaMallocFromPoolAsync(&p_, std::max<size_t>(bytes, 1), scratch_pool(device), stream));
  }
  ~stream_scratch() { CAGRA_CUDA_TRY_NO_THROW(cudaFreeAsync(p_, stream_)); }
  stream_scratch(const stream_scratch&) = delete;
  stream_scratch& operator=(const stream_scratch&) = delete;
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
  cudaStream_t stream_;
};

}  // namespace

void search_into_labels(const index& idx, int device, void* stream, bool stream_ordered,
                        int64_t* labels, int64_t n,
                        const std::function<void(uint32_t*)>& search_rows) {
  device_guard guard(device);
  const cudaStream_t caller = caller_stream(stream, device);
  expect_device_memory(labels, device, "labels");
  CAGRA_EXPECTS(reinterpret_cast<uintptr_t>(labels) % alignof(int64_t) == 0,
                "labels must be 8-byte aligned device memory");
  // Allocated in the caller's stream order: the search's own stream waits for that stream before
  // it writes the rows, and the free comes after the mapping below.
  stream_scratch rows(size_t(n) * sizeof(uint32_t), device, caller);
  search_rows(static_cast<uint32_t*>(rows.get()));
  // Complete before it is returned; kept (and so alive for the queued mapping) until the labels
  // change, and then freed with cudaFree, which waits for the device.
  const std::shared_ptr<const device_labels> copy =
      idx.has_labels() ? device_label_copy(idx, device) : nullptr;
  // The rows are complete for the caller's stream: synchronized by a waiting search, ordered
  // there by a stream-ordered one.
  if (n > 0) {
    constexpr unsigned block = 256;
    const unsigned grid = unsigned(std::min<size_t>((size_t(n) + block - 1) / block, 4096));
    rows_to_labels<<<grid, block, 0, caller>>>(static_cast<const uint32_t*>(rows.get()),
                                               copy ? copy->values.data() : nullptr, labels,
                                               size_t(n));
    CAGRA_CUDA_CHECK_LAUNCH();
  }
  if (!stream_ordered) CAGRA_CUDA_TRY(cudaStreamSynchronize(caller));
}

}  // namespace cagra::cuda
