// GPU search (single-CTA kernel) against the CPU oracle on the same index and parameters:
// recall@10 within 1 point for every storage type and metric, no invalid or duplicate ids,
// grid chunking (70,000 queries), team sizes, the forgettable hash, both merge paths (one warp
// / whole CTA), several random samplings, odd dimensions, clear errors. Byte vectors give exact
// float distances, and the kernel follows the CPU step by step, so there the answers must be
// identical, not just as good. Needs a GPU: label `cuda` (scripts/dev/device-check.sh runs it).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "bigann_fixture.hpp"
#include "core/convert.hpp"
#include "cpu/backend.hpp"
#include "cuda/backend.hpp"
#include "search_results.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

result gpu_run(const cagra::index& idx, const host_matrix& q, uint32_t k,
               const search_params& params) {
  // These tests are about the single-CTA kernel (automatic would pick multi-CTA for batches
  // below the SM count; tests/cuda/test_cuda_multi_cta.cpp covers that kernel and the choice).
  search_params p = params;
  if (p.algo == search_algo::automatic) p.algo = search_algo::single_cta;
  return gpu_search(idx, q, k, p);
}

int64_t identical_rows(const result& a, const result& b) {
  int64_t same = 0;
  for (int64_t q = 0; q < a.rows; ++q)
    same +=
        std::equal(a.ids.begin() + q * a.k, a.ids.begin() + (q + 1) * a.k, b.ids.begin() + q * b.k);
  return same;
}

/** Runs both backends, checks recall parity (GPU >= CPU - 1 point) and the GPU's output.
 *  Returns the GPU result; with `exact` the ids and distances must equal the CPU's. */
result compare(const char* what, const cagra::index& idx, const host_matrix& q,
               matrix_view<const uint32_t> truth, const search_params& p, bool exact,
               uint32_t k = 10) {
  const result c = cpu_run(idx, q, k, p);
  const result g = gpu_run(idx, q, k, p);
  const double rc = recall(c.view(), truth, k), rg = recall(g.view(), truth, k);
  const int64_t same = identical_rows(c, g);
  std::printf("[ cuda     ] %-44s recall@%u cpu %.4f gpu %.4f  identical rows %lld/%lld\n", what, k,
              rc, rg, (long long)same, (long long)q.rows());
  EXPECT_GE(rg, rc - 0.01) << what;
  expect_well_formed(g, idx.size(), what);
  if (exact) {
    EXPECT_EQ(same, q.rows()) << what << ": byte vectors have exact distances, answers must match";
    size_t differ = 0;
    for (size_t i = 0; i < c.dist.size(); ++i) differ += c.dist[i] != g.dist[i];
    EXPECT_EQ(differ, 0u) << what << ": distances differ from the CPU's";
  }
  return g;
}

class CudaSearch : public bigann_gpu_suite {};

TEST_F(CudaSearch, DeviceInfo) {
  const cuda::device_info d = cuda::cuda_info(0);
  std::printf("[ cuda     ] device 0: %s\n", cuda::describe(d).c_str());
  EXPECT_GT(d.sm_count, 0);
  EXPECT_THROW(cuda::cuda_info(cuda::device_count()), cagra::error);
}

TEST_F(CudaSearch, U8MatchesCpu) {
  for (uint32_t m : {16u, 64u, 128u}) {
    std::string what = "u8 l2 itopk " + std::to_string(m);
    compare(what.c_str(), *u8_, set_->queries, truth(), itopk(m), true);
  }
  compare("u8 l2 itopk 64 k 64", *u8_, set_->queries, truth(), itopk(64), true, 64);
}

TEST_F(CudaSearch, FloatAndHalfStorage) {
  const host_matrix base = scaled_f32(set_->base, 1.0f), q = scaled_f32(set_->queries, 1.0f);
  cagra::index f32 = build({}, small_params(), base);
  compare("f32 (u8 values) l2", f32, q, truth(), itopk(64), false);
  index_params hp = small_params();
  hp.storage = storage_type::f16;
  cagra::index f16 = build({}, hp, set_->base);
  ASSERT_EQ(f16.storage_dtype(), dtype::f16);
  compare("f16 storage l2", f16, q, truth(), itopk(64), false);
}

TEST_F(CudaSearch, Metrics) {
  const host_matrix base = scaled_f32(set_->base, 1.0f / 255),
                    q = scaled_f32(set_->queries, 1.0f / 255);
  for (metric m : {metric::l2, metric::inner_product, metric::cosine}) {
    index_params ip = small_params();
    ip.metric = m;
    cagra::index idx = build({}, ip, base);
    resources cpu;
    cpu.target = backend::cpu;
    knn_graph gt = brute_force_knn(cpu, m, base, q, 10);
    std::string what = std::string("f32 ") + to_string(m) + " itopk 128";
    compare(what.c_str(), idx, q, gt.view(), itopk(128), false);
  }
  index_params ip = small_params();
  ip.metric = metric::inner_product;
  cagra::index u8ip = build({}, ip, set_->base);
  resources cpu;
  cpu.target = backend::cpu;
  knn_graph gt = brute_force_knn(cpu, metric::inner_product, set_->base, set_->queries, 10);
  compare("u8 ip itopk 128", u8ip, set_->queries, gt.view(), itopk(128), true);
}

TEST_F(CudaSearch, Int8) {
  host_matrix base(dtype::i8, set_->base.rows(), 128), q(dtype::i8, 100, 128);
  for (int64_t i = 0; i < base.rows() * 128; ++i)
    base.as<int8_t>().data[i] = int8_t(set_->base.as<uint8_t>().data[i] / 2 - 64);
  for (int64_t i = 0; i < 100 * 128; ++i)
    q.as<int8_t>().data[i] = int8_t(set_->queries.as<uint8_t>().data[i] / 2 - 64);
  cagra::index idx = build({}, small_params(), base);
  resources cpu;
  cpu.target = backend::cpu;
  knn_graph gt = brute_force_knn(cpu, metric::l2, base, q, 10);
  compare("i8 l2 itopk 64", idx, q, gt.view(), itopk(64), true);
}

TEST_F(CudaSearch, LargeBatchIsChunked) {
  // 70,000 queries > 65,535 CTAs per launch; the seed depends on the query's bytes only, so
  // every copy of a query must get the same answer, wherever it falls in the batch.
  const host_matrix q = repeat_rows(set_->queries, 70000);
  const result one = gpu_run(*u8_, set_->queries, 10, itopk(64));
  const result all = gpu_run(*u8_, q, 10, itopk(64));
  int64_t mismatched = 0;
  for (int64_t i = 0; i < q.rows(); ++i)
    mismatched += !std::equal(all.ids.begin() + i * 10, all.ids.begin() + (i + 1) * 10,
                              one.ids.begin() + (i % 100) * 10);
  EXPECT_EQ(mismatched, 0);
  expect_well_formed(all, u8_->size(), "70,000 queries");
}

TEST_F(CudaSearch, HostBatchPipelineMatchesSmallBatches) {
  // A host batch of >= 2048 single-CTA queries goes through the copy pipeline (chunks over three
  // streams, copy_pipeline.cu); batches of 1,000 take the one-launch copy path. 7,000 distinct
  // queries (4 chunks: a slot is reused) must get the same ids and distances, bit for bit.
  const host_matrix q = repeat_rows(set_->base, 7000);
  const result whole = gpu_run(*u8_, q, 10, itopk(64));
  const result parts = gpu_search(
      *u8_, q, 10,
      [] {
        search_params p = itopk(64);
        p.algo = search_algo::single_cta;
        return p;
      }(),
      1000);
  EXPECT_EQ(identical_rows(whole, parts), q.rows());
  EXPECT_EQ(whole.dist, parts.dist);
  expect_well_formed(whole, u8_->size(), "7,000 queries, pipelined");
}

TEST_F(CudaSearch, HostBatchPipelineWithPerQueryFilterAndNoDistances) {
  // The pipeline hands each chunk its part of a per-query filter: 5,000 queries with a random
  // half of the rows allowed each, searched at once (pipelined, no distances asked) and in
  // batches of 1,000; the same ids, and none outside a query's own filter.
  const int64_t nq = 5000, n = u8_->size(), words = row_filter::words_for(n);
  const host_matrix q = repeat_rows(set_->base, nq);
  std::vector<uint32_t> bits(size_t(nq * words));
  std::mt19937 rng(7);
  for (auto& w : bits) w = rng();
  resources res;
  res.target = backend::cuda;
  search_params p = itopk(64);
  p.algo = search_algo::single_cta;
  p.filter = filter_algo::graph;
  std::vector<uint32_t> whole(size_t(nq) * 10), parts(size_t(nq) * 10);
  search(res, p, *u8_, q, 10, {whole.data(), nq, 10}, {},
         row_filter::per_query(bits.data(), nq, n));
  std::vector<float> dist(1000 * 10);
  for (int64_t first = 0; first < nq; first += 1000) {
    const host_matrix part = slice(q, first, 1000);
    search(res, p, *u8_, part, 10, {parts.data() + first * 10, 1000, 10}, {dist.data(), 1000, 10},
           row_filter::per_query(bits.data() + first * words, 1000, n));
  }
  EXPECT_EQ(whole, parts);
  int64_t outside = 0;
  for (int64_t i = 0; i < nq; ++i)
    for (int j = 0; j < 10; ++j) {
      const uint32_t id = whole[size_t(i * 10 + j)];
      if (id != kInvalidId) outside += !((bits[size_t(i * words + id / 32)] >> (id % 32)) & 1u);
    }
  EXPECT_EQ(outside, 0);
}

TEST_F(CudaSearch, TeamSizesAgree) {
  const result ref = gpu_run(*u8_, set_->queries, 10, itopk(64));
  for (uint32_t t : {2u, 4u, 8u, 16u, 32u}) {
    search_params p = itopk(64);
    p.team_size = t;
    EXPECT_EQ(identical_rows(ref, gpu_run(*u8_, set_->queries, 10, p)), 100) << "u8, team " << t;
  }
  const host_matrix base = scaled_f32(set_->base, 1.0f / 255),
                    q = scaled_f32(set_->queries, 1.0f / 255);
  cagra::index f32 = build({}, small_params(), base);
  const double r_cpu = recall(cpu_run(f32, q, 10, itopk(64)).view(), truth(), 10);
  for (uint32_t t : {4u, 8u, 16u, 32u}) {
    search_params p = itopk(64);
    p.team_size = t;
    const double r = recall(gpu_run(f32, q, 10, p).view(), truth(), 10);
    std::printf("[ cuda     ] f32 team %2u recall %.4f (cpu %.4f)\n", t, r, r_cpu);
    EXPECT_GE(r, r_cpu - 0.01) << "f32, team " << t;
  }
}

TEST_F(CudaSearch, ForgettableHash) {
  for (uint32_t bits : {8u, 9u, 10u})
    for (uint32_t interval : {1u, 2u, 3u, 4u}) {
      search_params p = itopk(64);
      p.hash_bits = bits;
      p.hash_reset_interval = interval;
      std::string what =
          "hash 2^" + std::to_string(bits) + " reset every " + std::to_string(interval);
      compare(what.c_str(), *u8_, set_->queries, truth(), p, true);
    }
}

TEST_F(CudaSearch, WidthSamplingsAndMergePaths) {
  struct cfg {
    uint32_t itopk, width, samplings;
  };
  // top-M + candidates <= 512 entries: one-warp merge; above: CTA-wide merge.
  for (cfg c : {cfg{64, 1, 3}, cfg{128, 4, 1}, cfg{256, 8, 1}, cfg{256, 16, 1}, cfg{512, 1, 1},
                cfg{512, 64, 2}}) {
    search_params p = itopk(c.itopk);
    p.search_width = c.width;
    p.num_random_samplings = c.samplings;
    char what[96];
    std::snprintf(what, sizeof what, "itopk %u width %u samplings %u", c.itopk, c.width,
                  c.samplings);
    compare(what, *u8_, set_->queries, truth(), p, true);
  }
}

TEST_F(CudaSearch, ErrorsAreClear) {
  search_params p = itopk(600);
  try {
    gpu_run(*u8_, set_->queries, 10, p);
    ADD_FAILURE() << "itopk 600 should throw";
  } catch (const cagra::error& e) {
    EXPECT_NE(std::string(e.what()).find("multi-CTA"), std::string::npos) << e.what();
  }
  const host_matrix qf = scaled_f32(set_->queries, 1.0f);  // f32 rows for a u8 index
  std::vector<uint32_t> ids(1000);
  EXPECT_THROW(
      cuda::search(*u8_, qf, gpu_plan(*u8_, itopk(64), 10, qf.rows()), ids.data(), nullptr, 0),
      cagra::error);
}

TEST(CudaSearchSmall, OddDimensionsAndTinyIndexes) {
  ASSERT_GT(cuda::device_count(), 0) << "no CUDA device: the cuda tests need a GPU";
  // Rows that are not a multiple of 16 bytes (padded on the device), several types.
  std::mt19937 gen(7);
  for (uint32_t dim : {3u, 50u, 100u, 129u}) {
    host_matrix base(dtype::u8, 3000, dim), q(dtype::u8, 50, dim);
    for (int64_t i = 0; i < base.rows() * dim; ++i)
      base.as<uint8_t>().data[i] = uint8_t(gen() % 256);
    for (int64_t i = 0; i < q.rows() * dim; ++i) q.as<uint8_t>().data[i] = uint8_t(gen() % 256);
    resources cpu;
    cpu.target = backend::cpu;
    knn_graph gt = brute_force_knn(cpu, metric::l2, base, q, 10);
    cagra::index idx = build({}, small_params(16), base);
    std::string what = "random u8 dim " + std::to_string(dim);
    compare(what.c_str(), idx, q, gt.view(), itopk(64), true);
    index_params hp = small_params(16);
    hp.storage = storage_type::f16;
    cagra::index h = build({}, hp, base);
    what = "random f16 dim " + std::to_string(dim);
    compare(what.c_str(), h, q, gt.view(), itopk(64), false);
  }
  // k = n on a 9-node index: every node exactly once, like the CPU.
  host_matrix tiny(dtype::f32, 9, 4);
  for (int i = 0; i < 36; ++i) tiny.as<float>().data[i] = float(i % 7) + float(i / 4);
  index_params ip = small_params(4);
  ip.intermediate_graph_degree = 8;
  cagra::index idx = build({}, ip, tiny);
  const result r = gpu_run(idx, tiny, 9, itopk(64));
  expect_well_formed(r, 9, "tiny");
  for (int q = 0; q < 9; ++q) EXPECT_EQ(r.ids[q * 9], uint32_t(q));
}

TEST(CudaSearchSmall, FashionMnist784) {
  ASSERT_GT(cuda::device_count(), 0) << "no CUDA device: the cuda tests need a GPU";
  // 784-d bytes: 49 chunks per row, team 32 loops twice with a partial step; distances up to
  // 784 * 255^2 > 2^24 are still exact (integer sums, one rounding to float as on the CPU).
  real_set f = fashion(20000, 200);
  cagra::index idx = build({}, small_params(), f.base);
  compare("fashion-mnist 20k u8 784-d", idx, f.queries, f.truth.as<uint32_t>(), itopk(64), true);
}

TEST_F(CudaSearch, SanitizerCase) {
  // Small and quick, every code path once: for compute-sanitizer (memcheck, racecheck).
  const host_matrix q = head(set_->queries, 8);
  search_params p = itopk(64);
  p.hash_bits = 8;
  p.hash_reset_interval = 2;
  p.num_random_samplings = 2;
  expect_well_formed(gpu_run(*u8_, q, 10, p), u8_->size(), "warp merge, resets, samplings");
  p = itopk(512);
  p.search_width = 4;
  p.max_iterations = 20;
  expect_well_formed(gpu_run(*u8_, q, 10, p), u8_->size(), "CTA merge");
  index_params hp = small_params();
  hp.storage = storage_type::f16;
  cagra::index h = build({}, hp, head(set_->base, 2000));
  expect_well_formed(gpu_run(h, q, 10, itopk(32)), h.size(), "f16");
}

}  // namespace
}  // namespace cagra::test
