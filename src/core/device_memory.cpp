// The device-memory model of the GPU build (core/device_memory.hpp): one term per cudaMalloc of
// the CUDA stages, named after the buffer, and the check that refuses a build that does not fit
// before any work starts.
#include "core/device_memory.hpp"

#include <algorithm>
#include <cstdio>

#include "core/backend.hpp"
#include "core/partitioned_knn.hpp"
#include "core/plan.hpp"

namespace cagra::core {

namespace gpu {
uint64_t radix_sort_scratch_bound(int64_t items) {
  if (items <= 0) return 1;
  constexpr uint64_t kPortion = (uint64_t{1} << 28) - 1;  // CUB's onesweep portion (items)
  constexpr uint64_t kMinTile = 4096, kDigits = 256, kMaxPasses = 4, kAlign = 256;
  const uint64_t n = uint64_t(items);
  const uint64_t portions = (n + kPortion - 1) / kPortion;
  const uint64_t blocks = (std::min(n, kPortion) + kMinTile - 1) / kMinTile;
  // bins (64-bit offsets), lookback (32-bit), counters; each aligned to 256 bytes.
  return portions * kMaxPasses * kDigits * 8 + blocks * kDigits * 4 + portions * kMaxPasses * 4 +
         3 * kAlign;
}
}  // namespace gpu

uint64_t stage_memory::requested() const {
  uint64_t s = 0;
  for (const auto& b : buffers) s += b.bytes;
  return s;
}

uint64_t stage_memory::total() const {
  constexpr uint64_t g = gpu::kAllocationGranularity;
  uint64_t s = 0;
  for (const auto& b : buffers) s += (b.bytes + g - 1) / g * g;
  return s;
}

stage_memory nn_descent_memory(int64_t rows, int64_t dim, dtype t, uint32_t k, float sample_rate) {
  const uint64_t n = uint64_t(std::max<int64_t>(rows, 0));
  const uint64_t row_bytes = (uint64_t(std::max<int64_t>(dim, 0)) * dtype_size(t) + 15) / 16 * 16;
  const uint64_t s = gpu::nn_descent_sample_size(k, sample_rate);
  const uint64_t cap = gpu::nn_descent_proposal_capacity(k);
  stage_memory m;
  m.stage = "nn_descent";
  m.buffers = {
      {"data", n * row_bytes},  // the rows, padded to 16 bytes
      {"keys", n * k * 8},      // (distance << 32 | id) per list entry
      {"flags", n * k},         // "new" flag per list entry
      {"props", n * cap * 8},   // proposal buffers; the result is decoded into them
      {"pcount", n * 4},        // proposals per node
      {"fwd_new", n * s * 4},  {"fwd_old", n * s * 4}, {"rev_new", n * s * 4},
      {"rev_old", n * s * 4},  {"rcnt", 2 * n * 4},  // reverse-list counts (new, old)
      {"counters", 4 * 8},                           // changed, past the room, held listed, held
  };
  return m;
}

stage_memory brute_force_memory(int64_t rows, int64_t queries, int64_t dim, dtype t, uint32_t k,
                                metric m) {
  const uint64_t n = uint64_t(std::max<int64_t>(rows, 1)),
                 nq = uint64_t(std::max<int64_t>(queries, 1));
  const uint64_t d = uint64_t(std::max<int64_t>(dim, 1));
  const int64_t qtile = std::min<int64_t>(int64_t(nq), gpu::kBruteForceQueryTile);
  const int64_t dtile = std::min<int64_t>(
      int64_t(n), std::max<int64_t>(gpu::kBruteForceMinDataTile,
                                    int64_t(gpu::kBruteForceTileBytes / 4) / qtile));
  stage_memory s;
  s.stage = "brute_force";
  s.buffers = {{"xs", n * d * 4}, {"qs", nq * d * 4}};  // rows and queries widened to f32
  // One staging buffer for the non-f32 uploads, the larger of the two.
  if (t != dtype::f32) s.buffers.push_back({"staging", std::max(n, nq) * d * dtype_size(t)});
  if (m == metric::l2) {
    s.buffers.push_back({"xnorm", n * 4});
    s.buffers.push_back({"qnorm", nq * 4});
  }
  const uint64_t slots = bits::next_pow2(k);
  s.buffers.push_back({"dots", uint64_t(qtile) * uint64_t(dtile) * 4});
  s.buffers.push_back({"state", uint64_t(qtile) * slots * 8});
  s.buffers.push_back({"d_ids", uint64_t(qtile) * k * 4});
  s.buffers.push_back({"d_dist", uint64_t(qtile) * k * 4});
  s.buffers.push_back({"cublas workspace", gpu::kCublasWorkspaceBytes});
  return s;
}

stage_memory optimize_memory(int64_t rows, uint32_t knn_degree, uint32_t degree,
                             bool with_distances, bool reverse, uint64_t sort_scratch) {
  const uint64_t n = uint64_t(std::max<int64_t>(rows, 0));
  const uint64_t nk = n * knn_degree, nd = n * degree;
  stage_memory reorder_phase, reverse_phase;
  reorder_phase.buffers = {{"d_ids", nk * 4}};  // the kNN graph's ids
  if (with_distances) reorder_phase.buffers.push_back({"d_dist", nk * 4});
  if (reverse)
    reverse_phase.buffers = {{"k0", nd * 4},
                             {"k1", nd * 4},  // sort keys, double-buffered
                             {"v0", nd * 4},
                             {"v1", nd * 4},  // sort values
                             {"start", n * 8},
                             {"end", n * 8},  // each target's segment
                             {"temp", std::max<uint64_t>(sort_scratch, 1)}};  // CUB scratch
  stage_memory s;
  s.stage = "optimize";
  s.buffers = {{"d_pruned", nd * 4}, {"d_bad", 8}};
  const stage_memory& peak =
      reverse_phase.total() >= reorder_phase.total() ? reverse_phase : reorder_phase;
  s.buffers.insert(s.buffers.end(), peak.buffers.begin(), peak.buffers.end());
  return s;
}

uint64_t build_memory::peak() const { return std::max(knn.total(), optimize.total()); }

const stage_memory& build_memory::peak_stage() const {
  return knn.total() >= optimize.total() ? knn : optimize;
}

build_memory gpu_build_memory(const build_plan& plan, const index_params& params, int64_t rows,
                              int64_t dim) {
  build_memory b;
  const uint32_t k = plan.intermediate_graph_degree;
  // The GPU computes the graph on the stored rows (f16 storage: the f16 rows).
  b.knn = plan.knn == knn_algo::nn_descent
              ? nn_descent_memory(rows, dim, plan.storage, k, params.knn.sample_rate)
              : brute_force_memory(rows, rows, dim, plan.storage, k, params.metric);
  b.optimize =
      optimize_memory(rows, k, plan.graph_degree, params.reorder == reorder_kind::distance, true,
                      gpu::radix_sort_scratch_bound(rows * int64_t{plan.graph_degree}));
  return b;
}

namespace {
/** Peak of one pass of the GPU kNN stage over `rows` rows (degree and algorithm as the plan
 *  resolves them for a set of that size). */
uint64_t knn_pass_bytes(const build_plan& plan, const index_params& params, int64_t rows,
                        int64_t dim) {
  const uint32_t k = uint32_t(std::min<int64_t>(plan.intermediate_graph_degree, rows - 1));
  const knn_algo algo = resolve_knn_algo(params.knn.algo, rows, k, backend::cuda);
  return (algo == knn_algo::nn_descent
              ? nn_descent_memory(rows, dim, plan.storage, k, params.knn.sample_rate)
              : brute_force_memory(rows, rows, dim, plan.storage, k, params.metric))
      .total();
}
}  // namespace

void fit_build(build_plan& plan, const index_params& params, int64_t rows, int64_t dim,
               uint64_t budget) {
  const uint32_t k = plan.intermediate_graph_degree, d = plan.graph_degree;
  const bool with_dist = params.reorder == reorder_kind::distance;
  int64_t part = params.knn.partition_rows > 0 && params.knn.partition_rows < rows
                     ? params.knn.partition_rows
                     : 0;
  if (part == 0 && params.knn.partition_rows == 0 &&
      knn_pass_bytes(plan, params, rows, dim) > budget) {
    // The largest partition whose pass fits (the need grows with the rows).
    int64_t lo = min_partition_rows(k), hi = rows - 1;
    if (lo < rows && knn_pass_bytes(plan, params, lo, dim) <= budget) {
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (knn_pass_bytes(plan, params, mid, dim) <= budget)
          lo = mid;
        else
          hi = mid - 1;
      }
      part = lo;
    }
  }
  plan.partition_rows = part;
  plan.device_budget = budget;
  const uint64_t knn_peak = knn_pass_bytes(plan, params, part ? part : rows, dim);
  const uint64_t all =
      optimize_memory(rows, k, d, with_dist, true, gpu::radix_sort_scratch_bound(rows * int64_t{d}))
          .total();
  const uint64_t prune = optimize_memory(rows, k, d, with_dist, false, 0).total();
  plan.optimize = all <= budget     ? optimize_path::device
                  : prune <= budget ? optimize_path::prune_on_device
                                    : optimize_path::host;
  const uint64_t opt_peak = plan.optimize == optimize_path::device            ? all
                            : plan.optimize == optimize_path::prune_on_device ? prune
                                                                              : 0;
  plan.device_bytes = std::max(knn_peak, opt_peak);
}

uint64_t host_build_bytes(const build_plan& plan, const index_params& params, int64_t rows,
                          int64_t dim, int threads) {
  const uint64_t n = uint64_t(std::max<int64_t>(rows, 0));
  const uint64_t row_bytes = uint64_t(std::max<int64_t>(dim, 0)) * dtype_size(plan.storage);
  const uint64_t k = plan.intermediate_graph_degree, d = plan.graph_degree;
  const uint64_t lists = n * k * 8;  // ids and distances
  // The kNN stage: the backend's lists; partitioned (or checkpointed), the merged lists beside
  // one partition's gathered rows and its own lists.
  uint64_t knn = lists;
  const bool partitioned = plan.partition_rows || !params.knn.checkpoint_dir.empty();
  if (!partitioned && plan.target == backend::cuda && plan.knn == knn_algo::nn_descent &&
      plan.optimize == optimize_path::device)
    return n * row_bytes + n * d * 4;  // the lists stay on the device: only the graph comes back
  if (partitioned) {
    const uint64_t m = plan.partition_rows ? uint64_t(plan.partition_rows) : n;
    knn = lists + n * 4 + m * row_bytes + m * k * 8;
  }
  // The optimization, the kNN lists still held.
  uint64_t opt = 0;
  switch (plan.optimize) {
    case optimize_path::device:
      opt = lists + n * d * 4;  // the graph copied back
      break;
    case optimize_path::prune_on_device:  // ids + pruned, then reverse_and_merge's four arrays
      opt = std::max(n * k * 4 + n * d * 4, 4 * n * d * 4 + n * 4);
      break;
    case optimize_path::host:
      opt = lists +
            std::max(n * d * 4 + uint64_t(std::max(threads, 1)) * n * 4, 4 * n * d * 4 + n * 4);
      break;
  }
  return n * row_bytes + std::max(knn, opt);
}

uint64_t available_host_memory() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
  std::fclose(f);
  return uint64_t(kib) * 1024;
}

std::string format_bytes(uint64_t bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double v = double(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

namespace {

/** The peak of a build of `rows` rows as the plan would make it (the kNN algorithm and the
 *  automatic intermediate degree follow the row count). */
uint64_t peak_for_rows(const build_plan& plan, const index_params& params, int64_t rows,
                       int64_t dim) {
  build_plan p = plan;
  if (params.intermediate_graph_degree == 0)
    p.intermediate_graph_degree =
        uint32_t(std::min<int64_t>(2 * int64_t{params.graph_degree}, rows - 1));
  p.knn = resolve_knn_algo(params.knn.algo, rows, p.intermediate_graph_degree, backend::cuda);
  return gpu_build_memory(p, params, rows, dim).peak();
}

/** The fewest shards whose largest shard fits `budget` (0 when none up to 65536 does). */
int64_t shards_to_fit(const build_plan& plan, const index_params& params, int64_t rows, int64_t dim,
                      uint64_t budget) {
  for (int64_t s = 2; s <= 65536; ++s) {
    const int64_t shard = (rows + s - 1) / s;
    if (shard <= int64_t{plan.graph_degree}) return 0;  // a shard needs more rows than d
    if (peak_for_rows(plan, params, shard, dim) <= budget) return s;
  }
  return 0;
}

}  // namespace

void check_build_memory(const resources& res, const index_params& params, const build_plan& plan,
                        int64_t rows, int64_t dim, int64_t all_rows, uint64_t host_in_hand) {
  if (plan.target != backend::cuda || plan.device_bytes == 0) return;
  const uint64_t avail = available_host_memory();
  CAGRA_EXPECTS(
      avail == 0 || plan.host_bytes <= avail + host_in_hand,
      "out of host memory: the GPU build of %lld x %lld %s rows (intermediate_graph_degree %u, "
      "graph_degree %u%s) needs about %s of host memory (the stored vectors, the kNN lists and "
      "the graph optimization's arrays: docs/large_builds.md), but %s are available%s: lower the "
      "need with f16 storage (--storage f16), a smaller intermediate_graph_degree, or a build "
      "over several shards or machines (cagra::build_sharded, cagra build --shards N)",
      (long long)rows, (long long)dim, to_string(plan.storage), plan.intermediate_graph_degree,
      plan.graph_degree,
      plan.partition_rows
          ? (", partitions of " + std::to_string(plan.partition_rows) + " rows").c_str()
          : "",
      format_bytes(plan.host_bytes).c_str(), format_bytes(avail).c_str(),
      host_in_hand
          ? (" besides the " + format_bytes(host_in_hand) + " of rows it takes over").c_str()
          : "");
  const uint64_t free_b = cuda_backend().free_device_memory(res.device);
  const bool capped = params.max_device_memory != 0 && params.max_device_memory < free_b;
  const uint64_t budget = capped ? params.max_device_memory : free_b;
  if (plan.device_bytes <= budget) return;
  const build_memory m = gpu_build_memory(plan, params, rows, dim);
  std::string has =
      capped ? "max_device_memory allows " + format_bytes(budget) + " (device " +
                   std::to_string(res.device) + " has " + format_bytes(free_b) + " free)"
             : "device " + std::to_string(res.device) + " has " + format_bytes(free_b) + " free" +
                   (params.max_device_memory
                        ? " (max_device_memory " + format_bytes(params.max_device_memory) + ")"
                        : std::string());
  std::string lower =
      "a smaller graph_degree / intermediate_graph_degree (--graph-degree, "
      "--intermediate-degree)";
  if (plan.storage == dtype::f32) lower += ", f16 storage (storage_type::f16, --storage f16)";
  const int64_t shards =
      shards_to_fit(plan, params, all_rows > rows ? all_rows : rows, dim, budget);
  lower +=
      std::string(", or a build over ") + (all_rows > rows ? "more" : "several") +
      " shards or devices (cagra::build_sharded, cagra build --shards N" +
      (shards ? "; " + std::to_string(shards) + " shards would fit this budget" : std::string()) +
      ")";
  if (params.max_device_memory && capped) lower += ", or a larger max_device_memory";
  // The least a partitioned build needs: partitions of the fewest rows, optimize on the host.
  const int64_t least_rows =
      std::min<int64_t>(rows - 1, min_partition_rows(plan.intermediate_graph_degree));
  lower += "; the kNN stage in partitions of the fewest rows (" + std::to_string(least_rows) +
           ", knn.partition_rows) would still need " +
           format_bytes(knn_pass_bytes(plan, params, least_rows, dim));
  CAGRA_FAIL(
      "out of device memory: the GPU build of %lld x %lld %s rows (intermediate_graph_degree %u, "
      "graph_degree %u, %s) "
      "needs %s of device memory (%.0f bytes a row; its %s stage: %s, the %s stage: %s), but %s: "
      "lower the need with %s",
      (long long)rows, (long long)dim, to_string(plan.storage), plan.intermediate_graph_degree,
      plan.graph_degree, to_string(plan.knn), format_bytes(plan.device_bytes).c_str(),
      double(plan.device_bytes) / double(std::max<int64_t>(rows, 1)), m.knn.stage.c_str(),
      format_bytes(m.knn.total()).c_str(), m.optimize.stage.c_str(),
      format_bytes(m.optimize.total()).c_str(), has.c_str(), lower.c_str());
}

}  // namespace cagra::core
