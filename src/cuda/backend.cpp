// The CUDA backend behind the backend interface (core/backend.hpp): each call forwards to the
// stage in this folder on the device `resources` names. Plain C++: the kernels sit below.
#include "cuda/backend.hpp"

#include "core/int8_traversal.hpp"

#include <algorithm>
#include <chrono>
#include <future>

#include "cuda/graph/device_lists.hpp"
#include "cuda/graph/nn_descent.hpp"
#include "cuda/graph/optimize.hpp"
#include "cuda/multi_gpu/device_shards.hpp"

namespace cagra::cuda {
namespace {

class cuda_ops final : public core::backend_ops {
 public:
  backend kind() const override { return backend::cuda; }
  int device_count() const override { return cuda::device_count(); }
  const char* unavailable_reason() const override { return "no CUDA device is visible"; }
  int sm_count(int device) const override { return cuda::sm_count(device); }
  std::string describe(int device) const override { return cuda::describe(cuda_info(device)); }
  uint64_t free_device_memory(int device) const override { return cuda::free_memory(device); }

  knn_graph brute_force(const host_matrix& data, const host_matrix& queries, metric m, uint32_t k,
                        bool exclude_self, const resources& res) const override {
    return cuda::brute_force(data, queries, m, k, exclude_self, res.device);
  }
  uint32_t brute_force_max_k() const override { return cuda::brute_force_max_k(); }
  knn_graph nn_descent(const host_matrix& data, metric m, uint32_t k, const knn_graph_params& p,
                       uint64_t seed, const resources& res,
                       uint32_t* iterations_run) const override {
    return cuda::nn_descent(data, m, k, p, seed, res.device, res.progress, iterations_run);
  }
  std::vector<uint32_t> optimize(const knn_graph& knn, uint32_t degree, reorder_kind reorder,
                                 core::optimize_steps steps, const resources& res) const override {
    return cuda::optimize(knn, degree, reorder, steps, res.device, res.progress);
  }
  std::vector<uint32_t> nn_descent_graph(const host_matrix& data, metric m, uint32_t k,
                                         const knn_graph_params& p, uint64_t seed, uint32_t degree,
                                         reorder_kind reorder, const resources& res,
                                         core::graph_stage_times* times) const override {
    // The lists stay on the device between the stages (cuda/graph/device_lists.hpp); the host
    // allocates the result (n x degree, faulted in) on a second thread while NN-descent runs.
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    core::graph_stage_times t;
    const size_t nd = size_t(data.rows()) * degree;
    auto result = std::async(std::launch::async, [nd] { return std::vector<uint32_t>(nd); });
    device_lists lists = nn_descent_lists(data, m, k, p, seed, res.device, res.progress,
                                          &t.iterations, reorder == reorder_kind::distance);
    const auto t1 = clock::now();
    std::vector<uint32_t> graph = optimize_lists(std::move(lists), degree, reorder, {}, res.device,
                                                 res.progress, result.get());
    t.knn_seconds = std::chrono::duration<double>(t1 - t0).count();
    t.optimize_seconds = std::chrono::duration<double>(clock::now() - t1).count();
    if (times) *times = t;
    return graph;
  }
  void search(const index& idx, dataset_view queries, const search_plan& plan,
              const row_filter& filter, uint32_t* ids, float* distances, const resources& res,
              core::search_stats*) const override {
    if (plan.filter_path == filter_algo::exact)
      cuda::exact_search(idx, queries, plan, filter, ids, distances, res.device);
    else
      cuda::search(idx, queries, plan, filter, ids, distances, res.device);
  }
  void index_changed(const index& idx, int64_t old_rows, const std::vector<uint32_t>& changed,
                     int threads) const override {
    const uint32_t d = idx.graph_degree();
    const uint32_t* graph = idx.graph().data;
    // The rewritten rows, gathered into the upload's (pinned) staging by every thread.
    cuda::update_device_index(idx, old_rows, changed, [&](uint32_t* out) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t i = 0; i < int64_t(changed.size()); ++i)
        std::copy_n(graph + size_t(changed[size_t(i)]) * d, d, out + size_t(i) * d);
    });
  }
  void rerank(const index& idx, dataset_view queries, const uint32_t* candidates,
              uint32_t n_candidates, uint32_t k, uint32_t* ids, float* distances,
              const resources& res) const override {
    cuda::rerank(idx, queries, candidates, n_candidates, k, ids, distances, res.device);
  }
  bool normalizes_on_device(const search_plan& plan, int64_t nq) const override {
    return cuda::normalizes_on_device(plan, nq);
  }
  void search_int8(const index& idx, const core::int8_copy& copy, dataset_view queries,
                   const search_plan& plan, const row_filter& filter, uint32_t* ids,
                   float* distances, const resources& res) const override {
    // A large batch stays on the device. A small one's candidates come back to the host
    // anyway: they are re-ranked there, from the host's rows (a round trip to the GPU's costs
    // more than a few dozen rows' distances: MiniLM-1M, H100, batch 1: 12-15K QPS against ...).
    if (queries.space == memory_space::device)
      cuda::search_device(idx, queries, plan, filter, ids, distances, res.device, res.cuda_stream,
                          res.stream_ordered, &copy);
    else if (cuda::int8_on_device(plan, queries.rows))
      cuda::search_int8(idx, copy, queries, plan, filter, ids, distances, res.device);
    else
      core::search_int8_steps(*this, core::cpu_backend(), idx, copy, queries, plan, filter, ids,
                              distances, res);
  }
  void search_device(const index& idx, dataset_view queries, const search_plan& plan,
                     const row_filter& filter, uint32_t* ids, float* distances,
                     const resources& res) const override {
    cuda::search_device(idx, queries, plan, filter, ids, distances, res.device, res.cuda_stream,
                        res.stream_ordered);
  }
  void search_into_labels(const index& idx, const resources& res, int device, int64_t* labels,
                          int64_t n,
                          const std::function<void(uint32_t*)>& search_rows) const override {
    cuda::search_into_labels(idx, device, res.cuda_stream, res.stream_ordered, labels, n,
                             search_rows);
  }
  void search_shards_on_devices(const core::device_shard_search& job) const override {
    cuda::search_shards_on_devices(job);
  }
};

}  // namespace
}  // namespace cagra::cuda

namespace cagra::core {
const backend_ops& cuda_backend() {
  static const cuda::cuda_ops ops;
  return ops;
}
}  // namespace cagra::core
