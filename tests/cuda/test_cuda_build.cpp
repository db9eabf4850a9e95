// The CUDA build through the public API (src/core/dispatch.cpp): `build` / `build_knn_graph` /
// `optimize` with backend::cuda (and automatic, which takes the GPU when one is visible) against
// the CPU backend:
//  - optimize of the same kNN graph: the same graph bit for bit (rank and distance);
//  - NN-descent's lists handed to the optimization on the device: the CPU optimize of the
//    same lists, bit for bit;
//  - build: search recall with the GPU-built graph within 1 point of the CPU-built graph (the
//    same CPU search on both), graph metrics (2-hop count, strong components; paper Q-A1)
//    printed for both, the report names the CUDA backend and its stage times;
//  - f16 storage builds on the GPU from the f16 rows;
//  - bad input gives the CPU's errors;
//  - index_params::max_device_memory: a budget far below the plan's device_bytes is refused
//    before any work (no progress, no device memory taken) with what it needs and what lowers
//    it; a budget of exactly device_bytes builds;
//  - the memory-lean build: pruning on the GPU + reverse edges and merge on the host equals the
//    CPU optimize bit for bit; a build over kNN partitions keeps the one-pass recall.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include <cagra/multi_gpu.hpp>
#include <cagra/plan.hpp>

#include "bigann_fixture.hpp"
#include "core/backend.hpp"
#include "core/device_memory.hpp"
#include "core/update/graph_edit.hpp"
#include "cuda/backend.hpp"

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

TEST_F(CudaBuild, MaxDeviceMemoryRefusesBeforeAnyWork) {
  const host_matrix& base = set_->base;
  for (knn_algo algo : {knn_algo::brute_force, knn_algo::nn_descent}) {
    index_params p;
    p.graph_degree = 32;
    p.intermediate_graph_degree = 64;
    p.knn.algo = algo;
    const build_plan plan = plan_build(on(backend::cuda), p, base.rows(), base.cols(), base.type());
    ASSERT_GT(plan.device_bytes, 0u);
    EXPECT_NE(to_string(plan).find("device_bytes=" + std::to_string(plan.device_bytes)),
              std::string::npos)
        << to_string(plan);
    std::printf("[build] %lld x %lld %s, %s: device_bytes %llu\n", (long long)base.rows(),
                (long long)base.cols(), to_string(base.type()), to_string(algo),
                (unsigned long long)plan.device_bytes);

    // Far below the need: refused before any work.
    p.max_device_memory = uint64_t{1} << 20;
    resources r = on(backend::cuda);
    bool progressed = false;
    r.progress = [&](const char*, double) { progressed = true; };
    const size_t free_before = cuda::free_memory(0);
    try {
      build(r, p, base);
      ADD_FAILURE() << "no error";
    } catch (const cagra::error& e) {
      const std::string m = e.what();
      std::printf("[build] expected error: %s\n", m.c_str());
      EXPECT_EQ(m.rfind("out of device memory: ", 0), 0u) << m;
      EXPECT_NE(m.find("needs " + core::format_bytes(plan.device_bytes)), std::string::npos) << m;
      EXPECT_NE(m.find("max_device_memory allows 1.0 MiB"), std::string::npos) << m;
      EXPECT_NE(m.find("graph_degree"), std::string::npos) << m;
      EXPECT_NE(m.find("--shards"), std::string::npos) << m;
      EXPECT_NE(m.find("build_sharded"), std::string::npos) << m;
    }
    EXPECT_FALSE(progressed);
    EXPECT_EQ(cuda::free_memory(0), free_before) << "device memory was allocated";

    // Exactly the need: it builds.
    p.max_device_memory = plan.device_bytes;
    build_report rep;
    const cagra::index idx = build(on(backend::cuda), p, base, &rep);
    EXPECT_EQ(rep.backend_used, backend::cuda);
    EXPECT_EQ(rep.knn_used, algo);
    EXPECT_GE(search_recall(idx, *set_, 64), 0.98);
  }
  // A sharded build checks the largest shard before any shard starts.
  index_params p;
  p.graph_degree = 32;
  p.max_device_memory = uint64_t{1} << 20;
  try {
    build_sharded(on(backend::cuda), p, base, 2);
    ADD_FAILURE() << "no error";
  } catch (const cagra::error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("out of device memory: 2 shards of at most 4950 rows each: ", 0), 0u) << m;
  }
}
// The GPU build hands NN-descent's lists to the optimization on the device
// (backend_ops::nn_descent_graph): the same graph as optimizing the downloaded lists on the CPU.
// With no iteration the lists are the random start, which does not depend on scheduling.
TEST_F(CudaBuild, ListsKeptOnTheDeviceGiveTheCpuOptimize) {
  knn_graph_params kp;
  kp.max_iterations = 0;
  for (reorder_kind r : {reorder_kind::rank, reorder_kind::distance}) {
    core::graph_stage_times times;
    times.iterations = 99;
    const std::vector<uint32_t> kept = core::cuda_backend().nn_descent_graph(
        set_->base, metric::l2, 64, kp, 7, 32, r, on(backend::cuda), &times);
    const knn_graph knn = core::cuda_backend().nn_descent(set_->base, metric::l2, 64, kp, 7,
                                                          on(backend::cuda), nullptr);
    EXPECT_EQ(kept, core::cpu_backend().optimize(knn, 32, r, {}, on(backend::cpu))) << to_string(r);
    EXPECT_EQ(times.iterations, 0u);
    EXPECT_GT(times.knn_seconds, 0.0);
    EXPECT_GT(times.optimize_seconds, 0.0);
  }
}

// The memory-lean build's pieces on the GPU: pruning on the device with the reverse edges and
// merge on the host (optimize_path::prune_on_device) gives the CPU's graph bit for bit, and a
// build over kNN partitions (each pass on the GPU) reaches the one-pass build's recall.
TEST_F(CudaBuild, PruneOnDeviceEqualsTheCpuOptimize) {
  const host_matrix& base = set_->base;
  const knn_graph knn = brute_force_knn(on(backend::cpu), metric::l2, base, base, 64, true);
  for (reorder_kind kind : {reorder_kind::rank, reorder_kind::distance}) {
    const std::vector<uint32_t> pruned =
        core::cuda_backend().optimize(knn, 32, kind, {true, false}, on(backend::cuda));
    EXPECT_EQ(core::reverse_and_merge(pruned, knn.rows, 32, 4),
              core::cpu_backend().optimize(knn, 32, kind, {}, on(backend::cpu)))
        << to_string(kind);
  }
}

TEST_F(CudaBuild, PartitionedKnnReachesTheOnePassRecall) {
  const host_matrix& base = set_->base;
  index_params p;
  p.graph_degree = 32;
  p.knn.algo = knn_algo::nn_descent;
  const cagra::index whole = build(on(backend::cuda), p, base);
  p.knn.partition_rows = 3000;
  const build_plan plan = plan_build(on(backend::cuda), p, base.rows(), base.cols(), base.type());
  EXPECT_EQ(plan.partition_rows, 3000);
  build_report rep;
  const cagra::index parted = build(on(backend::cuda), p, base, &rep);
  EXPECT_GE(rep.knn_partitions, 4);
  for (uint32_t itopk : {32u, 64u}) {
    const double a = search_recall(whole, *set_, itopk), b = search_recall(parted, *set_, itopk);
    std::printf("[build] itopk %u: one pass %.4f, %lld partitions %.4f\n", itopk, a,
                (long long)rep.knn_partitions, b);
    EXPECT_GT(b, a - 0.02) << "itopk " << itopk;
  }
}

}  // namespace
}  // namespace cagra::test
