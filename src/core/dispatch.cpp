// The public entry points: validate the call, convert inputs, resolve the plan, hand the work to
// the backend the plan names (core/backend.hpp), time the stages. The backend choice is
// core::resolve_backend, written once; the automatic values are core/plan.cpp's.
#include <algorithm>
#include <chrono>

#include <cagra/cagra.hpp>
#include <cagra/multi_gpu.hpp>
#include <cagra/plan.hpp>

#include "core/backend.hpp"
#include "core/convert.hpp"
#include "core/device_memory.hpp"
#include "core/filter.hpp"
#include "core/int8_traversal.hpp"
#include "core/multi_gpu/multi_gpu.hpp"
#include "core/partitioned_knn.hpp"
#include "core/plan.hpp"
#include "core/update/graph_edit.hpp"

namespace cagra {
namespace core {

std::vector<uint32_t> backend_ops::nn_descent_graph(const host_matrix& data, metric m, uint32_t k,
                                                    const knn_graph_params& p, uint64_t seed,
                                                    uint32_t degree, reorder_kind reorder,
                                                    const resources& res,
                                                    graph_stage_times* times) const {
  const auto t0 = std::chrono::steady_clock::now();
  graph_stage_times t;
  knn_graph knn = nn_descent(data, m, k, p, seed, res, &t.iterations);
  const auto t1 = std::chrono::steady_clock::now();
  if (reorder == reorder_kind::rank) knn.distances = {};
  std::vector<uint32_t> graph = optimize(knn, degree, reorder, {}, res);
  t.knn_seconds = std::chrono::duration<double>(t1 - t0).count();
  t.optimize_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  if (times) *times = t;
  return graph;
}

backend resolve_backend(const resources& res) {
  const backend_ops& gpu = cuda_backend();
  if (res.target == backend::cuda) {
    CAGRA_EXPECTS(gpu.device_count() > 0, "the CUDA backend was asked for, but %s",
                  gpu.unavailable_reason());
    return backend::cuda;
  }
  if (res.target == backend::automatic && gpu.device_count() > 0) return backend::cuda;
  return backend::cpu;
}

const backend_ops& backend_for(backend b) {
  return b == backend::cuda ? cuda_backend() : cpu_backend();
}

}  // namespace core

namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

int threads(const resources& res) { return core::host_threads(res.num_threads); }

/** The kNN graph of `data` (already in its storage/compute type) as `plan` says. */
knn_graph knn_stage(const resources& res, const build_plan& plan, const index_params& p,
                    const host_matrix& data, uint32_t* iterations) {
  const core::backend_ops& be = core::backend_for(plan.target);
  const uint32_t k = plan.intermediate_graph_degree;
  if (iterations) *iterations = 0;
  if (plan.knn == knn_algo::nn_descent)
    return be.nn_descent(data, p.metric, k, p.knn, p.seed, res, iterations);
  CAGRA_EXPECTS(
      k <= be.brute_force_max_k(),
      "the CUDA brute-force kNN graph takes intermediate_graph_degree <= %u (got %u): use "
      "knn_algo::nn_descent or the CPU backend",
      be.brute_force_max_k(), k);
  knn_graph g = be.brute_force(data, data, p.metric, k, true, res);
  if (plan.target == backend::cuda && res.progress) res.progress("brute-force kNN", 1.0);
  return g;
}

/** The graph optimization where `plan` puts it (build_plan::optimize). */
std::vector<uint32_t> optimize_stage(const resources& res, const build_plan& plan,
                                     const index_params& p, knn_graph knn) {
  const uint32_t d = p.graph_degree;
  switch (plan.optimize) {
    case optimize_path::device:
      return core::backend_for(plan.target).optimize(knn, d, p.reorder, {}, res);
    case optimize_path::prune_on_device: {
      // The reverse-edge sort is what does not fit: prune on the GPU, the rest on the host.
      if (p.reorder == reorder_kind::rank) knn.distances = {};
      const std::vector<uint32_t> pruned =
          core::backend_for(plan.target).optimize(knn, d, p.reorder, {true, false}, res);
      const int64_t n = knn.rows;
      knn = {};
      if (res.progress) res.progress("optimize: reverse edges and merge", 0.0);
      std::vector<uint32_t> graph = core::reverse_and_merge(pruned, n, d, threads(res));
      if (res.progress) res.progress("optimize", 1.0);
      return graph;
    }
    case optimize_path::host: break;
  }
  return core::cpu_backend().optimize(knn, d, p.reorder, {}, res);
}

/** The matrix the graph is computed on: the storage itself, or f32 when storage is f16. */
host_matrix compute_matrix(dataset_view dataset, const index_params& p, int nt) {
  storage_type s = p.storage == storage_type::f16 ? storage_type::f32 : p.storage;
  if (dataset.type == dtype::f16 && p.storage == storage_type::same_as_input) s = storage_type::f32;
  return core::to_storage(dataset, p.metric, s, nt);
}

void check_dataset(dataset_view d, const char* what) {
  CAGRA_EXPECTS(d.data != nullptr && d.rows > 0 && d.cols > 0, "%s is empty (%lld x %lld)", what,
                (long long)d.rows, (long long)d.cols);
}

const char* space_name(memory_space s) { return s == memory_space::device ? "device" : "host"; }

}  // namespace

namespace {

/** build() of `dataset`; `owned`, when given, holds the same rows and may be taken over as the
 *  stored vectors (or freed once they are converted). */
index build_from(const resources& res, const index_params& params, dataset_view dataset,
                 host_matrix* owned, build_report* report) {
  if (!res.devices.empty())  // one index is built on one device: the first one listed
    return build_from(core::single_device(res, devices_of(res)[0], res.num_threads), params,
                      dataset, owned, report);
  const auto t0 = clock_type::now();
  check_dataset(dataset, "dataset");
  const build_plan plan = plan_build(res, params, dataset.rows, dataset.cols, dataset.type);
  // Before any work: a build that cannot fit the device is refused with what it needs.
  // Rows handed over that need no conversion are the stored vectors already (no copy).
  // Cosine f32 rows are normalized in place.
  const bool take_over = owned && plan.storage == dataset.type &&
                         (params.metric != metric::cosine || dataset.type == dtype::f32);
  core::check_build_memory(res, params, plan, dataset.rows, dataset.cols, 0,
                           take_over ? uint64_t(owned->size_bytes()) : 0);
  build_report rep;
  rep.backend_used = plan.target;
  rep.knn_used = plan.knn;
  const bool gpu = plan.target == backend::cuda;
  const int nt = threads(res);
  host_matrix stored;
  if (take_over && params.metric == metric::cosine) {
    stored = core::normalized_in_place(std::move(*owned), nt);
  } else if (take_over) {
    core::check_finite(dataset, "dataset", nt);  // what to_storage checks, without the copy
    stored = std::move(*owned);
  } else {
    stored = core::to_storage(dataset, params.metric, params.storage, nt);
  }
  // The graph is computed on the stored vectors; the CPU computes f16 storage in f32 (its f16
  // distance is slow), the GPU reads the f16 rows themselves (half the device memory).
  host_matrix compute_copy;
  if (stored.type() == dtype::f16 && !gpu) compute_copy = compute_matrix(dataset, params, nt);
  const host_matrix& compute = stored.type() == dtype::f16 && !gpu ? compute_copy : stored;
  if (owned) *owned = host_matrix();  // converted: the input is no longer needed

  const auto t1 = clock_type::now();
  const bool partitioned = plan.partition_rows || !params.knn.checkpoint_dir.empty();
  std::vector<uint32_t> graph;
  if (!partitioned && plan.knn == knn_algo::nn_descent && plan.optimize == optimize_path::device) {
    // Both stages on one backend: the GPU keeps the kNN lists on the device in between.
    core::graph_stage_times times;
    graph =
        core::backend_for(plan.target)
            .nn_descent_graph(compute, params.metric, plan.intermediate_graph_degree, params.knn,
                              params.seed, params.graph_degree, params.reorder, res, &times);
    rep.knn_iterations = times.iterations;
    rep.knn_seconds = times.knn_seconds;
    rep.optimize_seconds = times.optimize_seconds;
  } else {
    knn_graph knn;
    if (partitioned) {
      // Partitions, or a checkpointed kNN stage (one partition when the set fits in one pass).
      core::partition_stats ps;
      knn = core::partitioned_knn(core::backend_for(plan.target), compute, params.metric,
                                  plan.intermediate_graph_degree, params.knn, params.seed,
                                  plan.partition_rows ? plan.partition_rows : compute.rows(), res,
                                  &ps, gpu);
      rep.knn_partitions = ps.partitions;
      rep.knn_partitions_resumed = ps.resumed;
      rep.knn_partitions_overlapped = ps.pipelined;
      rep.knn_iterations = ps.iterations;
    } else {
      knn = knn_stage(res, plan, params, compute, &rep.knn_iterations);
    }
    rep.knn_seconds = seconds_since(t1);
    compute_copy = host_matrix();
    const auto t2 = clock_type::now();
    graph = optimize_stage(res, plan, params, std::move(knn));
    rep.optimize_seconds = seconds_since(t2);
  }
  index idx(params.metric, std::move(stored), std::move(graph), params.graph_degree);
  rep.total_seconds = seconds_since(t0);
  if (report) *report = rep;
  return idx;
}

}  // namespace

index build(const resources& res, const index_params& params, dataset_view dataset,
            build_report* report) {
  return build_from(res, params, dataset, nullptr, report);
}

index build(const resources& res, const index_params& params, host_matrix&& dataset,
            build_report* report) {
  return build_from(res, params, dataset.view(), &dataset, report);
}

knn_graph build_knn_graph(const resources& res, const index_params& params, dataset_view dataset) {
  check_dataset(dataset, "dataset");
  const build_plan plan = plan_build(res, params, dataset.rows, dataset.cols, dataset.type);
  host_matrix compute = compute_matrix(dataset, params, threads(res));
  return knn_stage(res, plan, params, compute, nullptr);
}

std::vector<uint32_t> optimize(const resources& res, const knn_graph& knn, uint32_t graph_degree,
                               reorder_kind reorder, dataset_view dataset, metric m) {
  const core::backend_ops& be = core::backend_for(core::resolve_backend(res));
  CAGRA_EXPECTS(knn.rows > 0 && knn.k > 0, "the kNN graph is empty");
  CAGRA_EXPECTS(knn.rows > int64_t{knn.k},
                "the kNN graph has %lld rows but degree %u (needs rows > degree)",
                (long long)knn.rows, knn.k);
  if (reorder != reorder_kind::distance || knn.distances.size() == knn.ids.size())
    return be.optimize(knn, graph_degree, reorder, {}, res);
  // The kNN graph came without distances: compute them from the vectors.
  check_dataset(dataset, "dataset (needed for distance-based reordering)");
  CAGRA_EXPECTS(dataset.rows == knn.rows, "dataset has %lld rows, the kNN graph %lld",
                (long long)dataset.rows, (long long)knn.rows);
  knn_graph with = knn;
  core::fill_knn_distances(core::to_storage(dataset, m, storage_type::f32, threads(res)), m, with);
  return be.optimize(with, graph_degree, reorder, {}, res);
}

namespace {

/** search() once the filter holds the index's deleted rows (core::visible_rows): plan, convert
 *  the queries where needed, and run the backend. */
void search_visible(const resources& res, const search_params& params, const index& idx,
                    dataset_view queries, uint32_t k, matrix_view<uint32_t> neighbors,
                    matrix_view<float> distances, const row_filter& visible) {
  const memory_space space = queries.space;
  const search_plan plan = core::plan_visible(res, params, idx, k, queries.rows, space, visible);
  const core::backend_ops& be = core::backend_for(plan.target);
  if (space == memory_space::device) {
    if (plan.traversal == traversal_type::int8)
      core::search_int8(be, idx, queries, plan, visible, neighbors.data, distances.data, res);
    else
      be.search_device(idx, queries, plan, visible, neighbors.data, distances.data, res);
    return;
  }
  // Rows that need no conversion are searched in place: copying them cost a pass over the batch
  // and fresh pages every call (1.3 MB a 10K-query call of 128-d bytes, 15 MB of 384-d f32).
  // Cosine rows that the GPU normalizes itself go as they are (checked there too).
  const int nt = threads(res);
  search_plan call = plan;
  call.normalize_on_device = idx.metric() == metric::cosine && queries.type == dtype::f32 &&
                             be.normalizes_on_device(plan, queries.rows);
  host_matrix converted;
  if (core::queries_as_is(queries, idx.storage_dtype(), idx.metric()))
    core::check_finite(queries, "queries", nt);
  else if (!call.normalize_on_device)
    converted = core::queries_for(queries, idx.storage_dtype(), idx.metric(), nt);
  const dataset_view rows = converted.rows() ? converted.view() : queries;
  if (plan.traversal == traversal_type::int8)
    core::search_int8(be, idx, rows, call, visible, neighbors.data, distances.data, res);
  else
    be.search(idx, rows, call, visible, neighbors.data, distances.data, res, nullptr);
}

}  // namespace

void search(const resources& res, const search_params& params, const index& idx,
            dataset_view queries, uint32_t k, matrix_view<uint32_t> neighbors,
            matrix_view<float> distances, const row_filter& filter) {
  CAGRA_EXPECTS(idx.size() > 0, "the index is empty");
  check_dataset(queries, "queries");
  CAGRA_EXPECTS(queries.cols == idx.dim(), "queries have dimension %lld but the index has %u",
                (long long)queries.cols, idx.dim());
  CAGRA_EXPECTS(neighbors.data != nullptr && neighbors.rows == queries.rows && neighbors.cols == k,
                "neighbors must be a [%lld, %u] matrix (got [%lld, %lld])", (long long)queries.rows,
                k, (long long)neighbors.rows, (long long)neighbors.cols);
  CAGRA_EXPECTS(
      distances.data == nullptr || (distances.rows == queries.rows && distances.cols == k),
      "distances must be a [%lld, %u] matrix or empty (got [%lld, %lld])", (long long)queries.rows,
      k, (long long)distances.rows, (long long)distances.cols);
  const memory_space space = queries.space;
  CAGRA_EXPECTS(
      neighbors.space == space && (distances.data == nullptr || distances.space == space),
      "queries, neighbors and distances must all be in host memory or all in device memory "
      "(queries: %s, neighbors: %s, distances: %s)",
      space_name(space), space_name(neighbors.space),
      distances.data == nullptr ? "none" : space_name(distances.space));
  // Deleted rows (cagra::remove) are rows no query may see: folded into the filter once here.
  if (!filter.empty()) core::check_filter(filter, idx.size(), queries.rows);
  // A devices list: the replicated layer calls this search once per device (multi_gpu.hpp).
  if (!res.devices.empty()) {
    const std::vector<int> devices = devices_of(res);
    CAGRA_EXPECTS(space == memory_space::host || devices.size() == 1,
                  "queries in device memory are searched on the device that holds them: set "
                  "resources::device (resources::devices lists %zu devices)",
                  devices.size());
    if (devices.size() > 1 && core::resolve_backend(res) == backend::cuda)
      core::search_replicated(res, devices, params, idx, queries, k, neighbors, distances, filter);
    else
      search(core::single_device(res, devices[0], res.num_threads), params, idx, queries, k,
             neighbors, distances, filter);
    return;
  }
  // A kept AND of a stamped shared filter with the live rows, found by the stamp alone, holds
  // a stale stamp's old words: the answers are checked against the caller's words, and if one is
  // a row they disallow, the call runs again with the words compared (core::visible_rows).
  const bool check_answers = space == memory_space::host && !filter.empty() && !filter.queries &&
                             core::answer_check_pays(size_t(queries.rows) * k, idx.size());
  for (bool by_stamp = check_answers;; by_stamp = false) {
    core::visible_storage storage;
    const row_filter visible = core::visible_rows(
        idx, filter, queries.rows, storage,
        by_stamp ? core::stamp_trust::answers_checked : core::stamp_trust::compare);
    search_visible(res, params, idx, queries, k, neighbors, distances, visible);
    if (!storage.by_stamp ||
        core::answers_allowed(filter, neighbors.data, size_t(queries.rows) * k))
      return;
  }
}

void search(const resources& res, const search_params& params, const index& idx,
            dataset_view queries, uint32_t k, matrix_view<int64_t> labels,
            matrix_view<float> distances, const row_filter& filter) {
  CAGRA_EXPECTS(labels.data != nullptr && labels.rows == queries.rows && labels.cols == k,
                "labels must be a [%lld, %u] matrix (got [%lld, %lld])", (long long)queries.rows, k,
                (long long)labels.rows, (long long)labels.cols);
  CAGRA_EXPECTS(labels.space == queries.space,
                "queries and labels must both be in host memory or both in device memory "
                "(queries: %s, labels: %s)",
                space_name(queries.space), space_name(labels.space));
  if (labels.space == memory_space::device) {
    // Rows into scratch memory on the device, mapped to labels there (cuda::search_into_labels).
    core::expect_cuda_for_device_memory(res);
    const int device = res.devices.empty() ? res.device : res.devices.front();
    core::cuda_backend().search_into_labels(
        idx, res, device, labels.data, labels.rows * labels.cols, [&](uint32_t* rows) {
          search(res, params, idx, queries, k,
                 {rows, labels.rows, labels.cols, memory_space::device}, distances, filter);
        });
    return;
  }
  std::vector<uint32_t> rows(static_cast<size_t>(labels.rows * labels.cols));
  search(res, params, idx, queries, k, {rows.data(), labels.rows, labels.cols}, distances, filter);
  for (size_t i = 0; i < rows.size(); ++i)
    labels.data[i] = rows[i] == kInvalidId ? -1 : idx.label_of(rows[i]);
}

knn_graph brute_force_knn(const resources& res, metric m, dataset_view dataset,
                          dataset_view queries, uint32_t k, bool exclude_self) {
  check_dataset(dataset, "dataset");
  check_dataset(queries, "queries");
  CAGRA_EXPECTS(queries.cols == dataset.cols,
                "queries have dimension %lld but the dataset has %lld", (long long)queries.cols,
                (long long)dataset.cols);
  CAGRA_EXPECTS(!exclude_self || queries.rows == dataset.rows,
                "exclude_self needs the queries to be the dataset itself");
  backend target = core::resolve_backend(res);
  const core::backend_ops& gpu = core::cuda_backend();
  if (res.target == backend::cuda) {
    CAGRA_EXPECTS(k <= gpu.brute_force_max_k(),
                  "the CUDA brute force takes k <= %u (got %u); use the CPU backend",
                  gpu.brute_force_max_k(), k);
  } else if (target == backend::cuda) {
    // `automatic`: the GPU (cuBLAS) when k fits and the problem is large (nq * n >= 1e8
    // distances: below that the CPU finishes in well under a second and the GPU's setup would
    // dominate).
    if (k > gpu.brute_force_max_k() || double(queries.rows) * double(dataset.rows) < 1e8)
      target = backend::cpu;
  }
  const int nt = threads(res);
  const host_matrix data = core::to_storage(dataset, m, storage_type::same_as_input, nt);
  const host_matrix q = core::queries_for(queries, data.type(), m, nt);
  knn_graph out = core::backend_for(target).brute_force(data, q, m, k, exclude_self, res);
  if (target == backend::cuda && res.progress) res.progress("brute-force kNN", 1.0);
  return out;
}

double recall(matrix_view<const uint32_t> found, matrix_view<const uint32_t> truth, uint32_t k) {
  CAGRA_EXPECTS(k >= 1, "k must be >= 1");
  CAGRA_EXPECTS(found.rows == truth.rows, "the results have %lld rows but the ground truth %lld",
                (long long)found.rows, (long long)truth.rows);
  CAGRA_EXPECTS(found.cols >= k && truth.cols >= k,
                "recall@%u needs at least %u columns (results have %lld, ground truth %lld)", k, k,
                (long long)found.cols, (long long)truth.cols);
  CAGRA_EXPECTS(found.rows > 0, "no rows to compare");
  int64_t hits = 0;
  for (int64_t i = 0; i < found.rows; ++i) {
    const uint32_t* t = truth.row(i);
    const uint32_t* f = found.row(i);
    for (uint32_t a = 0; a < k; ++a) {
      if (f[a] == kInvalidId) continue;
      bool dup = std::find(f, f + a, f[a]) != f + a;
      if (!dup && std::find(t, t + k, f[a]) != t + k) ++hits;
    }
  }
  return double(hits) / (double(found.rows) * k);
}

backend search_backend(const resources& res) { return core::resolve_backend(res); }

std::string cuda_device_name(int device) { return core::cuda_backend().describe(device); }

bool cuda_available() { return core::cuda_backend().device_count() > 0; }

}  // namespace cagra
