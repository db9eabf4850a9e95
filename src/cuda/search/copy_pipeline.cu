// The copy path of a large host batch, pipelined. What and why: a batch of host queries used to
// go up in one pageable copy, through one launch and back in one pageable copy, so the GPU sat
// idle while the host moved bytes. On SIFT-wall-1M (H100, batch 10K, itopk 32) the single-CTA
// launch took 1.02 ms of a 1.41 ms call: 0.39 ms (28%) was the copies and their staging.
//
// Here the batch goes in chunks over kSlots streams. For chunk i the host copies its queries into
// the slot's pinned staging, queues the upload, the launch and the download into pinned staging
// on the slot's stream, and moves on; before a slot is reused the host waits for its last chunk
// and copies that chunk's results out to the caller. So the host's copies of one chunk overlap
// the search of others, and the launches of neighbouring chunks overlap on the GPU (the next
// chunk's CTAs start while the last CTAs of the one before finish): only the first chunk's
// upload and the last chunk's download are exposed. Results are those of one launch: a query's
// walk depends on its bytes and the plan only.
#include "cuda/search/copy_pipeline.hpp"

#include <algorithm>
#include <cstring>

#include "cuda/check.hpp"

namespace cagra::cuda {
namespace {

constexpr int kSlots = 3;
/** Queries a chunk: a quarter of the batch, at least kMinChunk (a chunk that fills only a small
 *  part of the GPU costs a launch and a download for little work), and at most kMaxChunkBytes
 *  of queries (bounds the pinned staging: 3 slots of at most 4 MiB). */
constexpr int64_t kMinChunk = 1024;
constexpr size_t kMaxChunkBytes = size_t{4} << 20;

int64_t chunk_queries(int64_t nq, size_t query_bytes) {
  const int64_t by_bytes = std::max<int64_t>(256, int64_t(kMaxChunkBytes / query_bytes));
  return std::min(std::max((nq + 3) / 4, kMinChunk), by_bytes);
}

}  // namespace

bool use_copy_pipeline(const search_plan& plan, int64_t nq) {
  return plan.algo == search_algo::single_cta && nq >= 2 * kMinChunk;
}

void search_copy_pipelined(index_state& st, const search_plan& plan, metric m,
                           const uint8_t* queries, size_t query_bytes, int64_t nq, uint32_t* ids,
                           float* distances, int device, device_filter filter,
                           const chunk_stages* stages) {
  search_workspace& w = st.io;
  const uint32_t k = stages ? stages->out_k : plan.k;  // results a query, down
  const int64_t chunk = chunk_queries(nq, query_bytes);
  if (!w.pipeline) w.pipeline = std::make_unique<pipeline_slot[]>(kSlots);
  pipeline_slot* slots = w.pipeline.get();
  // A call that threw half way may have left copies in flight into the staging it reuses.
  for (int s = 0; s < kSlots; ++s) slots[s].stream.sync();
  // The device buffers hold the whole batch (each chunk its own part), as the one-launch path's.
  w.queries.reserve(size_t(nq) * query_bytes);
  w.ids.reserve(size_t(nq) * k);
  if (distances) w.distances.reserve(size_t(nq) * k);
  if (stages && stages->finish) w.candidates.reserve(size_t(nq) * plan.k);
  // Work already queued on the index's stream (a filter's upload, an extend's update) comes
  // first: every slot's stream waits for it.
  cuda_event before;
  for (int s = 0; s < kSlots; ++s) before.order(st.stream.get(), slots[s].stream.get());

  int64_t pending[kSlots];  // first query of the chunk a slot holds, -1: none
  std::fill(pending, pending + kSlots, int64_t{-1});
  auto collect = [&](pipeline_slot& slot, int64_t first) {  // that chunk's results, out
    CAGRA_CUDA_TRY(cudaEventSynchronize(slot.done.get()));
    const size_t n = size_t(std::min(chunk, nq - first)) * k;
    std::memcpy(ids + size_t(first) * k, slot.ids.data(), n * sizeof(uint32_t));
    if (distances)
      std::memcpy(distances + size_t(first) * k, slot.distances.data(), n * sizeof(float));
  };
  int s = 0;
  for (int64_t first = 0; first < nq; first += chunk, s = (s + 1) % kSlots) {
    pipeline_slot& slot = slots[s];
    if (pending[s] >= 0) collect(slot, pending[s]);
    const int64_t n = std::min(chunk, nq - first);
    const size_t q_bytes = size_t(n) * query_bytes, n_out = size_t(n) * k;
    slot.queries.reserve(size_t(chunk) * query_bytes);
    slot.ids.reserve(size_t(chunk) * k);
    if (distances) slot.distances.reserve(size_t(chunk) * k);
    std::memcpy(slot.queries.data(), queries + size_t(first) * query_bytes, q_bytes);
    const cudaStream_t stream = slot.stream.get();
    uint8_t* d_queries = w.queries.data() + size_t(first) * query_bytes;
    uint32_t* d_ids = w.ids.data() + size_t(first) * k;
    float* d_distances = distances ? w.distances.data() + size_t(first) * k : nullptr;
    CAGRA_CUDA_TRY(
        cudaMemcpyAsync(d_queries, slot.queries.data(), q_bytes, cudaMemcpyHostToDevice, stream));
    const device_filter part{filter.words ? filter.words + size_t(first) * filter.stride : nullptr,
                             filter.stride};
    const uint8_t* searched = stages ? stages->prepare(d_queries, first, n, stream) : d_queries;
    if (stages && stages->finish) {
      uint32_t* found = w.candidates.data() + size_t(first) * plan.k;
      run_kernels(st, plan, m, searched, n, found, nullptr, device, stream, nullptr, part);
      stages->finish(d_queries, found, first, n, d_ids, d_distances, stream);
    } else if (stages) {
      run_kernels(st, plan, m, searched, n, d_ids, d_distances, device, stream, nullptr, part);
    } else {
      run_kernels(st, plan, m, d_queries, n, d_ids, d_distances, device, stream, nullptr, part);
    }
    CAGRA_CUDA_TRY(cudaMemcpyAsync(slot.ids.data(), d_ids, n_out * sizeof(uint32_t),
                                   cudaMemcpyDeviceToHost, stream));
    if (distances)
      CAGRA_CUDA_TRY(cudaMemcpyAsync(slot.distances.data(), d_distances, n_out * sizeof(float),
                                     cudaMemcpyDeviceToHost, stream));
    CAGRA_CUDA_TRY(cudaEventRecord(slot.done.get(), stream));
    pending[s] = first;
  }
  // The last chunks, in order (the slot after the last one used holds the oldest).
  for (int i = 0; i < kSlots; ++i, s = (s + 1) % kSlots)
    if (pending[s] >= 0) collect(slots[s], pending[s]);
}

}  // namespace cagra::cuda
