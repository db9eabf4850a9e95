// The CUDA backend of a build without CUDA (CMake links this file when it finds no nvcc, or
// CAGRA_CUDA=OFF): it sees no device, and every call says the build lacks the backend.
#include "core/backend.hpp"

namespace cagra::core {
namespace {

[[noreturn]] void no_cuda() {
  CAGRA_FAIL(
      "this build has no CUDA backend (configure with -DCAGRA_CUDA=ON on a machine with nvcc)");
}

class no_cuda_ops final : public backend_ops {
 public:
  backend kind() const override { return backend::cuda; }
  int device_count() const override { return 0; }
  const char* unavailable_reason() const override {
    return "this build has no CUDA backend (configure with -DCAGRA_CUDA=ON on a machine with nvcc)";
  }
  int sm_count(int) const override { no_cuda(); }
  std::string describe(int) const override { no_cuda(); }
  uint64_t free_device_memory(int) const override { no_cuda(); }
  knn_graph brute_force(const host_matrix&, const host_matrix&, metric, uint32_t, bool,
                        const resources&) const override {
    no_cuda();
  }
  uint32_t brute_force_max_k() const override { return 0; }
  knn_graph nn_descent(const host_matrix&, metric, uint32_t, const knn_graph_params&, uint64_t,
                       const resources&, uint32_t*) const override {
    no_cuda();
  }
  std::vector<uint32_t> optimize(const knn_graph&, uint32_t, reorder_kind, optimize_steps,
                                 const resources&) const override {
    no_cuda();
  }
  void search(const index&, dataset_view, const search_plan&, const row_filter&, uint32_t*, float*,
              const resources&, search_stats*) const override {
    no_cuda();
  }
  void search_device(const index&, dataset_view, const search_plan&, const row_filter&, uint32_t*,
                     float*, const resources&) const override {
    no_cuda();
  }
  void rerank(const index&, dataset_view, const uint32_t*, uint32_t, uint32_t, uint32_t*, float*,
              const resources&) const override {
    no_cuda();
  }
  void index_changed(const index&, int64_t, const std::vector<uint32_t>&, int) const override {}
};

}  // namespace

const backend_ops& cuda_backend() {
  static const no_cuda_ops ops;
  return ops;
}

}  // namespace cagra::core
