// Every automatic value of the library, resolved in one place: (parameters, data, batch,
// machine) -> a complete build_plan / search_plan. The backends and the GPU kernel launchers
// read only the plan. The rules and the measurements behind them are in docs/params.md and
// docs/cuda.md; each rule is written here once.
#include "core/plan.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/backend.hpp"
#include "core/bits.hpp"
#include "core/convert.hpp"
#include "core/device_memory.hpp"
#include "core/filter.hpp"
#include "core/int8_traversal.hpp"
#include "core/partitioned_knn.hpp"

namespace cagra::core {

using bits::ceil_log2;
using bits::next_pow2;

index_shape shape_of(const index& idx) {
  return {idx.size(), idx.dim(), idx.graph_degree(), idx.storage_dtype(), idx.metric()};
}

bool gpu_takes(const index_shape& s, uint32_t itopk) {
  const bool type_ok =
      s.type == dtype::f32 || s.type == dtype::f16 || s.type == dtype::u8 || s.type == dtype::i8;
  return type_ok && itopk <= gpu::kMultiCtaMaxItopk &&
         (dtype_size(s.type) != 1 || s.dim <= gpu::kMaxByteDim);
}

knn_algo resolve_knn_algo(knn_algo requested, int64_t rows, uint32_t k) {
  if (requested != knn_algo::automatic) return requested;
  // NN-descent costs ~ c * n * k^2 distances, brute force n^2. Measured on Fashion-MNIST (60K rows,
  // k = 64, 2 threads): NN-descent 24.4 s, brute force 84.1 s, so the crossover is near n = 4 k^2.
  return rows <= std::max<int64_t>(10000, int64_t{4} * k * k) ? knn_algo::brute_force
                                                              : knn_algo::nn_descent;
}

/** Filtered search (cagra/filter.hpp): the path and the top-M length for a filter that allows
 *  `allowed` of the index's rows (the fewest of any query). The graph path returns the allowed
 *  entries of its top-M list, so the list must hold about k allowed ones: k / selectivity
 *  entries, times kFilterOversample for recall (the allowed rows among the nearest are not
 *  evenly spread; SIFT-wall-1M, H200, 10% allowed: 2.0 gave itopk 224, recall@10 0.993 at 1.78M
 *  QPS). The exact path costs one distance per allowed row; the graph walk about
 *  itopk x degree distances (one parent per iteration, ~itopk iterations), in dependent steps.
 *  `automatic` takes the exact path when it computes fewer distances than the walk would, or
 *  when the walk would need a list beyond kFilterMaxItopk; docs/params.md has the
 *  measurements. Sets s.filter_path, s.allowed_rows and returns the list length. */
constexpr double kFilterOversample = 1.5;
constexpr uint32_t kFilterMaxItopk = 512;
uint32_t plan_filter(search_plan& s, const search_params& p, const index_shape& shape, uint32_t k,
                     int64_t allowed) {
  const uint32_t base = std::max(p.itopk_size, k);
  s.allowed_rows = allowed;
  const double selectivity = double(std::max<int64_t>(allowed, 1)) / double(shape.rows);
  const double wanted = std::ceil(kFilterOversample * k / selectivity);
  const uint32_t grown = wanted >= double(gpu::kMultiCtaMaxItopk)
                             ? gpu::kMultiCtaMaxItopk
                             : (static_cast<uint32_t>(wanted) + 31) / 32 * 32;
  const uint32_t itopk = std::max(base, grown);
  if (p.filter != filter_algo::automatic) {
    s.filter_path = p.filter;
  } else {
    const bool walk_costs_more =
        double(allowed) <= double(std::min(itopk, kFilterMaxItopk)) * shape.degree;
    s.filter_path = allowed <= int64_t{k} || itopk > kFilterMaxItopk || walk_costs_more
                        ? filter_algo::exact
                        : filter_algo::graph;
  }
  return s.filter_path == filter_algo::exact ? k : itopk;
}

namespace {

/** Random initial draws of the single-CTA kernel and the CPU search: itopk + width * degree *
 *  samplings (the whole buffer, as cuVS fills it; seeding only width * degree slots lost recall
 *  on clustered data). */
uint32_t single_initial_nodes(const search_plan& s, const index_shape& shape) {
  return s.itopk + s.search_width * shape.degree * s.random_samplings;
}

/** The search algorithm's settings that every backend shares (paper §IV-A); `itopk` is the
 *  list length (a filtered search's is grown, plan_filter). */
void resolve_common(search_plan& s, const search_params& p, const index_shape& shape, uint32_t k,
                    uint32_t itopk) {
  s.k = k;
  s.itopk = itopk;
  s.search_width = p.search_width;
  s.seed = p.seed;
  const uint32_t log_n = ceil_log2(static_cast<uint64_t>(std::max<int64_t>(shape.rows, 2)));
  // Converging needs about itopk/width iterations; the budget must not shrink with the width
  // (cuvs#1187: recall then depended on the batch size).
  s.max_iterations = p.max_iterations ? p.max_iterations : s.itopk + 16 + log_n;
  s.min_iterations = std::min(p.min_iterations, s.max_iterations);
  // Several random draws per initial slot at large N, so recall does not collapse at N >= 100K.
  s.random_samplings =
      p.num_random_samplings
          ? p.num_random_samplings
          : 1 + (shape.rows > 100000 ? ceil_log2(static_cast<uint64_t>(shape.rows / 100000)) : 0);
  s.hash_reset_interval = p.hash_reset_interval;
  // The single-CTA kernel draws exactly these, so it stays bit-identical to the CPU.
  s.initial_nodes = single_initial_nodes(s, shape);
}

/** The smallest visited hash (log2 of its slots) a search can run with, for the tables that are
 *  emptied once half full (the CPU's, and the single-CTA kernel's in shared memory), keeping the
 *  top-M ids: the table must hold the initial draws, the top-M plus one iteration's candidates,
 *  and half a table plus the candidates. Below it linear probing meets a full table and never
 *  ends (the search hung: issue 17). */
uint32_t min_hash_bits(const search_plan& s, uint32_t n_cand) {
  return ceil_log2(std::max<uint64_t>(
      {2ull * n_cand, uint64_t{s.itopk} + n_cand + 1, uint64_t{s.initial_nodes} + 1, 256}));
}

/** `automatic` when hash_bits is 0, else the requested size (at most `cap`); an explicit size
 *  below min_hash_bits is an error, an automatic one is raised to it. */
uint32_t resolve_hash_bits(const search_params& p, const search_plan& s, uint32_t n_cand,
                           uint32_t automatic, uint32_t cap) {
  const uint32_t needed = min_hash_bits(s, n_cand);
  if (p.hash_bits == 0) return std::max(automatic, needed);
  CAGRA_EXPECTS(needed <= cap,
                "internal error: the search needs a visited hash of 2^%u slots, above "
                "the 2^%u this table takes",
                needed, cap);
  CAGRA_EXPECTS(
      p.hash_bits >= needed,
      "hash_bits %u is too small for this search: the visited hash must hold the initial "
      "nodes (%u), itopk (%u) + search_width x graph_degree (%u) and twice the latter, so "
      "it needs at least %u; use 0 (automatic) or a value in [%u, %u]",
      p.hash_bits, s.initial_nodes, s.itopk, n_cand, needed, needed, cap);
  return std::min(p.hash_bits, cap);
}

/** The CPU's visited hash (in the thread's heap): about 4 slots per node a query is expected
 *  to see (top-M x d, plus the initial draws), 2^8..2^20. */
uint32_t cpu_hash_bits(const search_params& p, const search_plan& s, const index_shape& shape) {
  const uint64_t expected = uint64_t{s.itopk} * shape.degree +
                            uint64_t{s.search_width} * shape.degree * s.random_samplings;
  const uint32_t automatic = std::clamp<uint32_t>(ceil_log2(4 * expected), 8, 20);
  return resolve_hash_bits(p, s, s.search_width * shape.degree, automatic, 24);
}

/** Team size (paper §IV-B1): about four 16-byte loads per lane (row chunks / 4, rounded to a
 *  power of two), clamped to [4, 32]. Measured on bigann10k, H200 (docs/cuda.md): one load per
 *  lane (team = chunks) spends more instructions on shuffles than on the row; for 128-d f32,
 *  team 8 ran 1.7x faster than team 32, for f16 team 8 1.5x faster than 16, for u8 team 4
 *  slightly faster than 8. */
uint32_t auto_team_size(const search_params& p, const index_shape& shape) {
  if (p.team_size) return p.team_size;
  const uint32_t chunks =
      static_cast<uint32_t>((size_t{shape.dim} * dtype_size(shape.type) + 15) / 16);
  return std::clamp<uint32_t>(next_pow2(chunks) / 4, 4, 32);
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
 *    (4 at 64, 6 at 32, 8 at 16, ...). Recall depends on the depth of each CTA's walk from its
 *    random start, and fewer CTAs start from fewer random nodes: at 4 iterations recall was
 *    0.988 at 64 CTAs, 0.935 at 32, 0.80 at 16 (batch 1); 32 CTAs at 6 iterations gave 0.9935,
 *    16 CTAs at 5 / 7 / 11 gave 0.933 / 0.984 / 0.997. The split budget alone gave 32 CTAs the
 *    4-iteration minimum at itopk <= 64, which was the 32-CTA recall dip of that sweep.
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
uint32_t auto_min_iterations(uint32_t ctas) {
  uint32_t floor = gpu::kMultiCtaMinIterations;
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
    s.max_iterations =
        std::max(automatic ? auto_min_iterations(s.ctas_per_query) : gpu::kMultiCtaMinIterations,
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

/** How the batch travels (the CUDA backend's latency paths, docs/cuda.md). */
search_io choose_io(const search_plan& s, const search_params& p, int64_t batch,
                    memory_space space) {
  if (space == memory_space::device) return search_io::device;
  const bool multi = s.algo == search_algo::multi_cta;
  // The resident kernel serves unfiltered queries (it holds no filter between calls): a
  // filtered batch-1 search launches the multi-CTA kernel.
  if (multi && p.persistent && batch == 1 && s.filter == filter_kind::none)
    return search_io::persistent;
  if (batch > gpu::kMappedMaxQueries) return search_io::copy;
  return multi && batch <= gpu::kHostMergeMaxQueries ? search_io::host_merge : search_io::mapped;
}

}  // namespace

search_plan make_search_plan(backend target, const search_params& p, const index_shape& shape,
                             uint32_t k, int64_t batch, memory_space space, int sm_count,
                             filter_kind filter, int64_t allowed) {
  search_plan s;
  s.target = target;
  s.filter = filter;
  const uint32_t itopk = filter == filter_kind::none ? std::max(p.itopk_size, k)
                                                     : plan_filter(s, p, shape, k, allowed);
  resolve_common(s, p, shape, k, itopk);
  // The exact path computes a distance to every allowed row: no walk, no kernel shape.
  if (s.filter_path == filter_algo::exact) {
    s.max_iterations = s.min_iterations = s.random_samplings = s.initial_nodes = 0;
    s.io = target == backend::cpu          ? search_io::none
           : space == memory_space::device ? search_io::device
                                           : search_io::copy;
    return s;
  }
  if (target == backend::cpu) {
    s.hash_bits = cpu_hash_bits(p, s, shape);
    return s;
  }
  // The kernel choice (paper §IV-C3): multi-CTA when the batch is smaller than the number of
  // SMs (one CTA per query would leave SMs idle) or itopk is above the single-CTA limit.
  s.algo = p.algo != search_algo::automatic ? p.algo
           : batch < int64_t{sm_count} || s.itopk > gpu::kSingleCtaMaxItopk
               ? search_algo::multi_cta
               : search_algo::single_cta;
  // The automatic shapes apply when the user set neither the kernel nor search_width. The
  // multi-CTA one applies to filtered walks too (docs/benchmarks.md, "Filtered search at small
  // batches"); the single-CTA one (width 2, one sampling) only without a filter.
  const bool auto_shape = p.algo == search_algo::automatic && p.search_width == 1;
  if (s.algo == search_algo::single_cta) {
    if (auto_shape && filter == filter_kind::none) {
      s.search_width = kAutoSingleCtaWidth;
      if (p.num_random_samplings == 0) s.random_samplings = kAutoSingleCtaSamplings;
      s.initial_nodes = single_initial_nodes(s, shape);
    }
    plan_single_cta(s, p, shape, batch, sm_count);
  } else
    plan_multi_cta(s, p, shape, auto_shape, batch, sm_count);
  s.io = choose_io(s, p, batch, space);
  return s;
}

}  // namespace cagra::core

namespace cagra {

build_plan plan_build(const resources& res, const index_params& params, int64_t rows, int64_t dim,
                      dtype input) {
  params.validate(rows);
  build_plan b;
  b.target = core::resolve_backend(res);
  b.graph_degree = params.graph_degree;
  // Automatic: 2d (the paper's 2d..3d), at most rows - 1 (a kNN list cannot be longer).
  b.intermediate_graph_degree =
      params.intermediate_graph_degree
          ? params.intermediate_graph_degree
          : static_cast<uint32_t>(std::min<int64_t>(2 * int64_t{params.graph_degree}, rows - 1));
  b.knn = core::resolve_knn_algo(params.knn.algo, rows, b.intermediate_graph_degree);
  b.storage = core::storage_dtype_for(input, params.metric, params.storage);
  const int64_t part = params.knn.partition_rows;
  CAGRA_EXPECTS(part == 0 || part >= core::min_partition_rows(b.intermediate_graph_degree),
                "knn.partition_rows %lld is too small for intermediate_graph_degree %u: a "
                "partition needs at least %lld rows (or 0: automatic)",
                (long long)part, b.intermediate_graph_degree,
                (long long)core::min_partition_rows(b.intermediate_graph_degree));
  b.partition_rows = part > 0 && part < rows ? part : 0;
  if (b.target == backend::cuda && dim > 0) {
    // Fitted to what the build may use: max_device_memory, at most the free memory now.
    const uint64_t free_b = core::cuda_backend().free_device_memory(res.device);
    const uint64_t budget = params.max_device_memory && params.max_device_memory < free_b
                                ? params.max_device_memory
                                : free_b;
    core::fit_build(b, params, rows, dim, budget);
    b.host_bytes =
        core::host_build_bytes(b, params, rows, dim, core::host_threads(res.num_threads));
  }
  // A partitioned kNN stage runs the algorithm of a set of the partition's size.
  if (b.partition_rows)
    b.knn = core::resolve_knn_algo(params.knn.algo, b.partition_rows, b.intermediate_graph_degree);
  return b;
}

search_plan plan_search(const resources& res, const search_params& params, const index& idx,
                        uint32_t k, int64_t batch, memory_space space, const row_filter& filter) {
  CAGRA_EXPECTS(idx.size() > 0, "the index is empty");
  if (!filter.empty()) core::check_filter(filter, idx.size(), batch);
  std::vector<uint32_t> storage;
  return core::plan_visible(res, params, idx, k, batch, space,
                            core::visible_rows(idx, filter, batch, storage));
}

namespace core {

search_plan plan_visible(const resources& res, const search_params& params, const index& idx,
                         uint32_t k, int64_t batch, memory_space space, const row_filter& filter) {
  CAGRA_EXPECTS(idx.size() > 0, "the index is empty");
  params.validate(k, idx.size(), idx.graph_degree());
  const bool int8 = params.traversal == traversal_type::int8;
  // The int8 traversal walks an i8 index of the same graph: the kernels are planned for it.
  core::index_shape shape = core::shape_of(idx);
  if (int8) {
    CAGRA_EXPECTS(shape.type == dtype::f32 || shape.type == dtype::f16,
                  "the int8 traversal walks an int8 copy of f32 or f16 rows, but this index "
                  "stores %s rows (its walk reads bytes already): use traversal exact",
                  to_string(shape.type));
    shape.type = dtype::i8;
    shape.m = shape.m == metric::l2 ? metric::l2 : metric::inner_product;
  }
  const filter_kind fk = core::kind_of(filter);
  if (fk != filter_kind::none) core::check_filter(filter, idx.size(), batch);
  const int64_t allowed =
      fk == filter_kind::none ? idx.size() : core::fewest_allowed(filter, batch);
  // The GPU takes what its kernels take at the list length the filter needs (the exact path:
  // any k its brute force takes).
  const uint32_t itopk = fk == filter_kind::none ? std::max(params.itopk_size, k) : [&] {
    search_plan probe;
    return core::plan_filter(probe, params, shape, k, allowed);
  }();
  backend target;
  if (space == memory_space::device) {
    // Device memory never falls back to the CPU: it would need a host round trip the caller
    // did not ask for.
    CAGRA_EXPECTS(
        res.target != backend::cpu,
        "queries are in device memory, but the CPU backend was asked for: device memory needs the "
        "CUDA backend (use backend::cuda or automatic, or pass host memory)");
    CAGRA_EXPECTS(
        core::cuda_backend().device_count() > 0,
        "queries are in device memory, but no CUDA device is visible (or this build has no CUDA "
        "backend): device memory needs the CUDA backend and a GPU");
    CAGRA_EXPECTS(
        core::gpu_takes(shape, itopk),
        "the CUDA search does not take this search (a %s index of dimension %u, itopk %u; it takes "
        "itopk <= %u and byte vectors of dim <= %u), and queries in device memory cannot go to "
        "the CPU backend: pass host memory",
        to_string(shape.type), shape.dim, itopk, core::gpu::kMultiCtaMaxItopk,
        core::gpu::kMaxByteDim);
    target = backend::cuda;
  } else {
    target = core::resolve_backend(res);
    // `automatic` stays on the CPU for what the GPU kernels do not take (itopk > 4096, ...).
    if (target == backend::cuda && res.target == backend::automatic &&
        !core::gpu_takes(shape, itopk))
      target = backend::cpu;
  }
  const int sms = target == backend::cuda ? core::cuda_backend().sm_count(res.device) : 0;
  search_plan s = core::make_search_plan(target, params, shape, k, batch, space, sms, fk, allowed);
  // The exact filtered path computes exact distances: no walk to compress.
  if (!int8 || s.filter_path == filter_algo::exact) {
    if (int8)
      s = core::make_search_plan(target, params, core::shape_of(idx), k, batch, space, sms, fk,
                                 allowed);
    return s;
  }
  // The walk returns `rerank` candidates; the plan's k stays the caller's.
  const uint32_t rerank = params.rerank ? params.rerank : core::auto_rerank(k, s.itopk);
  s = core::make_search_plan(target, params, shape, rerank, batch, space, sms, fk, allowed);
  s.k = k;
  s.traversal = traversal_type::int8;
  s.rerank = rerank;
  return s;
}

}  // namespace core

}  // namespace cagra
