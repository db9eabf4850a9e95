// Every automatic value of the library, resolved in one place (with plan_kernels.cpp, the GPU
// kernels' shapes): (parameters, data, batch, machine) -> a complete build_plan / search_plan.
// The backends and the GPU kernel launchers read only the plan. The rules and the measurements
// behind them are in docs/params.md and docs/cuda.md; each rule is written here once.
#include "core/plan.hpp"

#include "core/plan_kernels.hpp"

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

knn_algo resolve_knn_algo(knn_algo requested, int64_t rows, uint32_t k, backend target) {
  if (requested != knn_algo::automatic) return requested;
  // Brute force costs n^2 distances, NN-descent about n times a cost that grows with k (more
  // candidates an iteration, fewer iterations). On the CPU (Fashion-MNIST, 60K rows, 2 threads,
  // both with pair_distance's tiles): k = 64, NN-descent 18.1 s (f32) / 24.4 s (u8) against
  // brute force 99 s / 84 s; k = 128, 55 s / 44 s against 103 s / 58 s. With brute force ~n^2
  // and NN-descent ~n, the crossovers are near n = 11K / 18K (k = 64) and 32K / 46K (k = 128):
  // 2 k^2 takes the float ones, and costs bytes at most 1.3x between them. The GPU's crossover
  // (cuBLAS brute force) was set at 4 k^2 from the CPU's k = 64 point and is kept.
  const int64_t c = target == backend::cuda ? 4 : 2;
  return rows <= std::max<int64_t>(10000, c * k * k) ? knn_algo::brute_force : knn_algo::nn_descent;
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

/** Random initial draws of the single-CTA kernel and the CPU search: itopk + width * degree *
 *  samplings (the whole buffer, as cuVS fills it; seeding only width * degree slots lost recall
 *  on clustered data). */
uint32_t single_initial_nodes(const search_plan& s, const index_shape& shape) {
  return s.itopk + s.search_width * shape.degree * s.random_samplings;
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

namespace {

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

/** The CPU walk's random samplings when num_random_samplings is left at 0 (and the filter is not
 *  one per query): 1, so a walk starts from itopk + p x d random rows instead of
 *  itopk + p x d x (1 + ceil(log2(N / 100K))), as the GPU's automatic single-CTA shape does
 *  (plan_kernels.cpp, kAutoSingleCtaSamplings). The draws are a fixed cost that the short walks
 *  of low recall do not amortize: 336 rows of 1.5 KB at MiniLM-1M, degree 64, itopk 16. At
 *  equal recall, SIFT-wall-1M: 6-16% fewer distances a query, on a 16-core Xeon 1.09-1.26x the
 *  QPS at batch 10K and 0.89-1.45x at batch 1 (two runs); the SYNTHETIC clustered set loses
 *  0.2-2.3 points at equal itopk but still computes 2-9% fewer distances at equal recall
 *  (docs/benchmarks.md, "One random sampling: the CPU's automatic value"). */
constexpr uint32_t kAutoCpuSamplings = 1;

/** The fewest iterations of the automatic budget the CPU's latency path leaves each walker when
 *  it picks their count from the threads (plan_cpu_walkers). On SIFT-wall-1M (16-core Xeon) 4-5
 *  iterations a walker gave recall@10 0.79-0.93 at 16 walkers, below one walk at the same itopk
 *  (b63ad57); with at least 6, recall still fell where itopk rose from 16 to 24 and from 32 to 48
 *  (8 -> 10 and 11 -> 14 walkers of 7 -> 6 iterations), while the latency at 16 threads hardly
 *  moved with the iterations (22-35 us from itopk 10 to 128, 96f930e): fewer, longer walks buy
 *  recall for almost nothing. */
constexpr uint32_t kCpuWalkerIterations = 8;

/** The CPU's visited hash (in the thread's heap): about 4 slots per node a query is expected
 *  to see (top-M x d, plus the initial draws), 2^8..2^20. */
uint32_t cpu_hash_bits(const search_params& p, const search_plan& s, const index_shape& shape) {
  const uint64_t expected = uint64_t{s.itopk} * shape.degree +
                            uint64_t{s.search_width} * shape.degree * s.random_samplings;
  const uint32_t automatic = std::clamp<uint32_t>(ceil_log2(4 * expected), 8, 20);
  return resolve_hash_bits(p, s, s.search_width * shape.degree, automatic, 24);
}

/** algo multi_cta on the CPU (cpu/parallel_walk.cpp): each query walked by ctas_per_query
 *  walkers, a thread each, with the GPU multi-CTA kernel's shape: a 32-entry list and one parent
 *  an iteration per walker, d x rounds random initial nodes each (rounds: num_random_samplings,
 *  else 1), and the single walk's iteration budget shared among the walkers (at least
 *  kMultiCtaMinIterations each). Walkers: search_width when set (above 1), else one per thread
 *  the search runs on, but no more than leave each kCpuWalkerIterations of the automatic budget
 *  (a walker of 4 iterations from random rows had not converged: recall@10 0.79 at itopk 10-24
 *  with 16 walkers on SIFT-wall-1M, below one walk's 0.88-0.95; docs/params.md); at least the
 *  lists that itopk and 2k entries need (as on the GPU: a walker that found more than 32 of the
 *  top k loses the rest), at most 128. The visited set is the query's, shared by its walkers
 *  and never reset: ~4 slots a node the walkers can visit. */
void plan_cpu_walkers(search_plan& s, const search_params& p, const index_shape& shape,
                      int threads) {
  CAGRA_EXPECTS(s.itopk <= gpu::kMultiCtaMaxItopk,
                "the multi-CTA search handles itopk_size <= %u (got %u)", gpu::kMultiCtaMaxItopk,
                s.itopk);
  constexpr uint32_t list = gpu::kMultiCtaList;
  const auto lists_for = [](uint32_t entries) { return (entries + list - 1) / list; };
  uint32_t width = p.search_width;
  if (width <= 1) {
    width = static_cast<uint32_t>(std::max(threads, 1));
    if (!p.max_iterations) width = std::min(width, s.max_iterations / kCpuWalkerIterations);
  }
  s.algo = search_algo::multi_cta;
  s.ctas_per_query = std::min(std::max({width, lists_for(s.itopk), lists_for(2 * s.k)}),
                              lists_for(gpu::kMultiCtaMaxItopk));
  s.search_width = s.ctas_per_query;
  const uint32_t rounds = p.num_random_samplings ? p.num_random_samplings : 1;
  s.random_samplings = rounds;
  s.initial_nodes = shape.degree * rounds;
  if (!p.max_iterations)
    s.max_iterations = std::max(gpu::kMultiCtaMinIterations,
                                (s.max_iterations + s.ctas_per_query - 1) / s.ctas_per_query);
  s.min_iterations = std::min(s.min_iterations, s.max_iterations);
  s.hash_reset_interval = 0;
  const uint64_t visits = std::min<uint64_t>(
      uint64_t(shape.rows),
      uint64_t{s.ctas_per_query} * (s.initial_nodes + uint64_t{s.max_iterations} * shape.degree));
  s.hash_bits = p.hash_bits ? p.hash_bits : std::clamp<uint32_t>(ceil_log2(4 * visits), 10, 22);
}

}  // namespace

search_plan make_search_plan(backend target, const search_params& p, const index_shape& shape,
                             uint32_t k, int64_t batch, memory_space space, int workers,
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
    if (p.algo == search_algo::multi_cta) {
      plan_cpu_walkers(s, p, shape, workers);
      return s;
    }
    if (p.num_random_samplings == 0 && filter != filter_kind::per_query) {
      s.random_samplings = kAutoCpuSamplings;
      s.initial_nodes = single_initial_nodes(s, shape);
    }
    s.hash_bits = cpu_hash_bits(p, s, shape);
    return s;
  }
  plan_gpu_search(s, p, shape, batch, space, workers, filter);
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
  b.knn = core::resolve_knn_algo(params.knn.algo, rows, b.intermediate_graph_degree, b.target);
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
    b.knn = core::resolve_knn_algo(params.knn.algo, b.partition_rows, b.intermediate_graph_degree,
                                   b.target);
  return b;
}

search_plan plan_search(const resources& res, const search_params& params, const index& idx,
                        uint32_t k, int64_t batch, memory_space space, const row_filter& filter) {
  CAGRA_EXPECTS(idx.size() > 0, "the index is empty");
  if (!filter.empty()) core::check_filter(filter, idx.size(), batch);
  core::visible_storage storage;
  return core::plan_visible(res, params, idx, k, batch, space,
                            core::visible_rows(idx, filter, batch, storage));
}

namespace core {

void expect_cuda_for_device_memory(const resources& res) {
  // Device memory never falls back to the CPU: it would need a host round trip the caller did
  // not ask for.
  CAGRA_EXPECTS(
      res.target != backend::cpu,
      "queries are in device memory, but the CPU backend was asked for: device memory needs the "
      "CUDA backend (use backend::cuda or automatic, or pass host memory)");
  CAGRA_EXPECTS(
      core::cuda_backend().device_count() > 0,
      "queries are in device memory, but no CUDA device is visible (or this build has no CUDA "
      "backend): device memory needs the CUDA backend and a GPU");
}

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
    expect_cuda_for_device_memory(res);
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
  // The GPU reads rows with 16-byte loads: a host row must end on such a boundary (the device
  // copy pads its rows instead). The CPU reads host rows anyway.
  CAGRA_EXPECTS(target != backend::cuda || params.stored_rows != rows_location::host ||
                    idx.vectors().view().row_bytes() % 16 == 0,
                "stored_rows = host needs rows of a multiple of 16 bytes, but this index's %s rows "
                "of dimension %u are %zu bytes (f32: dim a multiple of 4; f16: of 8); use "
                "stored_rows device or auto",
                to_string(idx.storage_dtype()), idx.dim(), idx.vectors().view().row_bytes());
  // The GPU's SMs, or the CPU's threads (algo multi_cta: a walker per thread).
  const int sms = target == backend::cuda ? core::cuda_backend().sm_count(res.device)
                                          : core::host_threads(res.num_threads);
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
  s.stored_rows = params.stored_rows;
  return s;
}

}  // namespace core

}  // namespace cagra
