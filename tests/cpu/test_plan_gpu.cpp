// The GPU search plan, resolved on any machine (core::make_search_plan takes the SM count, so
// these run without a GPU): the multi-CTA kernel's automatic CTA count, iterations and initial
// nodes by batch, the persistent batch-1 path, and the kernels' CTA and hash sizes.
#include <string>

#include <gtest/gtest.h>

#include <cagra/plan.hpp>

#include "core/plan.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

// The automatic CTA count of the multi-CTA search (core/plan.cpp, auto_ctas_per_query), planned
// for a 132-SM GPU without one (make_search_plan takes the SM count): SIFT-wall-1M's shape
// (1M x 128 u8, degree 32), defaults (itopk 64, search_width 1), k 10. The sweep it follows
// found 64 CTAs best at batch 1, 16 at 10, 8 at 100; a search_width the user sets, a forced
// kernel, an explicit max_iterations or num_random_samplings are kept as before.
TEST(Plan, AutomaticCtasFollowTheBatch) {
  const core::index_shape sift{1000000, 128, 32, dtype::u8, metric::l2};
  const auto plan = [&](const search_params& p, int64_t batch, const core::index_shape& shape) {
    return core::make_search_plan(backend::cuda, p, shape, 10, batch, memory_space::host, 132);
  };
  struct want {
    int64_t batch;
    uint32_t ctas, iterations, initial_nodes;
  };
  // Budget itopk + 16 + log2 N = 100 split over the CTAs, at least 4 at 64 CTAs and 2 more per
  // halving; 3d initial nodes per CTA from 32 CTAs up (5 samplings at 1M rows, at most 3). (At
  // batch 1 a launch per query: the persistent kernel takes the initial-node pool instead,
  // Plan.PersistentTakesTheInitialPool.)
  search_params launch;
  launch.persistent = false;
  for (const want& w : {want{1, 64, 4, 96}, want{2, 64, 4, 96}, want{4, 32, 6, 96},
                        want{10, 16, 8, 32}, want{100, 8, 13, 32}, want{131, 8, 13, 32}}) {
    const search_plan s = plan(launch, w.batch, sift);
    EXPECT_EQ(s.algo, search_algo::multi_cta) << w.batch;
    EXPECT_EQ(s.ctas_per_query, w.ctas) << "batch " << w.batch;
    EXPECT_EQ(s.max_iterations, w.iterations) << "batch " << w.batch;
    EXPECT_EQ(s.initial_nodes, w.initial_nodes) << "batch " << w.batch;
    EXPECT_EQ(s.search_width, 1u);
    EXPECT_NE(to_string(s).find(" ctas_per_query=" + std::to_string(w.ctas)), std::string::npos)
        << to_string(s);
  }
  // A short list (itopk <= 32) takes one iteration fewer: itopk moves batch-1 latency too.
  search_params short_list = launch;
  short_list.itopk_size = 32;
  EXPECT_EQ(plan(short_list, 1, sift).max_iterations, 3u);
  EXPECT_EQ(plan(short_list, 10, sift).max_iterations, 7u);
  short_list.itopk_size = 33;
  EXPECT_EQ(plan(short_list, 1, sift).max_iterations, 4u);
  // Batch >= SM count: the single-CTA kernel with 2 parents per iteration (search_width left at
  // 1), the budget unchanged, one random sampling (num_random_samplings left at 0): the initial
  // draws of width 2, 64 + 2 x 32 x 1 = 128. An explicit sampling count is kept (5: 384).
  const search_plan big = plan(search_params{}, 10000, sift);
  EXPECT_EQ(big.algo, search_algo::single_cta);
  EXPECT_EQ(big.ctas_per_query, 1u);
  EXPECT_EQ(big.search_width, 2u);
  EXPECT_EQ(big.max_iterations, 100u);
  EXPECT_EQ(big.random_samplings, 1u);
  EXPECT_EQ(big.initial_nodes, 128u);
  search_params five;
  five.num_random_samplings = 5;
  EXPECT_EQ(plan(five, 10000, sift).initial_nodes, 384u);
  // A forced kernel, an explicit width or a filter keep the width as given.
  search_params single;
  single.algo = search_algo::single_cta;
  EXPECT_EQ(plan(single, 10000, sift).search_width, 1u);
  EXPECT_EQ(plan(single, 10000, sift).initial_nodes, 224u);
  search_params w3;
  w3.search_width = 3;
  EXPECT_EQ(plan(w3, 10000, sift).search_width, 3u);
  // Above 64 search_width is for the multi-CTA kernel (its CTAs a query): the automatic kernel
  // choice takes it at any batch, a forced single-CTA kernel says why it refuses.
  search_params w128;
  w128.search_width = 128;
  EXPECT_EQ(plan(w128, 10000, sift).algo, search_algo::multi_cta);
  EXPECT_EQ(plan(w128, 10000, sift).ctas_per_query, 128u);
  EXPECT_EQ(plan(w128, 1, sift).ctas_per_query, 128u);
  w128.algo = search_algo::single_cta;
  w128.search_width = 65;
  try {
    plan(w128, 10000, sift);
    ADD_FAILURE() << "no cagra::error for a single-CTA width of 65";
  } catch (const cagra::error& e) {
    EXPECT_NE(std::string(e.what()).find("multi-CTA"), std::string::npos) << e.what();
  }
  // Degree 64: the same counts, 3d = 192 initial nodes per CTA at 64 CTAs.
  core::index_shape d64 = sift;
  d64.degree = 64;
  EXPECT_EQ(plan(launch, 1, d64).initial_nodes, 192u);
  EXPECT_EQ(plan(launch, 1, d64).ctas_per_query, 64u);
  // Below 100K rows (one sampling) the initial nodes stay d per CTA.
  const core::index_shape small{10000, 128, 32, dtype::u8, metric::l2};
  EXPECT_EQ(plan(launch, 1, small).initial_nodes, 32u);
  // A long list needs more CTAs than the rule gives: the lists win (itopk 1024: 32).
  search_params long_list;
  long_list.itopk_size = 1024;
  EXPECT_EQ(plan(long_list, 100, sift).ctas_per_query, 32u);

  // An explicit search_width is the CTA count, with the plain split budget and d initial nodes.
  search_params w2;
  w2.search_width = 2;
  const search_plan e2 = plan(w2, 1, sift);
  EXPECT_EQ(e2.ctas_per_query, 2u);
  EXPECT_EQ(e2.max_iterations, 50u);
  EXPECT_EQ(e2.initial_nodes, 32u);
  search_params w32;
  w32.search_width = 32;
  const search_plan e32 = plan(w32, 10, sift);
  EXPECT_EQ(e32.ctas_per_query, 32u);
  EXPECT_EQ(e32.max_iterations, 4u);
  EXPECT_EQ(e32.initial_nodes, 32u);
  // A forced kernel keeps the old count (max(width, lists for itopk and 2k) = 2).
  search_params forced;
  forced.algo = search_algo::multi_cta;
  EXPECT_EQ(plan(forced, 1, sift).ctas_per_query, 2u);
  EXPECT_EQ(plan(forced, 1, sift).max_iterations, 50u);
  // Explicit iterations and samplings are kept under the automatic count.
  search_params it;
  it.max_iterations = 10;
  EXPECT_EQ(plan(it, 1, sift).ctas_per_query, 64u);
  EXPECT_EQ(plan(it, 1, sift).max_iterations, 10u);
  search_params smp;
  smp.num_random_samplings = 2;
  EXPECT_EQ(plan(smp, 1, sift).initial_nodes, 64u);
  // A filtered graph search takes the automatic count too (64 at batch 1, 8 at 100), with the
  // same iterations: at batch 1 under one bitset the resident kernel's, from the pool (2, as
  // unfiltered); its grown list raises the count where it needs more lists. A forced kernel
  // keeps the old count there as well.
  const auto filtered = [&](const search_params& p, int64_t batch, int64_t allowed) {
    return core::make_search_plan(backend::cuda, p, sift, 10, batch, memory_space::host, 132,
                                  filter_kind::shared, allowed);
  };
  EXPECT_EQ(filtered(search_params{}, 1, 900000).ctas_per_query, 64u);
  EXPECT_EQ(filtered(search_params{}, 1, 900000).max_iterations, 2u);
  EXPECT_EQ(filtered(search_params{}, 1, 900000).io, search_io::persistent);
  EXPECT_EQ(filtered(search_params{}, 100, 700000).ctas_per_query, 8u);
  EXPECT_EQ(filtered(search_params{}, 100, 700000).max_iterations, 13u);  // (64 + 16 + 20) / 8
  EXPECT_EQ(filtered(forced, 1, 900000).ctas_per_query, 2u);
  // The single-CTA kernel's automatic shape (width 2, one sampling) under one shared bitset
  // too (an index with deleted rows: its live rows), not under a filter per query.
  EXPECT_EQ(filtered(search_params{}, 10000, 900000).search_width, 2u);
  EXPECT_EQ(filtered(search_params{}, 10000, 900000).random_samplings, 1u);
  EXPECT_EQ(core::make_search_plan(backend::cuda, search_params{}, sift, 10, 10000,
                                   memory_space::host, 132, filter_kind::per_query, 900000)
                .search_width,
            1u);
  // Another SM count scales the rule: 46 SMs, batch 1: 2^round(log2 23) = 32.
  EXPECT_EQ(
      core::make_search_plan(backend::cuda, search_params{}, sift, 10, 1, memory_space::host, 46)
          .ctas_per_query,
      32u);
}

// search_params::persistent is on by default: a default batch-1 host search on the GPU's
// multi-CTA kernel goes through the resident kernel (io persistent), whatever its shape, and so
// does one under a shared filter; off, a filter per query, a larger batch, queries in device
// memory, the single-CTA kernel or the CPU take their usual paths (core/plan_kernels.cpp,
// choose_io). Planned for a 132-SM GPU without one.
TEST(Plan, PersistentIsTheBatchOneDefault) {
  EXPECT_TRUE(search_params{}.persistent);
  const core::index_shape sift{1000000, 128, 32, dtype::u8, metric::l2};
  const auto plan = [&](const search_params& p, int64_t batch,
                        memory_space space = memory_space::host) {
    return core::make_search_plan(backend::cuda, p, sift, 10, batch, space, 132);
  };
  const search_plan one = plan(search_params{}, 1);
  EXPECT_EQ(one.algo, search_algo::multi_cta);
  EXPECT_EQ(one.io, search_io::persistent);
  EXPECT_NE(to_string(one).find(" io=persistent "), std::string::npos) << to_string(one);
  // The resident kernel's lifetime: 1 ms unless set, in the plan (and its line) only there.
  EXPECT_EQ(one.persistent_lifetime_us, 1000u);
  EXPECT_NE(to_string(one).find(" persistent_lifetime_us=1000"), std::string::npos);
  search_params longer;
  longer.persistent_lifetime_us = 20000;
  EXPECT_EQ(plan(longer, 1).persistent_lifetime_us, 20000u);
  EXPECT_EQ(plan(longer, 2).persistent_lifetime_us, 0u) << "batch 2 launches per call";
  EXPECT_EQ(to_string(plan(longer, 2)).find("persistent_lifetime_us"), std::string::npos);
  search_params shaped;  // an explicit shape and kernel: still resident
  shaped.algo = search_algo::multi_cta;
  shaped.search_width = 16;
  shaped.itopk_size = 1024;
  EXPECT_EQ(plan(shaped, 1).io, search_io::persistent);
  search_params off;
  off.persistent = false;
  EXPECT_EQ(plan(off, 1).io, search_io::host_merge) << "a launch per call";
  // Only where every CTA of the query can be resident at once (one per SM always fits): itopk
  // 4096 takes 128 CTAs, resident on 132 SMs, launched per query on 64.
  search_params wide;
  wide.itopk_size = 4096;
  EXPECT_EQ(plan(wide, 1).ctas_per_query, 128u);
  EXPECT_EQ(plan(wide, 1).io, search_io::persistent);
  const search_plan small_gpu =
      core::make_search_plan(backend::cuda, wide, sift, 10, 1, memory_space::host, 64);
  EXPECT_EQ(small_gpu.ctas_per_query, 128u);
  EXPECT_EQ(small_gpu.io, search_io::host_merge) << "128 CTAs on 64 SMs: launched per query";
  EXPECT_EQ(plan(search_params{}, 2).io, search_io::host_merge);
  EXPECT_EQ(plan(search_params{}, 1, memory_space::device).io, search_io::device);
  search_params single;
  single.algo = search_algo::single_cta;
  EXPECT_EQ(plan(single, 1).io, search_io::mapped);
  const search_plan filtered =
      core::make_search_plan(backend::cuda, search_params{}, sift, 10, 1, memory_space::host, 132,
                             filter_kind::shared, 900000);
  EXPECT_EQ(filtered.algo, search_algo::multi_cta);
  EXPECT_EQ(filtered.io, search_io::persistent) << "one bitset: the resident kernel serves it";
  // At 85% or more allowed the kernel walks unfiltered and the host's merge drops the rest
  // (filter_in_merge, in the plan's line); below, or with the graph path asked for, the kernel
  // reads the bitset; never at other batches.
  EXPECT_TRUE(filtered.filter_in_merge);
  EXPECT_NE(to_string(filtered).find(" filter_in_merge=1"), std::string::npos)
      << to_string(filtered);
  const auto shared = [&](const search_params& p, int64_t batch, int64_t allowed) {
    return core::make_search_plan(backend::cuda, p, sift, 10, batch, memory_space::host, 132,
                                  filter_kind::shared, allowed);
  };
  EXPECT_TRUE(shared(search_params{}, 1, 999000).filter_in_merge);
  EXPECT_TRUE(shared(search_params{}, 1, 850000).filter_in_merge);
  EXPECT_FALSE(shared(search_params{}, 1, 849999).filter_in_merge);
  EXPECT_EQ(shared(search_params{}, 1, 849999).io, search_io::persistent);
  EXPECT_EQ(to_string(shared(search_params{}, 1, 500000)).find("filter_in_merge"),
            std::string::npos);
  search_params graph;
  graph.filter = filter_algo::graph;
  EXPECT_FALSE(shared(graph, 1, 990000).filter_in_merge);
  EXPECT_FALSE(shared(search_params{}, 2, 990000).filter_in_merge);
  EXPECT_FALSE(shared(off, 1, 990000).filter_in_merge);
  EXPECT_FALSE(plan(search_params{}, 1).filter_in_merge) << "no filter";
  const search_plan per_query =
      core::make_search_plan(backend::cuda, search_params{}, sift, 10, 1, memory_space::host, 132,
                             filter_kind::per_query, 900000);
  EXPECT_EQ(per_query.io, search_io::host_merge) << "a bitset per query: a launch";
  EXPECT_EQ(
      core::make_search_plan(backend::cpu, search_params{}, sift, 10, 1, memory_space::host, 0).io,
      search_io::none);
}

// The persistent kernel's initial nodes from the pool (plan_kernels.cpp, take_initial_pool): on
// the automatic shape at batch 1 each CTA scans a slice of 768 rows (128-d u8; 192 for 128-d
// f32, 108 KiB at most; a pool of at most a quarter of the rows), no random initial nodes, and
// from a pool of 32K rows the automatic iteration floor one lower (itopk 32: 2, the default 64:
// 3); in the plan's line. A slice smaller than the random nodes it would replace is not taken.
// An explicit iteration count stays; explicit initial nodes, a forced kernel or width, a launch
// per query or a batch of 2 keep the random nodes.
TEST(Plan, PersistentTakesTheInitialPool) {
  const core::index_shape sift{1000000, 128, 32, dtype::u8, metric::l2};
  const auto plan = [&](const search_params& p,
                        const core::index_shape& shape = {1000000, 128, 32, dtype::u8, metric::l2},
                        int64_t batch = 1) {
    return core::make_search_plan(backend::cuda, p, shape, 10, batch, memory_space::host, 132);
  };
  const search_plan one = plan(search_params{});
  EXPECT_EQ(one.io, search_io::persistent);
  EXPECT_EQ(one.ctas_per_query, 64u);
  EXPECT_EQ(one.pool_rows_per_cta, 768u);
  EXPECT_EQ(one.initial_nodes, 0u);
  EXPECT_EQ(one.max_iterations, 2u) << "from a large pool the default itopk 64 is a short list";
  EXPECT_EQ(one.block_size, 256u) << "the largest: the scan's rows spread over more threads";
  EXPECT_NE(to_string(one).find(" pool_rows_per_cta=768"), std::string::npos) << to_string(one);
  search_params short_list;
  short_list.itopk_size = 32;
  EXPECT_EQ(plan(short_list).max_iterations, 2u);
  search_params longer;
  longer.itopk_size = 65;
  EXPECT_EQ(plan(longer).max_iterations, 3u);
  longer.itopk_size = 128;
  EXPECT_EQ(plan(longer).max_iterations, 3u);
  longer.itopk_size = 256;  // the budget split over 64 CTAs: (256 + 16 + 20) / 64, rounded up
  EXPECT_EQ(plan(longer).max_iterations, 5u);
  search_params capped;  // an explicit cap is each CTA's
  capped.max_iterations = 3;
  EXPECT_EQ(plan(capped).max_iterations, 3u);
  // 128-d f32: 192 rows a CTA, a pool of 12K rows, too few for one iteration fewer.
  const core::index_shape f32{1000000, 128, 32, dtype::f32, metric::l2};
  EXPECT_EQ(plan(search_params{}, f32).pool_rows_per_cta, 192u);
  EXPECT_EQ(plan(search_params{}, f32).max_iterations, 4u);
  EXPECT_EQ(plan(short_list, f32).max_iterations, 3u);
  // bigann10k's shape (CudaMultiCta.InitialPoolEveryTypeAndMetric): 32 rows a CTA, as many as
  // the d random nodes of a set below 100K rows, for u8 and f32 alike.
  EXPECT_EQ(plan(search_params{}, {10000, 128, 32, dtype::u8, metric::l2}).pool_rows_per_cta, 32u);
  EXPECT_EQ(plan(search_params{}, {10000, 128, 32, dtype::f32, metric::l2}).pool_rows_per_cta, 32u);
  // 384-d f32: 64 rows fit a slice, fewer than the 96 random nodes: no pool.
  const core::index_shape minilm{1000000, 384, 32, dtype::f32, metric::cosine};
  EXPECT_EQ(plan(search_params{}, minilm).pool_rows_per_cta, 0u);
  EXPECT_EQ(plan(search_params{}, minilm).initial_nodes, 96u);
  EXPECT_EQ(plan(search_params{}, {100000, 128, 32, dtype::u8, metric::l2}).pool_rows_per_cta,
            384u);
  search_params iterations;
  iterations.max_iterations = 5;
  EXPECT_EQ(plan(iterations).pool_rows_per_cta, 768u);
  EXPECT_EQ(plan(iterations).max_iterations, 5u);
  search_params random;
  random.num_random_samplings = 3;
  search_params forced;
  forced.algo = search_algo::multi_cta;
  search_params width;
  width.search_width = 64;
  search_params launch;
  launch.persistent = false;
  for (const search_params& p : {random, forced, width, launch}) {
    EXPECT_EQ(plan(p).pool_rows_per_cta, 0u);
    EXPECT_GT(plan(p).initial_nodes, 0u);
    EXPECT_EQ(to_string(plan(p)).find("pool_rows_per_cta"), std::string::npos);
  }
  EXPECT_EQ(plan(search_params{}, sift, 2).pool_rows_per_cta, 0u);
}

// The single-CTA kernel's automatic visited hash (core/plan.cpp, plan_single_cta): 8 slots per
// entry of top-M + candidates, and at least 16 per thread of the CTA, so that wide rows (large
// CTAs) forget fewer nodes and read fewer rows again; an explicit size is kept.
TEST(Plan, SingleCtaHashGrowsWithTheCta) {
  const auto plan = [](const search_params& p, const core::index_shape& shape) {
    return core::make_search_plan(backend::cuda, p, shape, 10, 10000, memory_space::host, 132);
  };
  search_params p;
  p.itopk_size = 32;
  // 128-d u8 (team 4, width 2: 128 threads; 96 at batch 10K, over 4 waves of 128-thread CTAs
  // on 132 SMs): max(8 x 96 -> 2^10, 16 x 96 -> 2^11) = 2^11.
  const core::index_shape sift{1000000, 128, 32, dtype::u8, metric::l2};
  const search_plan s = plan(p, sift);
  EXPECT_EQ(s.block_size, 96u);
  EXPECT_EQ(s.hash_bits, 11u);
  // 768-d f32 (team 32: 256 threads): 2^12.
  const core::index_shape mpnet{1000000, 768, 32, dtype::f32, metric::cosine};
  const search_plan m = plan(p, mpnet);
  EXPECT_EQ(m.block_size, 256u);
  EXPECT_EQ(m.hash_bits, 12u);
  // Long lists still set it (itopk 512: 8 x 576 -> 2^13), and 2^13 stays the cap.
  search_params big = p;
  big.itopk_size = 512;
  EXPECT_EQ(plan(big, sift).hash_bits, 13u);
  // An explicit size is the size.
  search_params explicit_bits = p;
  explicit_bits.hash_bits = 10;
  EXPECT_EQ(plan(explicit_bits, mpnet).hash_bits, 10u);
}

// The multi-CTA CTA size on the latency path (plan_kernels.cpp, latency_block): a team (half a
// team for short rows) per initial node, at most 256, never below one team per neighbor; batches
// beyond the host merge and device batches keep one team per neighbor.
TEST(Plan, MultiCtaLatencyBlock) {
  const core::index_shape sift{1000000, 128, 32, dtype::u8, metric::l2};
  const auto plan = [&](int64_t batch, memory_space space, const core::index_shape& shape) {
    return core::make_search_plan(backend::cuda, search_params{}, shape, 10, batch, space, 132);
  };
  // 128-d u8, team 4: 96 initial nodes x 2 lanes = 192 (launching per query); the persistent
  // kernel's pool scan takes 256.
  search_params launched;
  launched.persistent = false;
  EXPECT_EQ(core::make_search_plan(backend::cuda, launched, sift, 10, 1, memory_space::host, 132)
                .block_size,
            192u);
  EXPECT_EQ(plan(1, memory_space::host, sift).block_size, 256u);
  EXPECT_EQ(plan(16, memory_space::host, sift).block_size, 128u);  // 16 CTAs, 32 initial nodes
  EXPECT_EQ(plan(17, memory_space::host, sift).block_size, 128u);
  EXPECT_EQ(plan(1, memory_space::device, sift).block_size, 128u);
  EXPECT_TRUE(core::gpu::multi_cta_half_init_team(4, 8));
  EXPECT_FALSE(core::gpu::multi_cta_half_init_team(4, 9));
  EXPECT_FALSE(core::gpu::multi_cta_half_init_team(2, 4));
  // 768-d f32 (team 32): capped at 256, as the general rule gives.
  const core::index_shape mpnet{1000000, 768, 32, dtype::f32, metric::cosine};
  EXPECT_EQ(plan(1, memory_space::host, mpnet).block_size, 256u);
}

// The single-CTA kernel's CTA size (core/plan.cpp, plan_single_cta): two candidates per team per
// iteration rounded to a power of two, and 96 threads instead of 128 only for batches of at
// least 4 waves of 128-thread CTAs (4 x 16 x SMs queries), where more CTAs per SM pay; smaller
// batches wait on their slowest queries and keep 128.
TEST(Plan, SingleCtaSmallerCtasForLargeBatches) {
  const core::index_shape sift{1000000, 128, 32, dtype::u8, metric::l2};
  const auto block = [&](int64_t batch, int sms) {
    return core::make_search_plan(backend::cuda, search_params{}, sift, 10, batch,
                                  memory_space::host, sms)
        .block_size;
  };
  EXPECT_EQ(block(10000, 132), 96u);
  EXPECT_EQ(block(4 * 16 * 132, 132), 96u);
  EXPECT_EQ(block(4 * 16 * 132 - 1, 132), 128u);
  EXPECT_EQ(block(2500, 132), 128u);
  EXPECT_EQ(block(10000, 46), 96u);  // fewer SMs: fewer queries make 4 waves
  // Wide rows keep their 256 threads at any batch.
  const core::index_shape minilm{1000000, 384, 32, dtype::f32, metric::cosine};
  EXPECT_EQ(core::make_search_plan(backend::cuda, search_params{}, minilm, 10, 100000,
                                   memory_space::host, 132)
                .block_size,
            256u);
}

}  // namespace
}  // namespace cagra::test
