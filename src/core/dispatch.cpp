// The public entry points: validate the call, convert inputs, pick the backend, time the stages.
// Only this file decides between the CPU and CUDA backends.
#include <algorithm>
#include <chrono>
#include <cstring>

#include <cagra/cagra.hpp>

#include "core/convert.hpp"
#include "cpu/backend.hpp"
#include "cpu/distance.hpp"
#ifdef CAGRA_HAVE_CUDA
#include "cuda/backend.hpp"
#include "cuda/graph/nn_descent.hpp"
#include "cuda/graph/optimize.hpp"
#endif

namespace cagra {
namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/** Build stages (kNN graph, optimize): the CUDA backend when asked for (it needs a visible GPU)
 *  or for `automatic` when a GPU is visible; the CPU otherwise. */
backend resolve_backend(const resources& res) {
#ifdef CAGRA_HAVE_CUDA
  if (res.target == backend::cuda) {
    CAGRA_EXPECTS(cuda::device_count() > 0, "the CUDA backend was asked for but no CUDA device is visible");
    return backend::cuda;
  }
  if (res.target == backend::automatic && cuda::device_count() > 0) return backend::cuda;
#else
  CAGRA_EXPECTS(res.target != backend::cuda,
                "this build has no CUDA backend (configure with -DCAGRA_CUDA=ON on a machine with nvcc)");
#endif
  return backend::cpu;
}

/** Search: the CUDA backend when asked for (it needs a visible GPU), or for `automatic` when a
 *  GPU is visible (its single- and multi-CTA kernels take itopk up to 4096); the CPU otherwise. */
backend resolve_search_backend(const resources& res) {
#ifdef CAGRA_HAVE_CUDA
  if (res.target == backend::cuda) {
    CAGRA_EXPECTS(cuda::device_count() > 0,
                  "the CUDA backend was asked for but no CUDA device is visible");
    return backend::cuda;
  }
  if (res.target == backend::automatic && cuda::device_count() > 0) return backend::cuda;
  return backend::cpu;
#else
  return resolve_backend(res);
#endif
}

/** Exact or approximate kNN graph over `data` (already in its storage/compute type) on backend
 *  `b` (resolved). */
knn_graph knn_stage(const resources& res, backend b, const index_params& p, const host_matrix& data,
                    knn_algo* used, uint32_t* iterations) {
  const uint32_t k = p.intermediate_graph_degree;
  const int64_t n = data.rows();
  knn_algo algo = p.knn.algo;
  // NN-descent costs ~ c * n * k^2 distances, brute force n^2. Measured on Fashion-MNIST (60K rows,
  // k = 64, 2 threads): NN-descent 24.4 s, brute force 84.1 s, so the crossover is near n = 4 k^2.
  if (algo == knn_algo::automatic)
    algo = n <= std::max<int64_t>(10000, int64_t{4} * k * k) ? knn_algo::brute_force : knn_algo::nn_descent;
  if (used) *used = algo;
  if (iterations) *iterations = 0;
#ifdef CAGRA_HAVE_CUDA
  if (b == backend::cuda) {
    if (algo == knn_algo::brute_force) {
      CAGRA_EXPECTS(k <= cuda::brute_force_max_k(),
                    "the CUDA brute-force kNN graph takes intermediate_graph_degree <= %u (got %u): use "
                    "knn_algo::nn_descent or the CPU backend", cuda::brute_force_max_k(), k);
      knn_graph g = cuda::brute_force(data, data, p.metric, k, true, res.device);
      if (res.progress) res.progress("brute-force kNN", 1.0);
      return g;
    }
    return cuda::nn_descent(data, p.metric, k, p.knn, p.seed, res.device, res.progress, iterations);
  }
#endif
  (void)b;
  if (algo == knn_algo::brute_force)
    return cpu::brute_force(data, data, p.metric, k, true, res.num_threads, res.progress);
  return cpu::nn_descent(data, p.metric, k, p.knn, p.seed, res.num_threads, res.progress, iterations);
}

/** Graph optimization (paper §III-B) on backend `b` (resolved); both give the same bytes. */
std::vector<uint32_t> optimize_stage(const resources& res, backend b, const knn_graph& knn, uint32_t degree,
                                     reorder_kind reorder) {
#ifdef CAGRA_HAVE_CUDA
  if (b == backend::cuda) return cuda::optimize(knn, degree, reorder, {}, res.device, res.progress);
#endif
  (void)b;
  return cpu::optimize(knn, degree, reorder, res.num_threads, res.progress);
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

/** Search with queries and results in device memory: the CUDA backend reads and writes them in
 *  place (no host round trip); `automatic` means CUDA here, and nothing falls back to the CPU. */
void search_device_memory(const resources& res, const search_params& params, const index& idx,
                          dataset_view queries, uint32_t k, matrix_view<uint32_t> neighbors,
                          matrix_view<float> distances) {
  CAGRA_EXPECTS(res.target != backend::cpu,
                "queries are in device memory, but the CPU backend was asked for: device memory needs the "
                "CUDA backend (use backend::cuda or automatic, or pass host memory)");
#ifdef CAGRA_HAVE_CUDA
  CAGRA_EXPECTS(cuda::device_count() > 0,
                "queries are in device memory, but no CUDA device is visible: device memory needs the "
                "CUDA backend and a GPU");
  CAGRA_EXPECTS(cuda::can_search(idx, k, params),
                "the CUDA search does not take this search (a %s index of dimension %u, itopk %u; it takes "
                "itopk <= 4096 and byte vectors of dim <= 16384), and queries in device memory cannot go to "
                "the CPU backend: pass host memory", to_string(idx.storage_dtype()), idx.dim(),
                std::max(params.itopk_size, k));
  const cpu::search_plan plan = cpu::make_search_plan(params, k, idx.size(), idx.graph_degree());
  cuda::search_device(idx, queries, k, params, plan, neighbors.data, distances.data, res.device);
#else
  (void)params, (void)idx, (void)queries, (void)k, (void)neighbors, (void)distances;
  CAGRA_FAIL("queries are in device memory, but this build has no CUDA backend: device memory needs the "
             "CUDA backend (configure with -DCAGRA_CUDA=ON)");
#endif
}

}  // namespace

index build(const resources& res, const index_params& params, dataset_view dataset,
            build_report* report) {
  const auto t0 = clock_type::now();
  check_dataset(dataset, "dataset");
  params.validate(dataset.rows);
  build_report rep;
  rep.backend_used = resolve_backend(res);
  const bool gpu = rep.backend_used == backend::cuda;
  const int nt = cpu::thread_count(res.num_threads);
  host_matrix stored = core::to_storage(dataset, params.metric, params.storage, nt);
  // The graph is computed on the stored vectors; the CPU computes f16 storage in f32 (its f16
  // distance is slow), the GPU reads the f16 rows themselves (half the device memory).
  host_matrix compute_copy;
  if (stored.type() == dtype::f16 && !gpu) compute_copy = compute_matrix(dataset, params, nt);
  const host_matrix& compute = stored.type() == dtype::f16 && !gpu ? compute_copy : stored;

  const auto t1 = clock_type::now();
  knn_graph knn = knn_stage(res, rep.backend_used, params, compute, &rep.knn_used, &rep.knn_iterations);
  rep.knn_seconds = seconds_since(t1);
  const auto t2 = clock_type::now();
  std::vector<uint32_t> graph = optimize_stage(res, rep.backend_used, knn, params.graph_degree, params.reorder);
  rep.optimize_seconds = seconds_since(t2);
  index idx(params.metric, std::move(stored), std::move(graph), params.graph_degree);
  rep.total_seconds = seconds_since(t0);
  if (report) *report = rep;
  return idx;
}

knn_graph build_knn_graph(const resources& res, const index_params& params, dataset_view dataset) {
  check_dataset(dataset, "dataset");
  params.validate(dataset.rows);
  const backend b = resolve_backend(res);
  host_matrix compute = compute_matrix(dataset, params, cpu::thread_count(res.num_threads));
  return knn_stage(res, b, params, compute, nullptr, nullptr);
}

std::vector<uint32_t> optimize(const resources& res, const knn_graph& knn, uint32_t graph_degree,
                               reorder_kind reorder, dataset_view dataset, metric m) {
  const backend b = resolve_backend(res);
  CAGRA_EXPECTS(knn.rows > 0 && knn.k > 0, "the kNN graph is empty");
  CAGRA_EXPECTS(knn.rows > int64_t{knn.k}, "the kNN graph has %lld rows but degree %u (needs rows > degree)",
                (long long)knn.rows, knn.k);
  if (reorder == reorder_kind::distance && knn.distances.size() != knn.ids.size()) {
    // The kNN graph came without distances: compute them from the vectors.
    check_dataset(dataset, "dataset (needed for distance-based reordering)");
    CAGRA_EXPECTS(dataset.rows == knn.rows, "dataset has %lld rows, the kNN graph %lld",
                  (long long)dataset.rows, (long long)knn.rows);
    knn_graph with = knn;
    host_matrix data = core::to_storage(dataset, m, storage_type::f32, cpu::thread_count(res.num_threads));
    const float* x = static_cast<const float*>(data.data());
    const cpu::distance<float> dist{m, static_cast<size_t>(data.cols())};
    with.distances.resize(with.ids.size());
    for (int64_t i = 0; i < knn.rows; ++i)
      for (uint32_t j = 0; j < knn.k; ++j) {
        uint32_t id = knn.ids[i * knn.k + j];
        CAGRA_EXPECTS(id < knn.rows, "kNN graph row %lld holds id %u >= %lld", (long long)i, id, (long long)knn.rows);
        with.distances[i * knn.k + j] = dist(x + i * data.cols(), x + int64_t{id} * data.cols());
      }
    return optimize_stage(res, b, with, graph_degree, reorder);
  }
  return optimize_stage(res, b, knn, graph_degree, reorder);
}

void search(const resources& res, const search_params& params, const index& idx,
            dataset_view queries, uint32_t k, matrix_view<uint32_t> neighbors,
            matrix_view<float> distances) {
  CAGRA_EXPECTS(idx.size() > 0, "the index is empty");
  check_dataset(queries, "queries");
  CAGRA_EXPECTS(queries.cols == idx.dim(), "queries have dimension %lld but the index has %u",
                (long long)queries.cols, idx.dim());
  params.validate(k, idx.size(), idx.graph_degree());
  CAGRA_EXPECTS(neighbors.data != nullptr && neighbors.rows == queries.rows && neighbors.cols == k,
                "neighbors must be a [%lld, %u] matrix (got [%lld, %lld])", (long long)queries.rows, k,
                (long long)neighbors.rows, (long long)neighbors.cols);
  CAGRA_EXPECTS(distances.data == nullptr || (distances.rows == queries.rows && distances.cols == k),
                "distances must be a [%lld, %u] matrix or empty (got [%lld, %lld])",
                (long long)queries.rows, k, (long long)distances.rows, (long long)distances.cols);
  const memory_space space = queries.space;
  CAGRA_EXPECTS(neighbors.space == space && (distances.data == nullptr || distances.space == space),
                "queries, neighbors and distances must all be in host memory or all in device memory "
                "(queries: %s, neighbors: %s, distances: %s)", space_name(space), space_name(neighbors.space),
                distances.data == nullptr ? "none" : space_name(distances.space));
  if (space == memory_space::device) {
    search_device_memory(res, params, idx, queries, k, neighbors, distances);
    return;
  }
  backend target = resolve_search_backend(res);
#ifdef CAGRA_HAVE_CUDA
  // `automatic` stays on the CPU for what the GPU kernels do not take (itopk > 4096, ...).
  if (target == backend::cuda && res.target == backend::automatic && !cuda::can_search(idx, k, params))
    target = backend::cpu;
#endif
  host_matrix q = core::queries_for(queries, idx.storage_dtype(), idx.metric(),
                                    cpu::thread_count(res.num_threads));
#ifdef CAGRA_HAVE_CUDA
  if (target == backend::cuda) {
    const cpu::search_plan plan = cpu::make_search_plan(params, k, idx.size(), idx.graph_degree());
    cuda::search(idx, q, k, params, plan, neighbors.data, distances.data, res.device);
    return;
  }
#endif
  (void)target;
  cpu::search(idx, q, k, params, neighbors.data, distances.data, res.num_threads);
}

knn_graph brute_force_knn(const resources& res, metric m, dataset_view dataset, dataset_view queries,
                          uint32_t k, bool exclude_self) {
  check_dataset(dataset, "dataset");
  check_dataset(queries, "queries");
  CAGRA_EXPECTS(queries.cols == dataset.cols, "queries have dimension %lld but the dataset has %lld",
                (long long)queries.cols, (long long)dataset.cols);
  CAGRA_EXPECTS(!exclude_self || queries.rows == dataset.rows,
                "exclude_self needs the queries to be the dataset itself");
  const int nt = cpu::thread_count(res.num_threads);
#ifdef CAGRA_HAVE_CUDA
  // The GPU (cuBLAS, src/cuda/brute_force) when asked for, or for `automatic` when a GPU is
  // visible, k <= cuda::brute_force_max_k() and the problem is large (nq * n >= 1e8 distances:
  // below that the CPU finishes in well under a second and the GPU's setup would dominate).
  bool gpu = false;
  if (res.target == backend::cuda) {
    CAGRA_EXPECTS(cuda::device_count() > 0, "the CUDA backend was asked for but no CUDA device is visible");
    CAGRA_EXPECTS(k <= cuda::brute_force_max_k(), "the CUDA brute force takes k <= %u (got %u); use the CPU backend",
                  cuda::brute_force_max_k(), k);
    gpu = true;
  } else if (res.target == backend::automatic) {
    gpu = k <= cuda::brute_force_max_k() && double(queries.rows) * double(dataset.rows) >= 1e8 &&
          cuda::device_count() > 0;
  }
  if (gpu) {
    host_matrix data = core::to_storage(dataset, m, storage_type::same_as_input, nt);
    host_matrix q = core::queries_for(queries, data.type(), m, nt);
    knn_graph out = cuda::brute_force(data, q, m, k, exclude_self, res.device);
    if (res.progress) res.progress("brute-force kNN", 1.0);
    return out;
  }
#else
  resolve_backend(res);
#endif
  host_matrix data = core::to_storage(dataset, m, storage_type::same_as_input, nt);
  host_matrix q = core::queries_for(queries, data.type(), m, nt);
  return cpu::brute_force(data, q, m, k, exclude_self, res.num_threads, res.progress);
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

backend search_backend(const resources& res) { return resolve_search_backend(res); }

std::string cuda_device_name(int device) {
#ifdef CAGRA_HAVE_CUDA
  return cuda::describe(cuda::cuda_info(device));
#else
  (void)device;
  CAGRA_FAIL("this build has no CUDA backend");
#endif
}

bool cuda_available() {
#ifdef CAGRA_HAVE_CUDA
  return cuda::device_count() > 0;
#else
  return false;
#endif
}

}  // namespace cagra
