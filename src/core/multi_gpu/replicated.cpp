// A replicated search: one cagra::index, a copy of it on each of several GPUs, and the batch
// spread over them. The layer calls the single-device search once per device with `res` narrowed
// to that device; each device caches its own copy of the index (the CUDA backend keeps one copy
// per device in the index's backend cache), so the copies are made on first use and kept.
//
// Large batches split into contiguous slices, one per device, searched in parallel host threads:
// the results are exactly the single-device results of each slice. Batches too small to keep
// several GPUs busy (fewer than kReplicaMinSlice queries per device) go whole to the next device
// in turn, so that concurrent callers at batch 1 spread over the GPUs instead of queueing on one.
#include <algorithm>
#include <atomic>
#include <thread>

#include "core/backend.hpp"
#include "core/multi_gpu/multi_gpu.hpp"

namespace cagra::core {
namespace {
std::atomic<uint64_t> next_replica{0};  // round robin over the devices of small batches
}  // namespace

void search_replicated(const resources& res, const std::vector<int>& devices,
                       const search_params& params, const index& idx, dataset_view queries,
                       uint32_t k, matrix_view<uint32_t> neighbors, matrix_view<float> distances,
                       const row_filter& filter) {
  const int64_t nq = queries.rows;
  const int64_t n_dev = int64_t(devices.size());
  const int64_t slices = std::min(n_dev, nq / kReplicaMinSlice);
  const int threads = host_threads(res.num_threads);
  if (slices <= 1) {
    const int device = devices[size_t(next_replica.fetch_add(1) % uint64_t(n_dev))];
    search(single_device(res, device, threads), params, idx, queries, k, neighbors, distances,
           filter);
    return;
  }
  const int per_slice = std::max(1, threads / int(slices));
  run_tasks(size_t(slices), true, [&](size_t s) {
    const int64_t first = nq * int64_t(s) / slices, last = nq * int64_t(s + 1) / slices;
    const int64_t count = last - first;
    dataset_view q = queries;
    q.data = static_cast<const uint8_t*>(queries.data) + size_t(first) * queries.row_bytes();
    q.rows = count;
    matrix_view<uint32_t> ids{neighbors.row(first), count, neighbors.cols, neighbors.space};
    matrix_view<float> dist = distances;
    if (distances.data) dist = {distances.row(first), count, distances.cols, distances.space};
    search(single_device(res, devices[s], per_slice), params, idx, q, k, ids, dist,
           slice_queries(filter, first, count));
  });
}

}  // namespace cagra::core
