// Queries that are already in device memory (cuda::search_device): the device-side twin of
// core::queries_for for what needs no host round trip. One launch checks every row (NaN/Inf for
// float inputs; all-zero rows for cosine) and, when `out` is given, writes the rows as f32,
// normalized for cosine, with the host's arithmetic step for step (the squared norm summed in
// double in column order, 1 / sqrt in double, rounded to float, one float multiply), so device
// queries give the same bits as host queries.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include <cagra/types.hpp>

#include "cuda/search/workspace.hpp"

namespace cagra::cuda {

/** `in`: [rows, cols] of type `in_type` (f32, f16, u8, i8) in device memory; `out`: [rows, cols]
 *  f32 or null (check only); `flags`: two device words, set to ~0 here, that receive the first
 *  row holding NaN/Inf ([0]) and, with `normalize`, the first all-zero row ([1]); `row_bad`
 *  (device [rows] or null): 1 for each such row, else 0. */
void launch_prepare_queries(const void* in, dtype in_type, int64_t rows, uint32_t cols, float* out,
                            bool normalize, unsigned long long* flags, cudaStream_t stream,
                            uint8_t* row_bad = nullptr);

/** A stream-ordered search's answer for the rows that launch_prepare_queries marked bad: each of
 *  their k slots in the [rows, k] results becomes kInvalidId and NaN (`distances` may be null). */
void launch_blank_bad_rows(const uint8_t* row_bad, int64_t rows, uint32_t k, uint32_t* ids,
                           float* distances, cudaStream_t stream);

/** The copy pipeline's first stage for the caller's cosine rows (search_plan::
 *  normalize_on_device): each chunk's f32 rows are checked and normalized into w.prepared by
 *  launch_prepare_queries; check() throws for the first bad row (numbered in the batch) once the
 *  batch is done. */
class device_normalize {
 public:
  device_normalize(search_workspace& w, uint32_t dim, int64_t nq);
  /** Queues chunk [first, first + n)'s rows (device f32) and returns where they land. */
  const float* operator()(const uint8_t* rows, int64_t first, int64_t n, cudaStream_t s);
  void check() const;

 private:
  search_workspace& w_;
  uint32_t dim_;
  std::vector<int64_t> firsts_;
};

}  // namespace cagra::cuda
