// The CPU backend behind the backend interface (core/backend.hpp): each call forwards to the
// stage in this folder with the thread count and progress callback of `resources`.
#include "cpu/backend.hpp"

#include <type_traits>
#include <vector>

#include "cpu/distance.hpp"

namespace cagra::cpu {
namespace {

class cpu_ops final : public core::backend_ops {
 public:
  backend kind() const override { return backend::cpu; }
  int device_count() const override { return 1; }
  const char* unavailable_reason() const override { return ""; }
  int sm_count(int) const override { return 0; }
  uint64_t free_device_memory(int) const override { return 0; }
  std::string describe(int) const override { return "CPU"; }

  knn_graph brute_force(const host_matrix& data, const host_matrix& queries, metric m, uint32_t k,
                        bool exclude_self, const resources& res) const override {
    return cpu::brute_force(data, queries, m, k, exclude_self, res.num_threads, res.progress);
  }
  uint32_t brute_force_max_k() const override { return UINT32_MAX; }
  knn_graph nn_descent(const host_matrix& data, metric m, uint32_t k, const knn_graph_params& p,
                       uint64_t seed, const resources& res,
                       uint32_t* iterations_run) const override {
    return cpu::nn_descent(data, m, k, p, seed, res.num_threads, res.progress, iterations_run);
  }
  std::vector<uint32_t> optimize(const knn_graph& knn, uint32_t degree, reorder_kind reorder,
                                 optimize_steps steps, const resources& res) const override {
    return cpu::optimize(knn, degree, reorder, steps, res.num_threads, res.progress);
  }
  void search(const index& idx, dataset_view queries, const search_plan& plan,
              const row_filter& filter, uint32_t* ids, float* distances, const resources& res,
              search_stats* stats) const override {
    if (plan.filter_path == filter_algo::exact)
      cpu::exact_search(idx, queries, plan, filter, ids, distances, res.num_threads);
    else if (plan.algo == search_algo::multi_cta)
      cpu::parallel_walk_search(idx, queries, plan, filter, ids, distances, res.num_threads, stats);
    else
      cpu::search(idx, queries, plan, filter, ids, distances, res.num_threads, stats);
  }
  void rerank(const index& idx, dataset_view queries, const uint32_t* candidates,
              uint32_t n_candidates, uint32_t k, uint32_t* ids, float* distances,
              const resources& res) const override {
    cpu::rerank(idx, queries, candidates, n_candidates, k, ids, distances, res.num_threads);
  }
  void search_device(const index&, dataset_view, const search_plan&, const row_filter&, uint32_t*,
                     float*, const resources&) const override {
    CAGRA_FAIL("the CPU backend does not search device memory");
  }
  void index_changed(const index&, int64_t, const std::vector<uint32_t>&, int) const override {}
};

}  // namespace
}  // namespace cagra::cpu

namespace cagra::core {

const backend_ops& cpu_backend() {
  static const cpu::cpu_ops ops;
  return ops;
}

void fill_knn_distances(const host_matrix& data, metric m, knn_graph& knn) {
  const float* x = static_cast<const float*>(data.data());
  const cpu::distance<float> dist{m, static_cast<size_t>(data.cols())};
  knn.distances.resize(knn.ids.size());
  for (int64_t i = 0; i < knn.rows; ++i)
    for (uint32_t j = 0; j < knn.k; ++j) {
      const uint32_t id = knn.ids[i * knn.k + j];
      CAGRA_EXPECTS(id < data.rows(), "kNN graph row %lld holds id %u >= %lld", (long long)i, id,
                    (long long)data.rows());
      knn.distances[i * knn.k + j] = dist(x + i * data.cols(), x + int64_t{id} * data.cols());
    }
}

void row_distances(const host_matrix& data, metric m, uint32_t x, const uint32_t* ids, size_t n,
                   float* out) {
  cpu::dispatch_storage(data.type(), [&](auto tag) {
    using T = decltype(tag);
    const size_t dim = static_cast<size_t>(data.cols());
    const T* rows = static_cast<const T*>(data.data());
    const cpu::distance<T> dist{m, dim};
    std::vector<cpu::query_t<T>> q(dim);  // the row as a query (f16 rows are compared in f32)
    for (size_t j = 0; j < dim; ++j) {
      if constexpr (std::is_same_v<T, half>)
        q[j] = cpu::half_to_float(rows[size_t(x) * dim + j]);
      else
        q[j] = rows[size_t(x) * dim + j];
    }
    for (size_t i = 0; i < n; ++i) out[i] = dist(q.data(), rows + size_t(ids[i]) * dim);
  });
}

}  // namespace cagra::core
