// The device-memory model of the GPU build (src/core/device_memory.cpp): its terms against the
// allocations of the CUDA stages, its growth with rows and degrees, its agreement with measured
// peaks, and how the plan shows it. CUDA-free: the model is plain arithmetic, so it is tested
// here; tests/cuda/test_cuda_build.cpp checks the refusal on a GPU.
#include <cstdio>
#include <string>

#include <gtest/gtest.h>

#include <cagra/plan.hpp>

#include "core/device_memory.hpp"
#include "core/plan.hpp"

namespace cagra::test {
namespace {

using core::build_memory;
using core::gpu_build_memory;

constexpr uint64_t kMiB = uint64_t{1} << 20;

/** A GPU plan as plan_build would resolve it (plan_build itself needs a visible GPU for cuda). */
build_plan gpu_plan(int64_t rows, uint32_t d, uint32_t k, dtype storage = dtype::f32,
                    knn_algo algo = knn_algo::automatic) {
  build_plan p;
  p.target = backend::cuda;
  p.graph_degree = d;
  p.intermediate_graph_degree = k;
  p.knn = core::resolve_knn_algo(algo, rows, k, backend::cuda);
  p.storage = storage;
  return p;
}

uint64_t peak(int64_t rows, int64_t dim, uint32_t d, uint32_t k, dtype storage = dtype::f32,
              const index_params& params = {}) {
  return gpu_build_memory(gpu_plan(rows, d, k, storage, params.knn.algo), params, rows, dim).peak();
}

const core::device_buffer_bytes* find(const core::stage_memory& s, const std::string& name) {
  for (const auto& b : s.buffers)
    if (b.name == name) return &b;
  return nullptr;
}

TEST(DeviceMemory, NnDescentTermsMirrorTheRunState) {
  // 1000 rows x 96 f32, k = 64, sample rate 0.5: S = 32, P = 128.
  const core::stage_memory m = core::nn_descent_memory(1000, 96, dtype::f32, 64, 0.5f);
  EXPECT_EQ(m.stage, "nn_descent");
  EXPECT_EQ(find(m, "data")->bytes, 1000u * 384);
  EXPECT_EQ(find(m, "keys")->bytes, 1000u * 64 * 8);
  EXPECT_EQ(find(m, "flags")->bytes, 1000u * 64);
  EXPECT_EQ(find(m, "props")->bytes, 1000u * 128 * 8);
  EXPECT_EQ(find(m, "pcount")->bytes, 1000u * 4);
  for (const char* s : {"fwd_new", "fwd_old", "rev_new", "rev_old"})
    EXPECT_EQ(find(m, s)->bytes, 1000u * 32 * 4) << s;
  EXPECT_EQ(find(m, "rcnt")->bytes, 2000u * 4);
  EXPECT_EQ(find(m, "counters")->bytes, 32u);
  EXPECT_EQ(m.requested(), 1000u * 2508 + 32);
  // Rows padded to 16 bytes; the sample follows the rate, capped at 32; P >= max(2k, 128).
  EXPECT_EQ(find(core::nn_descent_memory(10, 3, dtype::u8, 8, 0.5f), "data")->bytes, 10u * 16);
  EXPECT_EQ(find(core::nn_descent_memory(10, 3, dtype::u8, 32, 0.5f), "fwd_new")->bytes,
            10u * 16 * 4);
  EXPECT_EQ(find(core::nn_descent_memory(10, 3, dtype::u8, 256, 1.0f), "fwd_new")->bytes,
            10u * 32 * 4);
  EXPECT_EQ(find(core::nn_descent_memory(10, 3, dtype::u8, 100, 0.5f), "props")->bytes,
            10u * 256 * 8);
  // Each buffer is counted in whole 2 MiB pages.
  EXPECT_EQ(m.total(), 11 * 2 * kMiB);
}

TEST(DeviceMemory, OptimizeTakesTheLargerPhase) {
  const int64_t n = 1000000;
  const uint64_t scratch = core::gpu::radix_sort_scratch_bound(n * 32);
  const core::stage_memory rank = core::optimize_memory(n, 64, 32, false, true, scratch);
  // Reverse phase (16 n d + 16 n + scratch) beats the rank reorder's 4 n K.
  EXPECT_EQ(rank.requested(), uint64_t(n) * (4 * 32 + 16 * 32 + 16) + 8 + scratch);
  EXPECT_NE(find(rank, "k1"), nullptr);
  EXPECT_EQ(find(rank, "d_ids"), nullptr);
  // Without the reverse step: the pruned graph and the reorder phase (with distances).
  const core::stage_memory dist = core::optimize_memory(n, 256, 32, true, false, 0);
  EXPECT_EQ(dist.requested(), uint64_t(n) * (4 * 32 + 8 * 256) + 8);
  // The scratch bound: CUB's onesweep lookback for up to 2^28 items, 64 MiB at most per
  // portion, plus bins.
  EXPECT_LT(core::gpu::radix_sort_scratch_bound(int64_t{800000000}), 66 * kMiB);
  EXPECT_GT(core::gpu::radix_sort_scratch_bound(int64_t{800000000}), 64 * kMiB);
}

TEST(DeviceMemory, BruteForceTermsMirrorTheContext) {
  // 10000 rows x 128 u8, k = 64, l2: rows and queries widened to f32, one u8 staging copy,
  // norms, one 10000 x 10000 tile (<= 1 GiB), the top-k state and results, cuBLAS's workspace.
  const core::stage_memory m =
      core::brute_force_memory(10000, 10000, 128, dtype::u8, 64, metric::l2);
  EXPECT_EQ(find(m, "xs")->bytes, 10000u * 128 * 4);
  EXPECT_EQ(find(m, "staging")->bytes, 10000u * 128);
  EXPECT_EQ(find(m, "dots")->bytes, 10000u * 10000 * 4);
  EXPECT_EQ(find(m, "state")->bytes, 10000u * 64 * 8);
  EXPECT_NE(find(m, "xnorm"), nullptr);
  EXPECT_EQ(
      find(core::brute_force_memory(100, 100, 8, dtype::f32, 4, metric::inner_product), "xnorm"),
      nullptr);
  // Large sets: the dot tile is capped at 1 GiB (16384 queries x 16384 rows).
  const core::stage_memory big =
      core::brute_force_memory(4000000, 4000000, 96, dtype::f32, 1024, metric::l2);
  EXPECT_EQ(find(big, "dots")->bytes, uint64_t{1} << 30);
}

TEST(DeviceMemory, GrowsWithRowsAndDegrees) {
  uint64_t last = 0;
  for (int64_t rows : {100000, 1000000, 10000000, 100000000}) {
    const uint64_t b = peak(rows, 96, 32, 64);
    EXPECT_GT(b, last) << rows;
    last = b;
  }
  EXPECT_LT(peak(10000000, 96, 32, 64), peak(10000000, 96, 64, 128));
  EXPECT_LT(peak(10000000, 96, 32, 64), peak(10000000, 96, 32, 96));
  EXPECT_LT(peak(10000000, 96, 32, 64), peak(10000000, 128, 32, 64));
  EXPECT_LT(peak(10000000, 96, 32, 64, dtype::f16), peak(10000000, 96, 32, 64, dtype::f32));
  // NN-descent sets the peak at these shapes.
  const build_memory m = gpu_build_memory(gpu_plan(10000000, 32, 64), {}, 10000000, 96);
  EXPECT_EQ(m.peak_stage().stage, "nn_descent");
  EXPECT_GT(m.knn.total(), m.optimize.total());
}

// Measured on H100 80GB (bench/results/logs/multi-gpu-synthetic-100m-h100x4-899c63f.txt and
// multi-gpu-synthetic-4m-h100x4-899c63f.txt, the runs of
// bench/results/multi-gpu-synthetic-100m-h100x4-899c63f.jsonl in the repository's history):
// shards of the synthetic 96-d f32 sets built with graph degree 32 from a 64-NN graph
// (NN-descent, sample rate 0.5), one build at a time per GPU, device memory in use sampled by
// nvidia-smi every 0.5 s. The samples include the CUDA context (about 0.5 GiB on an H100),
// which the model leaves out (the check compares with free memory, the context already gone):
// the model must stay below each sample by less than 600 MiB.
TEST(DeviceMemory, AgreesWithTheH100Measurements) {
  struct point {
    int64_t rows;
    uint64_t in_use_mib;
  };
  for (const point& p : {point{25000000, 60333}, point{6250000, 15489}, point{4000000, 10113},
                         point{1000000, 2937}}) {
    const uint64_t model = peak(p.rows, 96, 32, 64);
    const uint64_t measured = p.in_use_mib * kMiB;
    std::printf(
        "[model] %lld x 96 f32, d 32 / 64: %.0f MiB (%.0f bytes a row); measured %llu MiB "
        "in use\n",
        (long long)p.rows, double(model) / kMiB, double(model) / double(p.rows),
        (unsigned long long)p.in_use_mib);
    EXPECT_LE(model, measured) << p.rows;
    EXPECT_LT(measured - model, 600 * kMiB) << p.rows;
  }
  // 25M rows: within 1.5% of the 60.3 GB (58.9 GiB) measured.
  const double ratio = double(peak(25000000, 96, 32, 64)) / (60333.0 * kMiB);
  EXPECT_GT(ratio, 0.985);
  EXPECT_LE(ratio, 1.0);
}

// The table of docs/cuda.md ("Device memory of the build"): bytes a row at common shapes.
TEST(DeviceMemory, PerRowTable) {
  std::printf("[model] rows        dim  d/d_init  peak          bytes/row  stage\n");
  for (int64_t rows : {1000000, 10000000, 100000000})
    for (int64_t dim : {96, 128, 384})
      for (uint32_t d : {32u, 64u}) {
        const build_memory m = gpu_build_memory(gpu_plan(rows, d, 2 * d), {}, rows, dim);
        std::printf("[model] %-11lld %-4lld %2u/%-5u  %-12s  %-9.0f  %s\n", (long long)rows,
                    (long long)dim, d, 2 * d, core::format_bytes(m.peak()).c_str(),
                    double(m.peak()) / double(rows), m.peak_stage().stage.c_str());
      }
}

TEST(DeviceMemory, PlanShowsDeviceBytesOnTheGpu) {
  resources cpu;
  cpu.target = backend::cpu;
  const build_plan c = plan_build(cpu, index_params{}, 1000, 8, dtype::f32);
  EXPECT_EQ(c.device_bytes, 0u) << "the CPU uses no device memory";
  EXPECT_EQ(to_string(c).find("device_bytes"), std::string::npos) << to_string(c);
  build_plan g = gpu_plan(25000000, 32, 64);
  g.device_bytes = gpu_build_memory(g, {}, 25000000, 96).peak();
  const std::string line = to_string(g);
  EXPECT_NE(line.find(" device_bytes=" + std::to_string(g.device_bytes)), std::string::npos)
      << line;
  EXPECT_EQ(line.rfind("backend=cuda knn=nn_descent", 0), 0u) << line;
}

TEST(DeviceMemory, FormatBytes) {
  EXPECT_EQ(core::format_bytes(512), "512 bytes");
  EXPECT_EQ(core::format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(core::format_bytes(uint64_t{8} << 30), "8.0 GiB");
}

TEST(DeviceMemory, DefaultIsNoLimit) { EXPECT_EQ(index_params{}.max_device_memory, 0u); }

}  // namespace
}  // namespace cagra::test
