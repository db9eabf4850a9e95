// cuda::upload_rows: host rows to device memory through pinned chunks. Every byte arrives, in
// its row, for pitched and packed rows, a row count that leaves a partial last chunk, rows wider
// than a chunk, and the small copies that go straight through; the destination's padding past
// each row is left as it was. Needs a GPU: label `cuda`.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/host_upload.hpp"

namespace cagra::test {
namespace {

/** Uploads rows x width bytes (src rows src_pitch apart) to rows dst_pitch apart and checks every
 *  destination byte: the row's bytes, or the 0xA5 fill past the row's width. */
void check_upload(size_t rows, size_t width, size_t src_pitch, size_t dst_pitch) {
  SCOPED_TRACE(testing::Message() << rows << " rows of " << width << " bytes, pitches " << src_pitch
                                  << " / " << dst_pitch);
  std::vector<uint8_t> src(rows * src_pitch);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t((i * 2654435761u) >> 13);
  void* dst = nullptr;
  ASSERT_EQ(cudaMalloc(&dst, rows * dst_pitch), cudaSuccess);
  ASSERT_EQ(cudaMemset(dst, 0xA5, rows * dst_pitch), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  cuda::upload_rows(dst, dst_pitch, src.data(), src_pitch, width, rows, stream);
  std::vector<uint8_t> back(rows * dst_pitch);
  ASSERT_EQ(cudaMemcpy(back.data(), dst, back.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  size_t bad = 0, first_bad = 0;
  for (size_t r = 0; r < rows; ++r)
    for (size_t b = 0; b < dst_pitch; ++b) {
      const uint8_t want = b < width ? src[r * src_pitch + b] : uint8_t(0xA5);
      if (back[r * dst_pitch + b] != want && bad++ == 0) first_bad = r * dst_pitch + b;
    }
  EXPECT_EQ(bad, 0u) << "first wrong byte at " << first_bad;
  cudaStreamDestroy(stream);
  cudaFree(dst);
}

TEST(CudaHostUpload, EveryByteArrivesInItsRow) {
  check_upload(300001, 384, 384, 384);  // 115 MB packed: 14 chunks, the last one partial
  check_upload(200003, 500, 512, 512);  // pitched source and destination, rows not 16-aligned
  check_upload(100000, 500, 500, 512);  // packed source, padded destination (the build's case)
  check_upload(5, 20 << 20, 20 << 20, (20 << 20) + 16);            // rows wider than a chunk
  check_upload(1000, 128, 128, 144);                               // small: the direct copy
  cuda::upload_rows(nullptr, 128, nullptr, 128, 128, 0, nullptr);  // nothing to copy
}

}  // namespace
}  // namespace cagra::test
