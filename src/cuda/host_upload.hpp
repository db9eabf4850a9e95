// Host rows to device memory faster than a pageable copy. cudaMemcpy from pageable host memory
// moved 6.4-8.2 GB/s on an H200 host (the driver stages it through its own small pinned
// buffers): 62-80 ms for a 1M x 128 f32 set, ~0.2 s at 384-d, a tenth of a GPU build. Here
// host threads copy the rows into two pinned chunks in turn while the DMA engine takes the other
// one, so the copy runs at the host's memcpy rate or the link's, whichever is lower.
#pragma once

#include <cstddef>

#include <cuda_runtime_api.h>

namespace cagra::cuda {

/** Copies `rows` rows of `width` bytes from host memory (`src`, `src_pitch` bytes apart; pageable
 *  is fine) to device memory (`dst`, `dst_pitch` apart) on `stream`, and waits for it: on return
 *  the copy is done and `src` may be freed. Small copies, and any copy when page-locked memory
 *  cannot be had, go straight through cudaMemcpy2DAsync. */
void upload_rows(void* dst, size_t dst_pitch, const void* src, size_t src_pitch, size_t width,
                 size_t rows, cudaStream_t stream);

}  // namespace cagra::cuda
