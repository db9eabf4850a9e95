// The memory-lean build (core/partitioned_knn.hpp, core::fit_build, core::reverse_and_merge) on
// the CPU backend: the partitions' shape (sizes, overlap, order, determinism, rows that will
// not separate), the partitioned kNN graph's validity and recall against the exact one, a whole
// build over partitions within 0.02 of the one-pass build's search recall, the plan's fields
// and errors, the device-memory fitting (one pass, partitions, optimize on the device or the
// host, a budget nothing fits), the parallel reverse-and-merge equal for any thread count, and
// build() of a matrix given away equal to build() of its view, and the kNN stage's checkpoints.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include <cagra/plan.hpp>

#include "core/device_memory.hpp"
#include "core/partitioned_knn.hpp"
#include "core/update/graph_edit.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

resources cpu(int threads = 0) {
  resources r;
  r.target = backend::cpu;
  r.num_threads = threads;
  return r;
}

TEST(PartitionRows, SizesOverlapAndOrder) {
  const host_matrix base = bigann10k().base;
  const int64_t n = base.rows(), max_rows = 2000, min_rows = 200;
  const auto parts = core::partition_rows(base, max_rows, min_rows, 7, 2);
  ASSERT_GE(parts.size(), 8u);  // about 2n / (max_rows / 2) clusters
  std::vector<int> seen(size_t(n), 0);
  int64_t total = 0;
  for (const auto& p : parts) {
    EXPECT_LE(int64_t(p.size()), max_rows);
    EXPECT_GE(int64_t(p.size()), min_rows);
    EXPECT_TRUE(std::is_sorted(p.begin(), p.end()));
    EXPECT_EQ(std::adjacent_find(p.begin(), p.end()), p.end()) << "a row twice in a partition";
    for (uint32_t r : p) ++seen[r];
    total += int64_t(p.size());
  }
  for (int64_t i = 0; i < n; ++i)
    ASSERT_GE(seen[size_t(i)], 1) << "row " << i << " in no partition";
  EXPECT_GT(total, n * 3 / 2) << "every row joins its two nearest clusters";
  EXPECT_EQ(core::partition_rows(base, max_rows, min_rows, 7, 1), parts)
      << "the partitions must not depend on the thread count";
  EXPECT_EQ(core::partition_rows(base, n, min_rows, 7, 2).size(), 1u);
}

TEST(PartitionRows, RowsThatWillNotSeparateAreCut) {
  // 3000 equal rows: k-means cannot split them; they go in contiguous pieces.
  host_matrix same(dtype::f32, 3000, 8);
  std::fill_n(static_cast<float*>(same.data()), 3000 * 8, 1.5f);
  const auto parts = core::partition_rows(same, 700, 100, 1, 2);
  for (const auto& p : parts) EXPECT_LE(p.size(), 700u);
  std::vector<int> seen(3000, 0);
  for (const auto& p : parts)
    for (uint32_t r : p) ++seen[r];
  for (int s : seen) ASSERT_GE(s, 1);
}

TEST(PartitionedKnn, ValidListsAndRecall) {
  const real_set set = bigann10k();
  const host_matrix& base = set.base;
  const uint32_t k = 32;
  knn_graph_params kp;
  core::partition_stats st;
  const knn_graph g =
      core::partitioned_knn(core::cpu_backend(), base, metric::l2, k, kp, 3, 2500, cpu(), &st);
  EXPECT_GE(st.partitions, 4);
  EXPECT_LE(st.largest, 2500);
  ASSERT_EQ(g.ids.size(), size_t(base.rows()) * k);
  for (int64_t i = 0; i < g.rows; ++i) {
    const uint32_t* row = g.ids.data() + size_t(i) * k;
    const float* d = g.distances.data() + size_t(i) * k;
    for (uint32_t j = 0; j < k; ++j) {
      ASSERT_LT(row[j], uint32_t(g.rows));
      ASSERT_NE(row[j], uint32_t(i));
      ASSERT_EQ(std::count(row, row + k, row[j]), 1);
      if (j) {
        ASSERT_TRUE(d[j - 1] < d[j] || (d[j - 1] == d[j] && row[j - 1] < row[j]));
      }
    }
  }
  const knn_graph exact = brute_force_knn(cpu(), metric::l2, base, base, k, true);
  const double r = recall(g.view(), exact.view(), k);
  EXPECT_GT(r, 0.90) << "kNN recall of the partitioned graph";
}

TEST(PartitionedKnn, OverlappedEqualsSerial) {
  // Partitions built on a worker thread while the previous one merges (the GPU builds' path):
  // the same lists, bit for bit, with and without a checkpoint folder.
  const host_matrix& base = bigann10k().base;
  knn_graph_params kp;
  core::partition_stats serial_st, overlapped_st;
  const knn_graph serial = core::partitioned_knn(core::cpu_backend(), base, metric::l2, 16, kp, 5,
                                                 2500, cpu(2), &serial_st, false);
  const knn_graph overlapped = core::partitioned_knn(core::cpu_backend(), base, metric::l2, 16, kp,
                                                     5, 2500, cpu(2), &overlapped_st, true);
  EXPECT_FALSE(serial_st.pipelined);
  EXPECT_TRUE(overlapped_st.pipelined) << "a 10K set leaves room on any host";
  EXPECT_EQ(overlapped.ids, serial.ids);
  EXPECT_EQ(overlapped.distances, serial.distances);
  EXPECT_EQ(overlapped_st.iterations, serial_st.iterations);
  const std::string dir = temp_path("overlapped-ckpt");
  std::filesystem::remove_all(dir);
  kp.checkpoint_dir = dir;
  core::partition_stats first, again;
  EXPECT_EQ(core::partitioned_knn(core::cpu_backend(), base, metric::l2, 16, kp, 5, 2500, cpu(2),
                                  &first, true)
                .ids,
            serial.ids);
  EXPECT_EQ(core::partitioned_knn(core::cpu_backend(), base, metric::l2, 16, kp, 5, 2500, cpu(2),
                                  &again, true)
                .ids,
            serial.ids);
  EXPECT_EQ(first.resumed, 0);
  EXPECT_EQ(again.resumed, again.partitions);
  std::filesystem::remove_all(dir);
}

double search_recall(const index& idx, const real_set& set, uint32_t itopk) {
  std::vector<uint32_t> ids(size_t(set.queries.rows()) * kK);
  std::vector<float> dist(ids.size());
  search_params sp;
  sp.itopk_size = itopk;
  search(cpu(), sp, idx, set.queries, kK, {ids.data(), set.queries.rows(), kK},
         {dist.data(), set.queries.rows(), kK});
  return recall({ids.data(), set.queries.rows(), kK}, set.truth.as<uint32_t>(), kK);
}

TEST(PartitionedBuild, RecallNearTheOnePassBuild) {
  const real_set set = bigann10k();
  index_params p;
  p.graph_degree = 32;
  p.knn.algo = knn_algo::nn_descent;
  build_report whole_rep, part_rep;
  const index whole = build(cpu(), p, set.base, &whole_rep);
  p.knn.partition_rows = 3000;
  const build_plan plan = plan_build(cpu(), p, set.base.rows(), set.base.cols(), dtype::u8);
  EXPECT_EQ(plan.partition_rows, 3000);
  EXPECT_NE(to_string(plan).find("partition_rows=3000"), std::string::npos) << to_string(plan);
  const index parted = build(cpu(), p, set.base, &part_rep);
  EXPECT_EQ(whole_rep.knn_partitions, 1);
  EXPECT_GE(part_rep.knn_partitions, 4);
  for (uint32_t itopk : {32u, 64u}) {
    const double a = search_recall(whole, set, itopk), b = search_recall(parted, set, itopk);
    EXPECT_GT(b, a - 0.02) << "itopk " << itopk << ": whole " << a << ", partitioned " << b;
  }
  // A partition limit of the row count or more is one pass.
  p.knn.partition_rows = set.base.rows();
  EXPECT_EQ(plan_build(cpu(), p, set.base.rows(), 128, dtype::u8).partition_rows, 0);
}

TEST(PartitionedBuild, TooSmallPartitionIsAnError) {
  index_params p;
  p.graph_degree = 32;  // intermediate 64: a partition needs 4 x 65 rows
  p.knn.partition_rows = 100;
  try {
    plan_build(cpu(), p, 10000, 128, dtype::f32);
    FAIL() << "expected an error";
  } catch (const cagra::error& e) {
    EXPECT_NE(std::string(e.what()).find("needs at least 260 rows"), std::string::npos) << e.what();
  }
}

TEST(FitBuild, OnePassPartitionsAndOptimizePaths) {
  index_params p;
  p.graph_degree = 32;
  build_plan plan;
  plan.target = backend::cuda;
  plan.knn = knn_algo::nn_descent;
  plan.graph_degree = 32;
  plan.intermediate_graph_degree = 64;
  plan.storage = dtype::f32;
  const int64_t n = 1000000, dim = 128;
  const uint64_t whole = core::gpu_build_memory(plan, p, n, dim).peak();
  build_plan a = plan;
  core::fit_build(a, p, n, dim, whole);
  EXPECT_EQ(a.partition_rows, 0);
  EXPECT_EQ(a.optimize, optimize_path::device);
  EXPECT_EQ(a.device_bytes, whole);
  // A quarter of it: partitions, and the optimization's reverse edges on the host.
  build_plan b = plan;
  core::fit_build(b, p, n, dim, whole / 4);
  EXPECT_GT(b.partition_rows, 100000);
  EXPECT_LT(b.partition_rows, n / 4);
  EXPECT_NE(b.optimize, optimize_path::device);
  EXPECT_LE(b.device_bytes, whole / 4);
  EXPECT_EQ(b.device_budget, whole / 4);
  // Room for a partition but not for the kNN ids: optimize on the host.
  build_plan c = plan;
  core::fit_build(c, p, n, dim, uint64_t{64} << 20);
  EXPECT_GT(c.partition_rows, 0);
  EXPECT_EQ(c.optimize, optimize_path::host);
  EXPECT_LE(c.device_bytes, uint64_t{64} << 20);
  // Nothing fits: one pass planned, its need above the budget (the build refuses).
  build_plan d = plan;
  core::fit_build(d, p, n, dim, uint64_t{1} << 20);
  EXPECT_EQ(d.partition_rows, 0);
  EXPECT_GT(d.device_bytes, uint64_t{1} << 20);
}

// build() of a matrix given away: the same index as build() of its view, whether the rows are
// taken over (same type, not cosine) or converted (cosine; f16 storage of f32 rows).
TEST(MovedDataset, BuildsTheSameIndex) {
  const host_matrix u8 = head(bigann10k().base, 2000);
  host_matrix f32(dtype::f32, u8.rows(), u8.cols());
  const uint8_t* src = static_cast<const uint8_t*>(u8.data());
  float* dst = static_cast<float*>(f32.data());
  for (int64_t i = 0; i < u8.rows() * u8.cols(); ++i) dst[i] = float(src[i]);
  struct variant {
    const host_matrix* data;
    metric m;
    storage_type s;
  };
  for (const variant& v : {variant{&u8, metric::l2, storage_type::same_as_input},
                           variant{&f32, metric::l2, storage_type::same_as_input},
                           variant{&f32, metric::cosine, storage_type::same_as_input},
                           variant{&f32, metric::l2, storage_type::f16}}) {
    index_params p;
    p.graph_degree = 16;
    p.metric = v.m;
    p.storage = v.s;
    const index a = build(cpu(), p, *v.data);
    host_matrix given = host_matrix::copy_of(*v.data);
    const index b = build(cpu(), p, std::move(given));
    const auto ga = a.graph(), gb = b.graph();
    ASSERT_EQ(ga.rows * ga.cols, gb.rows * gb.cols);
    EXPECT_TRUE(std::equal(ga.data, ga.data + ga.rows * ga.cols, gb.data)) << to_string(v.m);
    ASSERT_EQ(a.vectors().size_bytes(), b.vectors().size_bytes());
    EXPECT_EQ(std::memcmp(a.vectors().data(), b.vectors().data(), a.vectors().size_bytes()), 0);
  }
  // Bad values are refused as from a view, and the refused matrix is left as it was (cosine
  // rows are normalized in place only once every row has passed).
  host_matrix bad = host_matrix::copy_of(f32);
  static_cast<float*>(bad.data())[5] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(build(cpu(), index_params{}, std::move(bad)), cagra::error);
  index_params cosine;
  cosine.metric = metric::cosine;
  for (const int64_t row : {int64_t{0}, int64_t{1234}, f32.rows() - 1}) {
    host_matrix zero = host_matrix::copy_of(f32);
    float* z = static_cast<float*>(zero.data()) + row * zero.cols();
    std::fill(z, z + zero.cols(), 0.0f);
    z[3] = -0.0f;  // +0 and -0 alike
    const host_matrix before = host_matrix::copy_of(zero);
    try {
      (void)build(cpu(), cosine, std::move(zero));
      ADD_FAILURE() << "an all-zero row " << row << " was indexed for cosine";
    } catch (const cagra::error& e) {
      EXPECT_NE(std::string(e.what()).find("row " + std::to_string(row) + " is all zeros"),
                std::string::npos)
          << e.what();
    }
    ASSERT_EQ(zero.size_bytes(), before.size_bytes());
    EXPECT_EQ(std::memcmp(zero.data(), before.data(), zero.size_bytes()), 0) << row;
  }
  host_matrix nan_row = host_matrix::copy_of(f32);
  static_cast<float*>(nan_row.data())[7 * nan_row.cols() + 2] =
      std::numeric_limits<float>::infinity();
  const host_matrix nan_before = host_matrix::copy_of(nan_row);
  EXPECT_THROW(build(cpu(), cosine, std::move(nan_row)), cagra::error);
  EXPECT_EQ(std::memcmp(nan_row.data(), nan_before.data(), nan_row.size_bytes()), 0);
}

// Checkpoints of the kNN stage: every partition saved, all loaded on a rerun (same graph), a
// damaged file or other settings built again, and a one-pass build checkpointed as one part.
TEST(KnnCheckpoint, ResumesMatchingPartitions) {
  namespace fs = std::filesystem;
  const host_matrix base = bigann10k().base;
  const std::string dir = temp_path("knn_ckpt");
  fs::remove_all(dir);
  index_params p;
  p.graph_degree = 16;
  p.knn.partition_rows = 3000;
  p.knn.checkpoint_dir = dir;
  build_report first, again;
  const index a = build(cpu(), p, base, &first);
  ASSERT_GE(first.knn_partitions, 4);
  EXPECT_EQ(first.knn_partitions_resumed, 0);
  const std::string n = std::to_string(first.knn_partitions);
  for (int64_t i = 0; i < first.knn_partitions; ++i)
    EXPECT_TRUE(fs::is_regular_file(dir + "/knn-part-" + std::to_string(i) + "-of-" + n + ".bin"));
  const auto same_graph = [](const index& x, const index& y) {
    const auto gx = x.graph(), gy = y.graph();
    return gx.rows == gy.rows && std::equal(gx.data, gx.data + gx.rows * gx.cols, gy.data);
  };
  const index b = build(cpu(), p, base, &again);
  EXPECT_EQ(again.knn_partitions_resumed, first.knn_partitions);
  EXPECT_TRUE(same_graph(a, b));
  // A damaged file: that partition is built again.
  const std::string part1 = dir + "/knn-part-1-of-" + n + ".bin";
  std::vector<uint8_t> bytes = read_bytes(part1);
  bytes[bytes.size() / 2] ^= 0x40;
  write_bytes(part1, bytes);
  const index c = build(cpu(), p, base, &again);
  EXPECT_EQ(again.knn_partitions_resumed, first.knn_partitions - 1);
  EXPECT_TRUE(same_graph(a, c));
  // Other settings: nothing matches.
  p.seed = 5;
  build(cpu(), p, base, &again);
  EXPECT_EQ(again.knn_partitions_resumed, 0);
  // One pass: one part, the same graph as without a checkpoint.
  fs::remove_all(dir);
  index_params one;
  one.graph_degree = 16;
  const index d = build(cpu(), one, base);
  one.knn.checkpoint_dir = dir;
  const index e = build(cpu(), one, base, &again);
  EXPECT_TRUE(fs::is_regular_file(dir + "/knn-part-0-of-1.bin"));
  EXPECT_TRUE(same_graph(d, e));
  build(cpu(), one, base, &again);
  EXPECT_EQ(again.knn_partitions_resumed, 1);
  fs::remove_all(dir);
}

// The host memory model against the measured peaks (H100, 4388f5e, max RSS less the CLI's copy
// of the input, which the build now takes over): 30M x 96 f32 in partitions of 8,556,544 rows,
// 31.97 GiB. One pass optimized on the device keeps the kNN lists there (68940a5): the host
// holds the rows and the graph (10M x 96 f32, degree 32: 4.77 GiB; 9.82 GiB was measured at
// 4388f5e, when the lists came to the host and went back).
TEST(HostMemory, ModelAndRefusal) {
  index_params p;
  p.graph_degree = 32;
  build_plan plan;
  plan.target = backend::cuda;
  plan.knn = knn_algo::nn_descent;
  plan.graph_degree = 32;
  plan.intermediate_graph_degree = 64;
  plan.storage = dtype::f32;
  plan.partition_rows = 8556544;
  plan.optimize = optimize_path::device;
  const double gib = double(uint64_t{1} << 30);
  const double lean = double(core::host_build_bytes(plan, p, 30000000, 96, 16)) / gib;
  EXPECT_NEAR(lean, 31.97, 0.05 * 31.97);
  plan.partition_rows = 0;
  EXPECT_EQ(core::host_build_bytes(plan, p, 10000000, 96, 16),
            uint64_t{10000000} * (96 * 4 + 32 * 4));
  // A need above what the machine has: refused before any work, saying what lowers it.
  plan.device_bytes = 1;
  plan.host_bytes = uint64_t{1} << 60;
  try {
    core::check_build_memory(resources{}, p, plan, 10000000, 96);
    FAIL() << "no error";
  } catch (const cagra::error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("out of host memory: ", 0), 0u) << m;
    EXPECT_NE(m.find("f16 storage"), std::string::npos) << m;
  }
}

TEST(ReverseAndMerge, TheDefinitionForAnyThreadCountAndBlockSize) {
  // A pruned graph with hubs (many in-edges to a few nodes) and nodes without in-edges.
  const int64_t n = 5000;
  const uint32_t d = 16;
  std::mt19937 rng(11);
  std::vector<uint32_t> pruned(size_t(n) * d);
  for (int64_t x = 0; x < n; ++x) {
    std::vector<uint32_t> row;
    while (row.size() < d) {
      const uint32_t y = rng() % 4 == 0 ? uint32_t(rng() % 20) : uint32_t(rng() % n);
      if (y != uint32_t(x) && std::find(row.begin(), row.end(), y) == row.end()) row.push_back(y);
    }
    std::copy(row.begin(), row.end(), pruned.begin() + x * d);
  }
  // A few dropped entries (ids >= n are no edges).
  for (int64_t x = 100; x < 110; ++x) pruned[size_t(x) * d + d - 1] = kInvalidId;
  // The definition, serially: in-edges in (rank, source) order, then merge_row.
  std::vector<uint32_t> rev(size_t(n) * d), count(size_t(n), 0u), want(size_t(n) * d);
  for (uint32_t r = 0; r < d; ++r)
    for (int64_t x = 0; x < n; ++x) {
      const uint32_t y = pruned[size_t(x) * d + r];
      if (y < uint32_t(n) && count[y] < d) rev[size_t(y) * d + count[y]++] = uint32_t(x);
    }
  for (int64_t y = 0; y < n; ++y)
    core::merge_row(pruned.data() + size_t(y) * d, rev.data() + size_t(y) * d, count[size_t(y)], d,
                    want.data() + size_t(y) * d);
  const std::vector<uint32_t> one = core::reverse_and_merge(pruned, n, d, 1);
  EXPECT_EQ(one, want);
  for (int t : {2, 3, 7}) EXPECT_EQ(core::reverse_and_merge(pruned, n, d, t), one) << t;
  for (int64_t block : {1, 7, 64, 1000, 4999})
    EXPECT_EQ(core::reverse_and_merge(pruned, n, d, 3, block), one) << "blocks of " << block;
  // Node 0 is a hub: its reverse list is its first in-edges in (rank, source) order.
  std::vector<uint32_t> first;
  for (uint32_t r = 0; r < d && first.size() < d / 2; ++r)
    for (int64_t x = 0; x < n && first.size() < d / 2; ++x)
      if (pruned[size_t(x) * d + r] == 0) first.push_back(uint32_t(x));
  const uint32_t* row0 = one.data();
  for (uint32_t x : first) EXPECT_NE(std::find(row0, row0 + d, x), row0 + d) << x;
}

}  // namespace
}  // namespace cagra::test
