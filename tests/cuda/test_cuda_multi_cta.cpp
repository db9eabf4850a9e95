// Multi-CTA GPU search (paper §IV-C2) against the CPU oracle on the same index and parameters:
// recall@10 within 1 point for every storage type (u8, i8, f32, f16) and metric (l2, ip,
// cosine), itopk 64 / 256 / 1024, batches of 1 (the persistent kernel, the default, and a launch
// per query), 10 and 100 queries; the persistent kernel's relaunches; every id valid and distinct,
// distances ascending and, for byte vectors, equal to the exact distance of the id returned;
// k = itopk; search_width, samplings, a tiny explicit hash, tiny indexes; the automatic choice
// between the two kernels (cuda::choose_algo) and the `automatic` backend. The multi-CTA answer
// depends on which CTA meets a node first, so it is compared by recall, never bit for bit.
// CudaMultiCtaSweep prints the paper's Q-B3 table: QPS and recall of single- vs multi-CTA over
// batch sizes 1..10,000. Needs a GPU: label `cuda` (scripts/dev/device-check.sh runs it).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bigann_fixture.hpp"
#include "core/convert.hpp"
#include "core/plan.hpp"
#include "cuda/backend.hpp"
#include "search_results.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

/** The GPU's answer with kernel `algo` (multi-CTA unless asked otherwise). */
result gpu_run(const cagra::index& idx, const host_matrix& q, uint32_t k, search_params p,
               search_algo algo = search_algo::multi_cta, int64_t batch = 0) {
  p.algo = algo;
  return gpu_search(idx, q, k, p, batch);
}

/** Runs both backends: multi-CTA recall >= CPU recall - `margin` (1 point unless given), and a
 *  well-formed output. */
double compare(const std::string& what, const cagra::index& idx, const host_matrix& q,
               matrix_view<const uint32_t> truth, const search_params& p, int64_t batch = 0,
               uint32_t k = 10, double margin = 0.01) {
  const result c = cpu_run(idx, q, k, p);
  const result g = gpu_run(idx, q, k, p, search_algo::multi_cta, batch);
  const double rc = recall(c.view(), truth, k), rg = recall(g.view(), truth, k);
  std::printf("[ cuda     ] multi-CTA %-40s recall@%u cpu %.4f gpu %.4f\n", what.c_str(), k, rc,
              rg);
  EXPECT_GE(rg, rc - margin) << what;
  expect_well_formed(g, idx.size(), what);
  return rg;
}

host_matrix halved_i8(const host_matrix& u8) {
  host_matrix out(dtype::i8, u8.rows(), u8.cols());
  for (int64_t i = 0; i < u8.rows() * u8.cols(); ++i)
    out.as<int8_t>().data[i] = int8_t(static_cast<const uint8_t*>(u8.data())[i] / 2);
  return out;
}

knn_graph exact(metric m, const host_matrix& base, const host_matrix& q) {
  resources cpu;
  cpu.target = backend::cpu;
  return brute_force_knn(cpu, m, base, q, 10);
}

/** bigann10k in every storage type: f32 / f16 rows hold the u8 values / 255 (so inner products
 *  stay small), i8 rows u8 / 2. */
struct typed_sets {
  struct data {
    const char* name;
    const host_matrix* base;
    const host_matrix* q;
    storage_type s;
  };
  explicit typed_sets(const real_set& set)
      : base_f(scaled_f32(set.base, 1.0f / 255)), q_f(scaled_f32(set.queries, 1.0f / 255)),
        base_i8(halved_i8(set.base)),
        q_i8(halved_i8(set.queries)), all{data{"u8", &set.base, &set.queries,
                                               storage_type::same_as_input},
                                          data{"i8", &base_i8, &q_i8, storage_type::same_as_input},
                                          data{"f32", &base_f, &q_f, storage_type::same_as_input},
                                          data{"f16", &base_f, &q_f, storage_type::f16}} {}
  typed_sets(const typed_sets&) = delete;  // `all` points into it
  typed_sets& operator=(const typed_sets&) = delete;
  host_matrix base_f, q_f, base_i8, q_i8;
  std::vector<data> all;
};

class CudaMultiCta : public bigann_gpu_suite {};

TEST_F(CudaMultiCta, RecallMatchesCpuEveryTypeAndMetric) {
  // u8 and i8 with cosine are stored as f32 (normalized), like the CPU backend does.
  const typed_sets sets(*set_);
  for (const typed_sets::data& d : sets.all)
    for (metric m : {metric::l2, metric::inner_product, metric::cosine}) {
      index_params ip = small_params(32, m);
      ip.storage = d.s;
      const cagra::index idx = build({}, ip, *d.base);
      const knn_graph gt = exact(m, *d.base, *d.q);
      for (uint32_t it : {64u, 256u, 1024u}) {
        const std::string what = std::string(d.name) + " (" + to_string(idx.storage_dtype()) +
                                 ") " + to_string(m) + " itopk " + std::to_string(it);
        compare(what, idx, *d.q, gt.view(), itopk(it));
      }
    }
}

TEST_F(CudaMultiCta, BatchesOf1And10And100) {
  const host_matrix base_f = scaled_f32(set_->base, 1.0f / 255),
                    q_f = scaled_f32(set_->queries, 1.0f / 255);
  const cagra::index f32 = build({}, small_params(), base_f);
  for (uint32_t it : {64u, 256u, 1024u})
    for (int64_t batch : {1, 10, 100}) {
      const std::string tail = " itopk " + std::to_string(it) + " batch " + std::to_string(batch);
      compare("u8 l2" + tail, *u8_, set_->queries, truth(), itopk(it), batch);
      compare("f32 l2" + tail, f32, q_f, truth(), itopk(it), batch);
      if (batch == 1) {  // the default runs the persistent kernel; a launch per query too
        search_params launch = itopk(it);
        launch.persistent = false;
        compare("u8 l2" + tail + " launch", *u8_, set_->queries, truth(), launch, batch);
        compare("f32 l2" + tail + " launch", f32, q_f, truth(), launch, batch);
      }
    }
}

TEST_F(CudaMultiCta, ExactByteDistancesAndKEqualsItopk) {
  // Byte vectors: each distance must be the exact one of the id returned (integer sums).
  const auto* base = static_cast<const uint8_t*>(set_->base.data());
  const auto* qs = static_cast<const uint8_t*>(set_->queries.data());
  for (uint32_t it : {64u, 1024u}) {
    const result r =
        gpu_run(*u8_, set_->queries, it, itopk(it));  // k = itopk: lists for 2k entries
    expect_well_formed(r, u8_->size(), "k = itopk " + std::to_string(it));
    size_t wrong = 0;
    for (int64_t q = 0; q < r.rows; ++q)
      for (uint32_t j = 0; j < r.k; ++j) {
        const uint32_t id = r.ids[q * r.k + j];
        if (id >= u8_->size()) continue;
        int64_t s = 0;
        for (int e = 0; e < 128; ++e) {
          const int64_t diff = int64_t(qs[q * 128 + e]) - int64_t(base[int64_t(id) * 128 + e]);
          s += diff * diff;
        }
        wrong += r.dist[q * r.k + j] != float(s);
      }
    EXPECT_EQ(wrong, 0u) << "itopk " << it;
  }
  // k = itopk = 64: each CTA's list holds 32, so the answer rests on which CTA reached a node
  // first, a race; the GPU's recall@64 varied from 0.9814 to 0.9945 between runs of the same
  // code (CPU 0.9939; bench/results/logs/cuda-tests-*): 2 points of margin, not 1.
  compare("u8 l2 itopk 64 k 64", *u8_, set_->queries, truth(), itopk(64), 0, 64, 0.02);
}

TEST_F(CudaMultiCta, WidthSamplingsSmallHashAndIterations) {
  struct cfg {
    uint32_t itopk, width, samplings, hash_bits, min_it, max_it;
  };
  for (cfg c : {cfg{64, 4, 1, 0, 0, 0}, cfg{64, 1, 3, 0, 0, 0}, cfg{32, 8, 2, 0, 0, 0},
                cfg{128, 1, 1, 0, 40, 0}, cfg{1024, 1, 1, 0, 0, 0}, cfg{1024, 64, 1, 0, 0, 0}}) {
    search_params p = itopk(c.itopk);
    p.search_width = c.width;
    p.num_random_samplings = c.samplings;
    p.hash_bits = c.hash_bits;
    p.min_iterations = c.min_it;
    char what[96];
    std::snprintf(what, sizeof what, "itopk %u width %u samplings %u min_it %u", c.itopk, c.width,
                  c.samplings, c.min_it);
    compare(what, *u8_, set_->queries, truth(), p);
  }
  // A device hash far too small (2^8 slots for ~2,000 visited nodes): nodes that find no free slot
  // are skipped; the search must still end with valid, distinct ids. Likewise a tight iteration
  // cap.
  search_params p = itopk(64);
  p.hash_bits = 8;
  expect_well_formed(gpu_run(*u8_, set_->queries, 10, p), u8_->size(), "hash 2^8");
  p = itopk(256);
  p.max_iterations = 3;
  expect_well_formed(gpu_run(*u8_, set_->queries, 10, p), u8_->size(), "max_iterations 3");
}

TEST(CudaMultiCtaSmall, TinyIndexesAndIdenticalVectors) {
  ASSERT_GT(cuda::device_count(), 0) << "no CUDA device: the cuda tests need a GPU";
  // k = n on a 9-node index: every node exactly once, nearest first.
  host_matrix tiny(dtype::f32, 9, 4);
  for (int i = 0; i < 36; ++i) tiny.as<float>().data[i] = float(i % 7) + float(i / 4);
  index_params ip = small_params(4);
  ip.intermediate_graph_degree = 8;
  const cagra::index idx = build({}, ip, tiny);
  const result r = gpu_run(idx, tiny, 9, itopk(64));
  expect_well_formed(r, 9, "tiny");
  for (int q = 0; q < 9; ++q) EXPECT_EQ(r.ids[q * 9], uint32_t(q));
  // All vectors equal: every distance 0, ids distinct.
  host_matrix same(dtype::u8, 200, 16);
  std::fill_n(static_cast<uint8_t*>(same.data()), same.size_bytes(), uint8_t(7));
  const cagra::index idx_same = build({}, small_params(8), same);
  const result s = gpu_run(idx_same, head(same, 3), 10, itopk(64));
  expect_well_formed(s, 200, "identical vectors");
  for (float d : s.dist) EXPECT_EQ(d, 0.0f);
}

TEST_F(CudaMultiCta, AutomaticChoice) {
  using A = search_algo;
  // The rule (paper §IV-C3), for a 132-SM device: multi-CTA below 132 queries or above itopk 512.
  const auto algo_for = [&](int sms, int64_t batch, uint32_t m, A requested = A::automatic) {
    search_params p = itopk(m);
    p.algo = requested;
    return core::make_search_plan(backend::cuda, p, core::shape_of(*u8_), 10, batch,
                                  memory_space::host, sms)
        .algo;
  };
  EXPECT_EQ(algo_for(132, 1, 64), A::multi_cta);
  EXPECT_EQ(algo_for(132, 131, 64), A::multi_cta);
  EXPECT_EQ(algo_for(132, 132, 64), A::single_cta);
  EXPECT_EQ(algo_for(132, 10000, 512), A::single_cta);
  EXPECT_EQ(algo_for(132, 10000, 513), A::multi_cta);
  EXPECT_EQ(algo_for(132, 10000, 1024), A::multi_cta);
  EXPECT_EQ(algo_for(132, 10000, 64, A::multi_cta), A::multi_cta);  // forced
  EXPECT_EQ(algo_for(132, 1, 64, A::single_cta), A::single_cta);    // forced
  // The automatic CTA count (core/plan.cpp, auto_ctas_per_query; tests/cpu/test_params.cpp has
  // the whole rule): 64 / 16 / 8 CTAs at batch 1 / 10 / 100 on 132 SMs; a forced kernel keeps
  // max(width, lists for itopk and 2k) = 2.
  const auto ctas_for = [&](int64_t batch, A requested = A::automatic) {
    search_params p = itopk(64);
    p.algo = requested;
    return core::make_search_plan(backend::cuda, p, core::shape_of(*u8_), 10, batch,
                                  memory_space::host, 132)
        .ctas_per_query;
  };
  EXPECT_EQ(ctas_for(1), 64u);
  EXPECT_EQ(ctas_for(10), 16u);
  EXPECT_EQ(ctas_for(100), 8u);
  EXPECT_EQ(ctas_for(1, A::multi_cta), 2u);
  // The device's SM count.
  const int sm = cuda::cuda_info(0).sm_count;
  const auto device_algo = [&](int64_t batch, uint32_t m) {
    return gpu_plan(*u8_, itopk(m), 10, batch).algo;
  };
  std::printf("[ cuda     ] automatic choice on %d SMs: batch %d -> %s, batch %d -> %s\n", sm,
              sm - 1, to_string(device_algo(sm - 1, 64)), sm, to_string(device_algo(sm, 64)));
  EXPECT_EQ(device_algo(sm - 1, 64), A::multi_cta);
  EXPECT_EQ(device_algo(sm, 64), A::single_cta);
  EXPECT_EQ(device_algo(sm, 1024), A::multi_cta);

  // Forced single-CTA with itopk > 512 is a clear error; automatic takes it (multi-CTA).
  try {
    gpu_run(*u8_, set_->queries, 10, itopk(1024), A::single_cta);
    ADD_FAILURE() << "single-CTA with itopk 1024 should throw";
  } catch (const cagra::error& e) {
    EXPECT_NE(std::string(e.what()).find("multi-CTA"), std::string::npos) << e.what();
  }
  expect_well_formed(gpu_run(*u8_, set_->queries, 10, itopk(1024), A::automatic), u8_->size(),
                     "auto 1024");
  EXPECT_THROW(gpu_run(*u8_, set_->queries, 10, itopk(5000)),
               cagra::error);  // above the multi-CTA limit

  // The library's `automatic` backend searches on the GPU now, and on the CPU what the GPU does
  // not take (itopk > 4096).
  EXPECT_EQ(search_backend({}), backend::cuda);
  EXPECT_TRUE(core::gpu_takes(core::shape_of(*u8_), 4096));
  EXPECT_FALSE(core::gpu_takes(core::shape_of(*u8_), 4097));
  std::vector<uint32_t> ids(100 * 10);
  search({}, itopk(64), *u8_, set_->queries, 10, {ids.data(), 100, 10}, {});
  EXPECT_GE(recall({ids.data(), 100, 10}, truth(), 10), 0.98);
  search({}, itopk(5000), *u8_, head(set_->queries, 2), 10, {ids.data(), 2, 10}, {});
  EXPECT_GE(recall({ids.data(), 2, 10}, {truth().data, 2, truth().cols}, 10), 0.9);
}

// search_params::persistent: the resident kernel answers query after query like a launch per
// query does (recall within a point of the CPU, well-formed rows, every type), survives a
// change of configuration (relaunch), a batch search in between (stopped, then relaunched), an
// idle pause past its lifetime (it leaves; the next query launches it again) and the index's
// destruction (stopped first).
TEST_F(CudaMultiCta, PersistentKernel) {
  const host_matrix base_f = scaled_f32(set_->base, 1.0f / 255),
                    q_f = scaled_f32(set_->queries, 1.0f / 255);
  for (uint32_t it : {32u, 64u}) {
    search_params p = itopk(it);
    p.search_width = 16;
    p.persistent = true;
    const result c = cpu_run(*u8_, set_->queries, 10, p);
    const result g = gpu_run(*u8_, set_->queries, 10, p, search_algo::multi_cta, 1);
    const double rc = recall(c.view(), truth(), 10), rg = recall(g.view(), truth(), 10);
    std::printf(
        "[ cuda     ] persistent u8 itopk %u, 16 CTAs, queries one by one: recall@10 cpu %.4f gpu "
        "%.4f\n",
        it, rc, rg);
    EXPECT_GE(rg, rc - 0.01);
    expect_well_formed(g, u8_->size(), "persistent");
    // A batch in between stops the kernel; the next batch-1 query starts it again.
    const result b = gpu_run(*u8_, set_->queries, 10, itopk(it), search_algo::multi_cta, 10);
    expect_well_formed(b, u8_->size(), "batch between persistent runs");
  }
  {  // f16 storage, cosine, k = 1 and distances; then the index goes while the kernel runs
    index_params ip = small_params(32, metric::cosine);
    ip.storage = storage_type::f16;
    const cagra::index f16 = build({}, ip, base_f);
    search_params p = itopk(32);
    p.persistent = true;
    const result g = gpu_run(f16, q_f, 1, p, search_algo::multi_cta, 1);
    expect_well_formed(g, f16.size(), "persistent f16 cosine");
    const result c = cpu_run(f16, q_f, 1, p);
    EXPECT_GE(recall(g.view(), c.view(), 1), 0.9);
  }
  // Idle past the kernel's lifetime (1 ms): it leaves; the next query launches it again.
  search_params p = itopk(32);
  p.persistent = true;
  const host_matrix q1 = repeat_rows(set_->queries, 1);
  const result before = gpu_run(*u8_, q1, 10, p, search_algo::multi_cta, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const result after = gpu_run(*u8_, q1, 10, p, search_algo::multi_cta, 1);
  expect_well_formed(after, u8_->size(), "persistent after idle exit");
  EXPECT_EQ(recall(after.view(), before.view(), 10) > 0.8, true);
}

// The persistent kernel's initial nodes from the pool (core/initial_pool.hpp): the automatic
// plan takes it at batch 1 (32 rows a CTA on bigann10k: a pool of a quarter of the rows at
// most), for every storage type and metric, at the recall of the CPU within 2 points, well
// formed; an explicit initial-node count or a launch per query keeps the random nodes.
TEST_F(CudaMultiCta, InitialPoolEveryTypeAndMetric) {
  resources gpu;
  gpu.target = backend::cuda;
  const typed_sets sets(*set_);
  for (const typed_sets::data& d : sets.all)
    for (metric m : {metric::l2, metric::cosine}) {
      index_params ip = small_params(32, m);
      ip.storage = d.s;
      const cagra::index idx = build({}, ip, *d.base);
      const knn_graph gt = exact(m, *d.base, *d.q);
      const search_params p = itopk(32);  // persistent at batch 1 by default
      const search_plan plan = plan_search(gpu, p, idx, 10, 1);
      ASSERT_EQ(plan.io, search_io::persistent);
      EXPECT_EQ(plan.pool_rows_per_cta, 32u) << d.name;
      EXPECT_EQ(plan.initial_nodes, 0u);
      const result c = cpu_run(idx, *d.q, 10, p);
      const result g = gpu_search(idx, *d.q, 10, p, 1);
      const double rc = recall(c.view(), gt.view(), 10), rg = recall(g.view(), gt.view(), 10);
      std::printf("[ cuda     ] initial pool %s (%s) %-8s recall@10 cpu %.4f gpu %.4f\n", d.name,
                  to_string(idx.storage_dtype()), to_string(m), rc, rg);
      EXPECT_GE(rg, rc - 0.02) << d.name << " " << to_string(m);
      expect_well_formed(g, idx.size(), "initial pool");
    }
  search_params random = itopk(32);
  random.num_random_samplings = 3;
  EXPECT_EQ(plan_search(gpu, random, *u8_, 10, 1).pool_rows_per_cta, 0u);
  random = itopk(32);
  random.persistent = false;
  EXPECT_EQ(plan_search(gpu, random, *u8_, 10, 1).pool_rows_per_cta, 0u);
}

// The pool below degree 32: each CTA's 32 picks fill a candidate buffer sized for a parent's
// neighbors (fewer), so the buffers must take the picks (launch_args.cpp): degrees 16 and 30 at
// the recall of the CPU within 2 points, well formed (the memcheck run covers it: InitialPool*).
TEST_F(CudaMultiCta, InitialPoolBelowDegree32) {
  for (uint32_t degree : {16u, 30u}) {
    const cagra::index idx = build({}, small_params(degree), set_->base);
    const search_params p = itopk(32);  // persistent, from the pool, at batch 1
    ASSERT_GT(gpu_plan(idx, p, 10, 1).pool_rows_per_cta, 0u) << "degree " << degree;
    const result c = cpu_run(idx, set_->queries, 10, p);
    const result g = gpu_search(idx, set_->queries, 10, p, 1);
    const double rc = recall(c.view(), truth(), 10), rg = recall(g.view(), truth(), 10);
    std::printf("[ cuda     ] initial pool, degree %u: recall@10 cpu %.4f gpu %.4f\n", degree, rc,
                rg);
    EXPECT_GE(rg, rc - 0.02) << "degree " << degree;
    expect_well_formed(g, idx.size(), "initial pool, degree " + std::to_string(degree));
  }
}

// A relaunch of the persistent kernel initializes nothing: the kernel empties its visited hash
// on the way out (persistent.cuh). One query, searched again and again at the default shape
// (64 CTAs), must find the same neighbors every time: in one launch (the two hash halves in
// turn), after an idle exit, after a stop (a batch search in between), after a relaunch with
// another shape, after queries of another index. A half left dirty would hold the query's own
// visited nodes, so the next search on it would find almost nothing.
TEST_F(CudaMultiCta, PersistentKernelLeavesItsStateClean) {
  const host_matrix q1 = repeat_rows(set_->queries, 1);
  const search_params p = itopk(64);
  ASSERT_EQ(gpu_plan(*u8_, p, 10, 1).io, search_io::persistent) << "the default at batch 1";
  const result first = gpu_search(*u8_, q1, 10, p, 1);
  expect_well_formed(first, u8_->size(), "first");
  const auto again = [&](const std::string& what) {
    for (int i = 0; i < 4; ++i) {  // jobs 0-3 of a launch: hash regions 0, 1, 2, 0
      const result r = gpu_search(*u8_, q1, 10, p, 1);
      expect_well_formed(r, u8_->size(), what);
      EXPECT_GE(recall(r.view(), first.view(), 10), 0.9) << what << ", search " << i;
    }
  };
  again("one launch");
  for (int pause_ms : {5, 50}) {
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    again("after an idle exit");
  }
  (void)gpu_search(*u8_, head(set_->queries, 10), 10, p, 10);  // stops it
  again("after a stop");
  search_params other = itopk(32);  // another shape: stopped and launched with it
  other.search_width = 16;
  expect_well_formed(gpu_search(*u8_, head(set_->queries, 5), 10, other, 1), u8_->size(),
                     "16 CTAs");
  again("after another shape");
  const cagra::index second = build({}, small_params(), head(set_->base, 3000));
  expect_well_formed(gpu_search(second, head(set_->queries, 5), 10, p, 1), second.size(),
                     "another index");
  again("after another index");
  search_params off = p;  // a launch per query stops it
  off.persistent = false;
  const result launched = gpu_search(*u8_, q1, 10, off, 1);
  EXPECT_GE(recall(launched.view(), first.view(), 10), 0.9) << "a launch per query";
  again("after a launch per query");
}

// One CTA per query makes the multi-CTA search deterministic, so every way a query can travel
// must give the same answer: batch 1 with the query in the launch and its seed state hashed by
// the host (query_seed_state), batch 2 with the lists merged on the host and the state hashed
// by the kernel, batch 100 merged by the last CTA, and the persistent kernel (state from the
// host, query relayed through device memory).
TEST_F(CudaMultiCta, SameAnswerOnEveryPath) {
  search_params p = itopk(32);
  p.search_width = 1;
  p.persistent = false;  // batch 1: a launch per query
  const host_matrix q = head(set_->queries, 100);
  const result one = gpu_run(*u8_, q, 10, p, search_algo::multi_cta, 1);
  const result two = gpu_run(*u8_, q, 10, p, search_algo::multi_cta, 2);
  const result all = gpu_run(*u8_, q, 10, p, search_algo::multi_cta, 100);
  p.persistent = true;
  const result pers = gpu_run(*u8_, q, 10, p, search_algo::multi_cta, 1);
  EXPECT_EQ(one.ids, two.ids);
  EXPECT_EQ(one.ids, all.ids);
  EXPECT_EQ(one.ids, pers.ids);
  EXPECT_EQ(one.dist, all.dist);
  EXPECT_EQ(one.dist, pers.dist);
  expect_well_formed(one, u8_->size(), "one CTA, batch 1");
  // Relaunched after idle exits and stops (the state it left, never initialized again): the
  // same answers.
  result relaunched = pers;
  for (int64_t i = 0; i < q.rows(); ++i) {
    if (i % 10 == 3) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (i % 10 == 7) (void)gpu_run(*u8_, head(q, 2), 10, p, search_algo::multi_cta, 2);
    const result r = gpu_run(*u8_, slice(q, i, 1), 10, p, search_algo::multi_cta, 1);
    std::copy(r.ids.begin(), r.ids.end(), relaunched.ids.begin() + i * 10);
    std::copy(r.dist.begin(), r.dist.end(), relaunched.dist.begin() + i * 10);
  }
  EXPECT_EQ(one.ids, relaunched.ids);
  EXPECT_EQ(one.dist, relaunched.dist);
}

TEST_F(CudaMultiCta, SanitizerCase) {
  // Small and quick, every code path once: for compute-sanitizer (memcheck, racecheck).
  const host_matrix q = head(set_->queries, 4);
  search_params p = itopk(64);
  p.num_random_samplings = 2;  // 64 initial nodes per CTA: two merge rounds
  expect_well_formed(gpu_run(*u8_, q, 10, p), u8_->size(), "itopk 64, samplings 2");
  p = itopk(1024);
  p.max_iterations = 12;
  expect_well_formed(gpu_run(*u8_, q, 64, p), u8_->size(),
                     "itopk 1024 (32 CTAs, 1024-entry merge)");
  p = itopk(64);
  p.hash_bits = 8;  // the table fills up: bounded probing
  p.max_iterations = 20;
  expect_well_formed(gpu_run(*u8_, q, 10, p), u8_->size(), "hash 2^8");
  index_params hp = small_params();
  hp.storage = storage_type::f16;
  const cagra::index h = build({}, hp, head(set_->base, 2000));
  p = itopk(32);
  p.search_width = 2;
  expect_well_formed(gpu_run(h, q, 10, p), h.size(), "f16, width 2");
}

}  // namespace
}  // namespace cagra::test
