#include "cuda/host_upload.hpp"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <cagra/error.hpp>

#include "cuda/check.hpp"
#include "cuda/memory.hpp"

namespace cagra::cuda {
namespace {

constexpr size_t kChunkBytes = size_t{8} << 20;  // one pinned chunk
// Below this the staging costs more than it saves.
constexpr size_t kDirectBytes = size_t{32} << 20;
constexpr int kMaxThreads = 8;  // enough to outrun a PCIe 5 x16 link

}  // namespace

void upload_rows(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                 size_t rows, cudaStream_t stream) {
  if (rows == 0 || width == 0) return;
  auto* out = static_cast<uint8_t*>(dst);
  const auto* in = static_cast<const uint8_t*>(src);
  const auto direct = [&] {
    CAGRA_CUDA_TRY(cudaMemcpy2DAsync(out, dst_pitch, in, src_pitch, width, rows,
                                     cudaMemcpyHostToDevice, stream));
    CAGRA_CUDA_TRY(cudaStreamSynchronize(stream));
  };
  if (width * rows < kDirectBytes) return direct();
  const size_t chunk_rows = std::max<size_t>(1, kChunkBytes / width);
  pinned_buffer<uint8_t> chunk[2];
  cuda_event copied[2];
  try {
    for (auto& c : chunk) c.reserve(chunk_rows * width);
  } catch (const error&) {  // no page-locked memory to be had (a locked-memory limit): copy plainly
    return direct();
  }
  const int threads = std::max(1, std::min(kMaxThreads, omp_get_max_threads()));
  for (size_t r0 = 0, i = 0; r0 < rows; r0 += chunk_rows, ++i) {
    const size_t nr = std::min(chunk_rows, rows - r0), b = i & 1;
    // The chunk's last copy (two chunks ago) must be done before it is filled again.
    if (i >= 2) CAGRA_CUDA_TRY(cudaEventSynchronize(copied[b].get()));
    uint8_t* to = chunk[b].data();
    const uint8_t* from = in + r0 * src_pitch;
    if (src_pitch == width) {  // one block: threads take equal parts of it
      const size_t bytes = nr * width, part = (bytes + threads - 1) / threads;
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int t = 0; t < threads; ++t) {
        const size_t lo = std::min(bytes, size_t(t) * part), hi = std::min(bytes, lo + part);
        if (hi > lo) std::memcpy(to + lo, from + lo, hi - lo);
      }
    } else {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t r = 0; r < int64_t(nr); ++r)
        std::memcpy(to + size_t(r) * width, from + size_t(r) * src_pitch, width);
    }
    CAGRA_CUDA_TRY(cudaMemcpy2DAsync(out + r0 * dst_pitch, dst_pitch, to, width, width, nr,
                                     cudaMemcpyHostToDevice, stream));
    CAGRA_CUDA_TRY(cudaEventRecord(copied[b].get(), stream));
  }
  CAGRA_CUDA_TRY(cudaStreamSynchronize(stream));
}

}  // namespace cagra::cuda
