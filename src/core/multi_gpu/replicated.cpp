// A replicated search: one cagra::index, a copy of it on each of several GPUs, and the batch
// spread over them. The layer calls the single-device search once per device with `res` narrowed
// to that device; each device caches its own copy of the index (the CUDA backend keeps one copy
// per device in the index's backend cache), so the copies are made on first use and kept.
//
// Which devices a call uses depends on what other callers are doing:
//  - a lone call (no other replicated search in flight in the process) of at least
//    kReplicaMinSlice queries per device splits into contiguous slices, one per idle device,
//    searched in parallel host threads: the lowest latency for one caller;
//  - otherwise, and for smaller batches, the batch goes whole to the device with the fewest
//    calls in flight (ties in turn). Concurrent callers thus each get a whole device: a device
//    runs a whole batch more efficiently than a slice of it (one H100 searches a 2,500-query
//    call at about 65% of its 10K-query rate), so a server with several callers gets the sum of
//    its GPUs' whole-batch rates. Splitting whenever devices happened to be idle was tried
//    first: with 4 callers on 2 GPUs a split call holds both devices, both then finish at once,
//    and the next call finds both idle and splits again (1.42x one GPU at itopk 32, 1.96x at 64
//    and 128; SIFT-wall-1M, 4 H100s, 2d13c52). cuVS makes users choose between the two modes
//    (LOAD_BALANCER or ROUND_ROBIN).
// Each slice's or batch's results are exactly the single-device results of those queries.
#include <algorithm>
#include <array>
#include <atomic>
#include <thread>

#include "core/backend.hpp"
#include "core/multi_gpu/multi_gpu.hpp"

namespace cagra::core {
namespace {

std::atomic<uint64_t> next_replica{0};  // where the scans of the devices start, in turn
std::atomic<int> replicated_calls{0};   // replicated searches in flight in the process
std::array<std::atomic<int>, 256> calls_in_flight{};  // per device ordinal (mod 256)

std::atomic<int>& in_flight(int device) { return calls_in_flight[size_t(device) % 256]; }

/** The devices a call holds: counted in flight until it ends (also by an exception). */
class device_claim {
 public:
  device_claim() = default;
  device_claim(const device_claim&) = delete;
  device_claim& operator=(const device_claim&) = delete;
  ~device_claim() {
    for (int d : held_) in_flight(d).fetch_sub(1);
  }
  /** Takes `d` only if no call is in flight there. */
  bool take_idle(int d) {
    int zero = 0;
    if (!in_flight(d).compare_exchange_strong(zero, 1)) return false;
    held_.push_back(d);
    return true;
  }
  void take(int d) {
    in_flight(d).fetch_add(1);
    held_.push_back(d);
  }
  const std::vector<int>& devices() const { return held_; }

 private:
  std::vector<int> held_;
};

}  // namespace

void search_replicated(const resources& res, const std::vector<int>& devices,
                       const search_params& params, const index& idx, dataset_view queries,
                       uint32_t k, matrix_view<uint32_t> neighbors, matrix_view<float> distances,
                       const row_filter& filter) {
  const int64_t nq = queries.rows;
  const size_t n_dev = devices.size();
  const size_t max_slices = size_t(std::min<int64_t>(int64_t(n_dev), nq / kReplicaMinSlice));
  const size_t start = size_t(next_replica.fetch_add(1) % n_dev);
  const bool lone = replicated_calls.fetch_add(1) == 0;
  struct leave_call {
    ~leave_call() { replicated_calls.fetch_sub(1); }
  } leave;
  device_claim claim;
  if (max_slices >= 2 && lone)
    for (size_t i = 0; i < n_dev && claim.devices().size() < max_slices; ++i)
      claim.take_idle(devices[(start + i) % n_dev]);
  if (claim.devices().empty()) {  // other callers, or a small batch: the least busy device
    int best = devices[start];
    for (size_t i = 1; i < n_dev; ++i) {
      const int d = devices[(start + i) % n_dev];
      if (in_flight(d).load() < in_flight(best).load()) best = d;
    }
    claim.take(best);
  }
  const int threads = host_threads(res.num_threads);
  const std::vector<int>& use = claim.devices();
  const size_t slices = use.size();
  if (slices == 1) {
    search(single_device(res, use[0], threads), params, idx, queries, k, neighbors, distances,
           filter);
    return;
  }
  const int per_slice = std::max(1, threads / int(slices));
  run_tasks(slices, true, [&](size_t s) {
    const int64_t first = nq * int64_t(s) / int64_t(slices),
                  last = nq * int64_t(s + 1) / int64_t(slices);
    const int64_t count = last - first;
    dataset_view q = queries;
    q.data = static_cast<const uint8_t*>(queries.data) + size_t(first) * queries.row_bytes();
    q.rows = count;
    matrix_view<uint32_t> ids{neighbors.row(first), count, neighbors.cols, neighbors.space};
    matrix_view<float> dist = distances;
    if (distances.data) dist = {distances.row(first), count, distances.cols, distances.space};
    search(single_device(res, use[s], per_slice), params, idx, q, k, ids, dist,
           slice_queries(filter, first, count));
  });
}

}  // namespace cagra::core
