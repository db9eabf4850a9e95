// Plan resolution, the GPU kernels' part (plan_kernels.hpp): which search kernel runs and its
// automatic shape. Each rule carries the measurement behind it; docs/params.md and docs/cuda.md
// have the tables.
#include "core/plan_kernels.hpp"

#include <algorithm>
#include <cmath>

#include "core/bits.hpp"
#include "core/initial_pool.hpp"

namespace cagra::core {

using bits::ceil_log2;
using bits::next_pow2;

namespace {

/** 16-byte chunks of a stored row (the kernels' row_stride / 16). */
uint32_t row_chunks(const index_shape& shape) {
  return static_cast<uint32_t>((size_t{shape.dim} * dtype_size(shape.type) + 15) / 16);
}

/** Team size (paper §IV-B1): about four 16-byte loads per lane (row chunks / 4, rounded to a
 *  power of two), clamped to [4, 32]. Measured on bigann10k, H200 (docs/cuda.md): one load per
 *  lane (team = chunks) spends more instructions on shuffles than on the row; for 128-d f32,
 *  team 8 ran 1.7x faster than team 32, for f16 team 8 1.5x faster than 16, for u8 team 4
 *  slightly faster than 8. */
uint32_t auto_team_size(const search_params& p, const index_shape& shape) {
  if (p.team_size) return p.team_size;
  return std::clamp<uint32_t>(next_pow2(row_chunks(shape)) / 4, 4, 32);
}

/** 96-thread CTAs instead of 128 for a batch of at least this many waves of 128-thread CTAs
 *  (kThreadsPerSm / 128 of them per SM). The kernel is latency-bound and runs much of an
 *  iteration (the merge, the parents) on one warp while the others wait, so more CTAs per SM at
 *  the same threads keep more queries in flight; but a query's 64 candidates then take two
 *  rounds of teams instead of one, so a batch that fits in about one wave waits longer for its
 *  slowest queries. SIFT-wall-1M (128-d u8, team 4, width 2, degree 32; one H100, interleaved
 *  A/B, bench/results/ab-cta96-*): batch 10K (4.7 waves) 1.035x / 1.088x / 1.077x the QPS at
 *  itopk 128 / 32 / 64, same recall; 2,500 queries a call (1.2 waves) 0.95-1.02x, 1,000 0.92-0.95x.
 *  The same cut for wide rows (192 threads instead of 256) was 0.98x on MiniLM-1M and 1.02-1.03x
 *  on a synthetic 128-d f32 set at batch 10K: not taken. */
constexpr int64_t kSmallCtaWaves = 4;
constexpr int64_t kThreadsPerSm = 2048;  // Hopper, Ampere A100 (sm_86/89 have 1536)

/** The single-CTA kernel: one CTA per query, the visited hash in shared memory. */
void plan_single_cta(search_plan& s, const search_params& p, const index_shape& shape,
                     int64_t batch, int sm_count) {
  CAGRA_EXPECTS(s.itopk <= gpu::kSingleCtaMaxItopk,
                "itopk_size %u needs the multi-CTA search kernel (single-CTA handles itopk <= %u): "
                "use algo = automatic or multi_cta",
                s.itopk, gpu::kSingleCtaMaxItopk);
  CAGRA_EXPECTS(s.search_width <= gpu::kSingleCtaMaxWidth,
                "search_width %u is for the multi-CTA search kernel (its CTAs per query); the "
                "single-CTA kernel expands at most %u parents an iteration: use algo = multi_cta",
                s.search_width, gpu::kSingleCtaMaxWidth);
  const uint32_t n_cand = s.search_width * shape.degree;
  s.team_size = auto_team_size(p, shape);
  s.ctas_per_query = 1;
  // CTA size: about two candidates per team per iteration, 64..256 threads; the CTA-wide merge
  // of long lists wants at least 128.
  const uint32_t list =
      next_pow2(s.itopk) + std::max(next_pow2(n_cand), next_pow2(s.initial_nodes));
  uint32_t block = 64;
  while (block < gpu::kSingleCtaMaxBlock && 2 * block < n_cand * s.team_size) block *= 2;
  if (block == 128 && batch >= kSmallCtaWaves * int64_t{sm_count} * (kThreadsPerSm / 128))
    block = 96;
  if (list > gpu::kWarpMergeMax) block = std::max(block, 128u);
  s.block_size = std::max(block, s.team_size);
  // Auto: about 8 slots per entry of top-M + candidates (the paper: 2^8..2^13 slots, <= 4 KB
  // per query at itopk 64), and at least 16 slots per thread of the CTA: the tables of the
  // CTAs that fill an SM (2048 threads) then take 128 KB of its shared memory (228 KB on
  // Hopper), so a larger table costs no occupancy. A table is emptied once half full, and the
  // nodes it forgot are met and their rows read again: on mpnet-1m (768-d f32, 256-thread
  // CTAs, itopk 32) 2^12 slots instead of 2^10 read 5% fewer bytes from DRAM per query, 1.03x /
  // 1.12x / 1.08x the QPS at itopk 32 / 64 / 128 (docs/cuda.md). Never below min_hash_bits; an
  // explicit size capped at 2^13.
  const uint32_t automatic = std::clamp<uint32_t>(
      std::max(ceil_log2(8ull * (s.itopk + n_cand)), ceil_log2(16ull * s.block_size)), 8,
      gpu::kSingleCtaMaxHashBits);
  s.hash_bits = resolve_hash_bits(p, s, n_cand, automatic,
                                  std::max(gpu::kSingleCtaMaxHashBits, min_hash_bits(s, n_cand)));
}

/** The automatic shape of the multi-CTA search, for a search whose CTA count the user did not
 *  set (search_width left at its default of 1, algo automatic, no filter). One rule, three
 *  values, following the batch sweep on SIFT-wall-1M (1M x 128 u8, degree 32, itopk 64, k 10,
 *  H100 with 132 SMs; docs/benchmarks.md "Defaults against the best swept point at small
 *  batches", bench/results/batch-sweep-sift-wall-1m-h100-483f7c8.jsonl):
 *  - CTAs per query: 2^round(log2(sm_count / (2 sqrt(batch)))), at most kAutoMaxCtas: the best
 *    swept count fell with the batch, 64 at batch 1, 16 at 10, 8 at 100 (about 64 / sqrt(batch)
 *    on 132 SMs; the rule gives 64, 16, 8). The plan raises it to the lists itopk and 2k need.
 *  - A floor on the iterations per CTA that rises by 2 with each halving of the CTAs below 64
 *    (4 at 64, 6 at 32, 8 at 16, ...; one fewer at itopk <= 32: kAutoShortItopk). Recall
 *    depends on the depth of each CTA's walk from its random start, and fewer CTAs start from
 *    fewer random nodes: at 4 iterations recall was 0.988 at 64 CTAs, 0.935 at 32, 0.80 at 16
 *    (batch 1); 32 CTAs at 6 iterations gave 0.9935, 16 CTAs at 5 / 7 / 11 gave 0.933 / 0.984 /
 *    0.997. The split budget alone gave 32 CTAs the 4-iteration minimum at itopk <= 64, which
 *    was the 32-CTA recall dip of that sweep.
 *  - Initial nodes per CTA: d x min(samplings, 3) from 32 CTAs up (those walks are the shortest,
 *    4..6 iterations), d below. A synthetic clustered 1M set (bench/make_synthetic.py) gave
 *    recall@10 0.69 at 64 CTAs with d per CTA against 0.95 with 3d
 *    (bench/results/logs/latency-h200-5061e6c.txt); SIFT-wall-1M needed only d. Below 100K rows
 *    (one sampling) it stays d. */
constexpr uint32_t kAutoMaxCtas = 64;
/** The single-CTA kernel's parents per iteration when the user left search_width at 1 (algo
 *  automatic, no filter): 2. At batch 10K, width 2 against width 1 at equal recall: 1.16x the QPS
 *  on SIFT-wall-1M (H200, bench/results/batch-sweep-sift-wall-1m-h200-9620ea9.jsonl), 1.21x on
 *  MiniLM-1M (H100, batch-sweep-minilm-1m-h100-4c97295.jsonl), even on the synthetic clustered
 *  set; twice the candidates per iteration keep a CTA's teams busier. The CPU backend keeps the
 *  width it is given (1), so at default parameters a large GPU batch no longer gives the CPU's
 *  answer bit for bit; at equal parameters it still does. */
constexpr uint32_t kAutoSingleCtaWidth = 2;
/** Random samplings of the single-CTA kernel under the same automatic shape, when the user left
 *  num_random_samplings at 0: 1 (the general rule gives 1 + ceil(log2(N / 100K)), 5 at 1M rows:
 *  itopk + 2 x 5 x d random rows a query, 352 at itopk 32). On the real 1M sets the extra draws
 *  bought no recall and cost 9-22% of the QPS at batch 10K (one H100, ac9613e,
 *  bench/results/samplings-*-h100-ac9613e.jsonl): SIFT-wall-1M itopk 32 / 64 / 128 recall
 *  0.9654 / 0.9879 / 0.9962 against 0.9653 / 0.9882 / 0.9963 at 1.17x / 1.20x / 1.09x the QPS;
 *  mpnet-1m (768-d f32, where a draw reads 3 KB) 0.9552 / 0.9798 / 0.9915 against 0.9569 /
 *  0.9806 / 0.9919 at 1.22x / 1.17x / 1.12x. Only the SYNTHETIC clustered set (islands, where a
 *  walk cannot leave the cluster it starts in) gains from them: 4-6 points at equal itopk, 4-9%
 *  QPS at equal recall. num_random_samplings = 0 elsewhere (the CPU, multi-CTA, a forced kernel
 *  or width) keeps the general rule. */
constexpr uint32_t kAutoSingleCtaSamplings = 1;
constexpr uint32_t kAutoManyCtas = 32;
constexpr uint32_t kAutoMaxInitRounds = 3;
uint32_t auto_ctas_per_query(int64_t batch, int sm_count) {
  if (sm_count <= 0 || batch <= 0) return 1;
  const double target = double(sm_count) / (2.0 * std::sqrt(double(batch)));
  if (target <= 1.0) return 1;
  const long e = std::min<long>(std::lround(std::log2(target)), 30);
  return std::min(uint32_t{1} << e, kAutoMaxCtas);
}
/** The automatic floor at 64 CTAs for a short list (itopk <= kAutoShortItopk): one iteration
 *  fewer than kMultiCtaMinIterations, so that itopk, the knob of recall against speed, moves
 *  batch-1 latency too (before, every itopk up to 256 ran 4 iterations a CTA at batch 1).
 *  SIFT-wall-1M, 64 CTAs, 3 initial rounds a CTA (one H100, 1a5e9c5,
 *  bench/results/batch1-128ctas-sift-wall-1m-h100x4-1a5e9c5.jsonl): 4 iterations 0.9961 at
 *  28.4 us, 3 iterations 0.9728 at 24.3 us; 2 fell to 0.755. The default call at itopk 32 on an
 *  H200 (bench/results/ab-batch1-prefetch-sift-wall-1m-h200-*.jsonl): 0.9956 -> 0.9726 at 1.08x
 *  the QPS; on the synthetic clustered set 0.896 -> 0.772, where itopk 32 gives 0.46-0.64 at
 *  batch 10K. */
constexpr uint32_t kAutoShortItopk = 32;
uint32_t auto_min_iterations(uint32_t ctas, uint32_t itopk) {
  uint32_t floor = gpu::kMultiCtaMinIterations - (itopk <= kAutoShortItopk ? 1 : 0);
  for (uint32_t c = ctas; c < kAutoMaxCtas; c *= 2) floor += 2;
  return floor;
}

/** The multi-CTA kernel: several CTAs per query, each with its own 32-entry list and one parent
 *  per iteration, sharing a visited hash in device memory (paper §IV-C2). `automatic`: the CTA
 *  count, initial nodes and iteration floor follow the batch (auto_ctas_per_query). */
void plan_multi_cta(search_plan& s, const search_params& p, const index_shape& shape,
                    bool automatic, int64_t batch, int sm_count) {
  CAGRA_EXPECTS(s.itopk <= gpu::kMultiCtaMaxItopk,
                "the multi-CTA search handles itopk_size <= %u (got %u)", gpu::kMultiCtaMaxItopk,
                s.itopk);
  constexpr uint32_t list = gpu::kMultiCtaList;  // a constant: no capture (clang warns on one)
  const auto lists_for = [](uint32_t entries) { return (entries + list - 1) / list; };
  // CTAs: enough 32-entry lists to hold itopk entries and one CTA per parent of an iteration of
  // the single-CTA search (cuVS's count; paper: "the number of CTAs x d nodes per iteration"),
  // and lists for at least 2k entries: the lists partition what the CTAs discovered, and a CTA
  // that found more than 32 of the top k loses the rest, so with lists for only k entries
  // recall@k drops (bigann10k, itopk = k = 64, 2 CTAs: 0.879 against the CPU's 0.994; with 4:
  // parity, docs/cuda.md). At most 4096 entries (the merge's limit).
  const uint32_t width = automatic ? auto_ctas_per_query(batch, sm_count) : s.search_width;
  s.ctas_per_query = std::min(std::max({width, lists_for(s.itopk), lists_for(2 * s.k)}),
                              lists_for(gpu::kMultiCtaMaxItopk));
  // Random initial nodes: d per CTA (one round of distances). The CTAs together draw n_ctas x d
  // nodes, already more than the single-CTA search's d x samplings; drawing d x samplings per CTA
  // as well (3 rounds on 1M rows) cost ~4 us of batch-1 latency. An explicit
  // num_random_samplings is kept. The automatic shape draws more from 32 CTAs up (above).
  const uint32_t rounds = p.num_random_samplings ? s.random_samplings
                          : automatic && s.ctas_per_query >= kAutoManyCtas
                              ? std::min(s.random_samplings, kAutoMaxInitRounds)
                              : 1u;
  s.initial_nodes = shape.degree * rounds;
  // Iterations per CTA: an explicit max_iterations is each CTA's cap; the automatic one is the
  // single-CTA budget shared by the CTAs, at least kMultiCtaMinIterations each. Each CTA expands
  // one parent per iteration, so without the split a CTA ran until its own 32 entries were all
  // expanded (>= 32 dependent iterations, ~2 us each): batch-1 latency did not fall with more
  // CTAs. Fashion-MNIST, H200, batch 1, itopk 32, 16 CTAs: recall@10 0.9955 at 4 iterations
  // each (40 us a query) against 1.0000 uncapped (120 us); docs/cuda.md. The automatic shape
  // raises the minimum as the CTAs get fewer (auto_min_iterations).
  if (!p.max_iterations)
    s.max_iterations = std::max(
        automatic ? auto_min_iterations(s.ctas_per_query, s.itopk) : gpu::kMultiCtaMinIterations,
        (s.max_iterations + s.ctas_per_query - 1) / s.ctas_per_query);
  s.min_iterations = std::min(s.min_iterations, s.max_iterations);
  // Device hash, standard (never reset during a search): at least twice the nodes the query is
  // expected to visit (the CTAs' lists x d, plus the initial nodes), at most N; 2^10..2^24 slots
  // of 4 bytes. An explicit hash_bits sets the size (a table that fills up skips nodes).
  const uint64_t expected =
      std::min<uint64_t>(uint64_t(shape.rows),
                         uint64_t{s.ctas_per_query} * (list + s.random_samplings) * shape.degree);
  s.hash_bits = p.hash_bits ? p.hash_bits : std::clamp<uint32_t>(ceil_log2(2 * expected), 10, 24);
  s.team_size = auto_team_size(p, shape);
  // CTA size: one team per neighbor of the parent (d candidates per iteration), 64..256.
  uint32_t block = 64;
  while (block < gpu::kMultiCtaMaxBlock && block < shape.degree * s.team_size) block *= 2;
  s.block_size = block;
}

/** The multi-CTA CTA size on the latency path (the host merges: batches of up to
 *  kHostMergeMaxQueries, where SMs are plenty): a team for every initial node (half a team where
 *  its row allows, gpu::multi_cta_half_init_team), so that all of their rows load at once instead
 *  of in rounds (SIFT-wall-1M, H200: the automatic shape's 96 nodes took 3.1 us in three rounds,
 *  1.1 us in one); at most kMultiCtaMaxBlock threads, never fewer than the general rule's. */
uint32_t latency_block(const search_plan& s, const index_shape& shape) {
  const uint32_t init_team =
      gpu::multi_cta_half_init_team(s.team_size, row_chunks(shape)) ? s.team_size / 2 : s.team_size;
  const uint64_t want = uint64_t{s.initial_nodes} * init_team;
  const uint32_t block =
      static_cast<uint32_t>(std::min<uint64_t>((want + 31) / 32 * 32, gpu::kMultiCtaMaxBlock));
  return std::max(block, s.block_size);
}

/** From a large pool, the longest list that runs the short list's iterations: the default
 *  itopk (64) then walks 2 iterations a CTA, as itopk 32 does. From the pool 2 iterations give
 *  about the recall the batch-10K search gives at itopk 64, 3 about its recall at 128, so
 *  itopk means about the same recall at every batch size, and the default batch-1 call no
 *  longer overshoots to 0.996 at the cost of an iteration (~2 us). SIFT-wall-1M, H200, batch 1
 *  at itopk 64: 3 iterations 0.996 at 16.0-16.4 us, 2 iterations 0.980 at 13.4-14.3 us
 *  (bench/results/batch1-short64-sift-wall-1m-h200-{7f68f21,8f111a4}.jsonl); batch 10K 0.988
 *  at itopk 64, 0.996 at 128 (sift-wall-1m-h200-9152a94.jsonl). One iteration from the pool
 *  gave 0.724 (logs/batch1-pause-sift-wall-1m-h200-5e21b21.txt): kPooledMinIterations. */
constexpr uint32_t kPooledShortItopk = 64;
constexpr uint32_t kPooledMinIterations = 2;

/** The persistent kernel's initial nodes from the pool (core/initial_pool.hpp), on the automatic
 *  shape where the user left the initial nodes to the plan: each CTA scans its slice of a fixed
 *  set of rows held in shared memory (64 CTAs x 800 rows for 128-d u8) instead of reading ~100
 *  random rows from DRAM. From a pool of kPoolFewerIterationsRows or more the walk, starting
 *  nearer, takes one iteration fewer where the automatic floor set the count. H200, SIFT-wall-1M,
 *  832 rows a CTA (12b0b25), against the random nodes' shape in the same process: itopk 32, 2
 *  iterations 0.981 at 63.8-64.9K QPS against 3 iterations 0.977 at 60.8-62.5K; itopk 64, 3
 *  against 4, 0.996 both, 57.0-58.9K against 54.5-55.1K. The synthetic clustered set (128-d
 *  f32: 192 rows a CTA, a pool of 12K rows) lost recall at 2 iterations (0.727 against 0.775)
 *  and gained at 3 (0.911 against 0.895 with 4, 17.2 against 22.5 us): below that pool size the
 *  floor stays (docs/cuda.md, "Initial nodes from a pool"). Launching per query the slice would
 *  be copied every call, slower than the random nodes: the persistent kernel copies it once. */
void take_initial_pool(search_plan& s, const search_params& p, const index_shape& shape) {
  s.pool_rows_per_cta =
      pool_rows_per_cta(uint64_t(shape.rows), row_chunks(shape) * 16, s.ctas_per_query);
  // A slice smaller than the random nodes it replaces (wide rows: 64 rows of 384-d f32 against
  // 96 nodes) would start the walk from fewer rows, the same for every query: not taken.
  if (s.pool_rows_per_cta < s.initial_nodes) s.pool_rows_per_cta = 0;
  if (!s.pool_rows_per_cta) return;
  s.initial_nodes = 0;
  // The largest CTA: the scan's rows spread over more threads (a thread a row; 192 threads, the
  // random nodes' size, left it 5 rows to scan one after the other).
  s.block_size = gpu::kMultiCtaMaxBlock;
  static_assert(gpu::kMultiCtaMaxBlock == kPoolScanThreads, "a slice scans in whole rounds");
  const bool large_pool =
      uint64_t{s.pool_rows_per_cta} * s.ctas_per_query >= kPoolFewerIterationsRows;
  if (large_pool && !p.max_iterations &&
      s.max_iterations == auto_min_iterations(s.ctas_per_query, s.itopk) && s.max_iterations > 1) {
    // From the pool a list of up to kPooledShortItopk counts as short (one fewer again).
    const uint32_t fewer = s.itopk > kAutoShortItopk && s.itopk <= kPooledShortItopk ? 2 : 1;
    s.max_iterations = std::max(s.max_iterations - fewer, kPooledMinIterations);
    s.min_iterations = std::min(s.min_iterations, s.max_iterations);
  }
}

/** The persistent kernel under one shared bitset: at or above this share of allowed rows the
 *  kernel walks unfiltered and the host drops disallowed rows while it merges the CTAs' lists
 *  of k (search_plan::filter_in_merge), instead of the filtered kernel, whose warp 0 merges each
 *  iteration's candidates twice (its walk list and its allowed list). A query's k allowed
 *  nearest are then about its k / share nearest, which the 64 lists of k hold between them.
 *  SIFT-wall-1M, H200 (docs/filter.md): 1.12-1.17x the QPS from 85% to 99% allowed, recall
 *  within 0.001 (0.891 allowed: 0.9784 against 0.9786); at 69% 1.13-1.14x but recall 0.003
 *  lower, so the share stops above it. `filter = graph` keeps the filtered kernel. */
constexpr double kFilterInMergeMinShare = 0.85;

/** How the batch travels (the CUDA backend's latency paths, docs/cuda.md). */
search_io choose_io(const search_plan& s, const search_params& p, int64_t batch, memory_space space,
                    int sm_count) {
  if (space == memory_space::device) return search_io::device;
  const bool multi = s.algo == search_algo::multi_cta;
  // The resident kernel serves unfiltered queries and queries under one shared bitset (it reads
  // the workspace's device copy, which stays while the bitset does: cuda/search/search.cu); a
  // per-query filter launches the multi-CTA kernel. Its CTAs must all be resident at once (CTA 0
  // hands each job to the others, and a CTA still waiting for an SM would never answer): one
  // CTA per SM always fits, so it runs only where the query's CTAs are at most the SMs (itopk
  // 4096 takes 128 CTAs; a GPU of fewer SMs launches per query instead).
  const bool fits = sm_count <= 0 || s.ctas_per_query <= static_cast<uint32_t>(sm_count);
  if (multi && p.persistent && batch == 1 && s.filter != filter_kind::per_query && fits)
    return search_io::persistent;
  if (batch > gpu::kMappedMaxQueries) return search_io::copy;
  return multi && batch <= gpu::kHostMergeMaxQueries ? search_io::host_merge : search_io::mapped;
}

}  // namespace

void plan_gpu_search(search_plan& s, const search_params& p, const index_shape& shape,
                     int64_t batch, memory_space space, int sm_count, filter_kind filter) {
  // The kernel choice (paper §IV-C3): multi-CTA when the batch is smaller than the number of
  // SMs (one CTA per query would leave SMs idle) or itopk or search_width is above the
  // single-CTA limit.
  s.algo = p.algo != search_algo::automatic ? p.algo
           : batch < int64_t{sm_count} || s.itopk > gpu::kSingleCtaMaxItopk ||
                   s.search_width > gpu::kSingleCtaMaxWidth
               ? search_algo::multi_cta
               : search_algo::single_cta;
  // The automatic shapes apply when the user set neither the kernel nor search_width. The
  // multi-CTA one applies to filtered walks too (docs/benchmarks.md, "Filtered search at small
  // batches"); the single-CTA one (width 2, one sampling) to walks under one shared bitset too
  // (an index with deleted rows is searched under its live rows), not to a filter per query.
  const bool auto_shape = p.algo == search_algo::automatic && p.search_width == 1;
  if (s.algo == search_algo::single_cta) {
    if (auto_shape && filter != filter_kind::per_query) {
      s.search_width = kAutoSingleCtaWidth;
      if (p.num_random_samplings == 0) s.random_samplings = kAutoSingleCtaSamplings;
      s.initial_nodes = single_initial_nodes(s, shape);
    }
    plan_single_cta(s, p, shape, batch, sm_count);
  } else
    plan_multi_cta(s, p, shape, auto_shape, batch, sm_count);
  s.io = choose_io(s, p, batch, space, sm_count);
  if (s.io == search_io::persistent) s.persistent_lifetime_us = p.persistent_lifetime_us;
  s.filter_in_merge = s.io == search_io::persistent && filter == filter_kind::shared &&
                      p.filter == filter_algo::automatic &&
                      double(s.allowed_rows) >= kFilterInMergeMinShare * double(shape.rows);
  if (s.algo == search_algo::multi_cta && gpu::host_merges(s.io))
    s.block_size = latency_block(s, shape);
  if (s.io == search_io::persistent && auto_shape && p.num_random_samplings == 0)
    take_initial_pool(s, p, shape);
}

}  // namespace cagra::core
