// The CUDA build through the public API (src/core/dispatch.cpp): `build` / `build_knn_graph` /
// `optimize` with backend::cuda (and automatic, which takes the GPU when one is visible) against
// the CPU backend:
//  - optimize of the same kNN graph: the same graph bit for bit (rank and distance);
//  - build: search recall with the GPU-built graph within 1 point of the CPU-built graph (the
//    same CPU search on both), graph metrics (2-hop count, strong components; paper Q-A1)
//    printed for both, the report names the CUDA backend and its stage times;
//  - f16 storage builds on the GPU from the f16 rows;
//  - bad input gives the CPU's errors.
#include <cstdio>

#include <gtest/gtest.h>

#include "bigann_fixture.hpp"

namespace cagra::test {
namespace {

class CudaBuild : public bigann_gpu_suite {};

resources on(backend b) {
  resources r;
  r.target = b;
  return r;
}

double search_recall(const cagra::index& idx, const real_set& s, uint32_t itopk) {
  search_params sp;
  sp.itopk_size = itopk;
  const uint32_t k = 10;
  std::vector<uint32_t> ids(size_t(s.queries.rows()) * k);
  search(on(backend::cpu), sp, idx, s.queries, k, {ids.data(), s.queries.rows(), k}, {});
  return recall({ids.data(), s.queries.rows(), k}, s.truth.as<uint32_t>(), k);
}

TEST_F(CudaBuild, OptimizeOfTheSameKnnGraphIsBitIdentical) {
  index_params p;
  p.graph_degree = 32;
  p.intermediate_graph_degree = 64;
  const knn_graph knn = build_knn_graph(on(backend::cpu), p, set_->base);
  for (reorder_kind r : {reorder_kind::rank, reorder_kind::distance}) {
    const auto c = optimize(on(backend::cpu), knn, 32, r);
    const auto g = optimize(on(backend::cuda), knn, 32, r);
    EXPECT_EQ(c, g) << "reorder " << to_string(r);
  }
}

TEST_F(CudaBuild, RecallAndGraphMetricsMatchTheCpuBuild) {
  for (knn_algo algo : {knn_algo::nn_descent, knn_algo::brute_force}) {
    index_params p;
    p.graph_degree = 32;
    p.intermediate_graph_degree = 64;
    p.knn.algo = algo;
    build_report rc, rg;
    const cagra::index cpu_idx = build(on(backend::cpu), p, set_->base, &rc);
    const cagra::index gpu_idx = build(on(backend::cuda), p, set_->base, &rg);
    EXPECT_EQ(rg.backend_used, backend::cuda);
    EXPECT_EQ(rg.knn_used, algo);
    EXPECT_GT(rg.knn_seconds, 0);
    EXPECT_GT(rg.total_seconds, 0);
    const graph_stats sc = analyze({}, cpu_idx.graph());
    const graph_stats sg = analyze({}, gpu_idx.graph());
    EXPECT_EQ(sg.invalid_edges + sg.self_loops + sg.duplicate_edges, 0);
    for (uint32_t itopk : {16u, 32u, 64u}) {
      const double r_cpu = search_recall(cpu_idx, *set_, itopk),
                   r_gpu = search_recall(gpu_idx, *set_, itopk);
      std::printf(
          "[ build    ] bigann10k %-11s itopk %3u: recall@10 CPU-built %.4f GPU-built %.4f\n",
          to_string(algo), itopk, r_cpu, r_gpu);
      EXPECT_GE(r_gpu, r_cpu - 0.01) << to_string(algo) << " itopk " << itopk;
    }
    std::printf(
        "[ build    ] bigann10k %-11s CPU: knn %.3f s optimize %.3f s total %.3f s; GPU: knn %.3f "
        "s "
        "(%u iterations) optimize %.3f s total %.3f s\n",
        to_string(algo), rc.knn_seconds, rc.optimize_seconds, rc.total_seconds, rg.knn_seconds,
        rg.knn_iterations, rg.optimize_seconds, rg.total_seconds);
    std::printf(
        "[ build    ] graph metrics (Q-A1): CPU-built 2-hop %.1f, strong components %lld; "
        "GPU-built "
        "2-hop %.1f, strong components %lld\n",
        sc.avg_two_hop, (long long)sc.strong_components, sg.avg_two_hop,
        (long long)sg.strong_components);
  }
}

TEST_F(CudaBuild, AutomaticBuildsOnTheGpuAndF16StorageWorks) {
  index_params p;
  p.graph_degree = 32;
  p.intermediate_graph_degree = 64;
  p.storage = storage_type::f16;
  build_report rep;
  const cagra::index idx = build({}, p, set_->base, &rep);
  EXPECT_EQ(rep.backend_used, backend::cuda);
  EXPECT_EQ(idx.storage_dtype(), dtype::f16);
  EXPECT_GE(search_recall(idx, *set_, 64), 0.98);
}

TEST_F(CudaBuild, BadInputGivesClearErrors) {
  host_matrix tiny(dtype::f32, 8, 4);
  for (int64_t i = 0; i < 32; ++i) tiny.as<float>().data[i] = float(i % 7);
  index_params p;
  p.graph_degree = 4;
  p.intermediate_graph_degree = 16;  // > rows - 1
  EXPECT_THROW(build(on(backend::cuda), p, tiny), cagra::error);
  knn_graph bad;
  bad.rows = 4;
  bad.k = 2;
  bad.ids = {1, 2, 0, 9, 0, 1, 0, 1};  // row 1 holds id 9 >= rows
  bad.distances.assign(8, 1.0f);
  EXPECT_THROW(optimize(on(backend::cuda), bad, 2), cagra::error);
}

}  // namespace
}  // namespace cagra::test
