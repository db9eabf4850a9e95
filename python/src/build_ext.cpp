// Building from Python: cagra::build and its two stages (the kNN graph, then optimize), exact
// neighbors (brute force, the ground-truth oracle), graph analysis and the build plan line. Each
// checks its arrays with the GIL held, then works with it released.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "ext_common.hpp"

#include <cagra/plan.hpp>

namespace cagra_py {

namespace {

cagra::knn_graph to_knn_graph(const ids_in& ids, const dist_in* distances) {
  cagra::knn_graph g;
  g.rows = static_cast<int64_t>(ids.shape(0));
  g.k = static_cast<uint32_t>(ids.shape(1));
  g.ids.assign(ids.data(), ids.data() + ids.size());
  if (distances) g.distances.assign(distances->data(), distances->data() + distances->size());
  return g;
}

}  // namespace

/** Checks `labels` for `rows` rows before any work: the count, and no label twice (the library's
 *  own check, made before a build rather than after it). */
void check_labels(const labels_in& labels, int64_t rows, const char* rows_what) {
  const auto n = static_cast<int64_t>(labels.shape(0));
  if (n != rows)
    throw cagra::error("labels has " + std::to_string(n) + " entries but " + rows_what + " has " +
                       std::to_string(rows) + " rows: give one label per row");
  std::vector<std::pair<int64_t, int64_t>> sorted(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) sorted[size_t(i)] = {labels.data()[i], i};
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].first == sorted[i - 1].first)
      throw cagra::error("label " + std::to_string(sorted[i].first) + " is given to two rows (" +
                         std::to_string(sorted[i - 1].second) + " and " +
                         std::to_string(sorted[i].second) + "): labels must be unique");
}

std::unique_ptr<py_index> build(any_array dataset, const cagra::index_params& params,
                                cagra::backend target, int num_threads,
                                std::optional<labels_in> labels, std::vector<int> devices) {
  vectors_in data(std::move(dataset), "dataset");
  if (labels) check_labels(*labels, data.rows(), "the dataset");
  nb::gil_scoped_release nogil;
  // A devices list builds on its first device (cagra::build).
  cagra::index idx =
      cagra::build(make_resources(target, num_threads, std::move(devices)), params, data.host());
  if (labels) idx.set_labels({labels->data(), labels->data() + labels->shape(0)});
  return std::make_unique<py_index>(std::move(idx));
}

nb::tuple build_knn_graph(any_array dataset, const cagra::index_params& params,
                          cagra::backend target, int num_threads) {
  vectors_in data(std::move(dataset), "dataset");
  cagra::knn_graph g;
  {
    nb::gil_scoped_release nogil;
    g = cagra::build_knn_graph(make_resources(target, num_threads), params, data.host());
  }
  return nb::make_tuple(to_numpy(std::move(g.ids), g.rows, g.k),
                        to_numpy(std::move(g.distances), g.rows, g.k));
}

numpy_out<uint32_t> optimize(const ids_in& knn_ids, std::optional<dist_in> knn_distances,
                             uint32_t graph_degree, cagra::reorder_kind reorder,
                             std::optional<any_array> dataset, cagra::metric metric,
                             cagra::backend target, int num_threads) {
  if (knn_distances &&
      (knn_distances->shape(0) != knn_ids.shape(0) || knn_distances->shape(1) != knn_ids.shape(1)))
    throw nb::value_error("knn_distances must have the shape of knn_ids");
  std::optional<vectors_in> data;
  if (dataset) data.emplace(std::move(*dataset), "dataset");
  const int64_t rows = static_cast<int64_t>(knn_ids.shape(0));
  std::vector<uint32_t> graph;
  {
    nb::gil_scoped_release nogil;
    const cagra::knn_graph g = to_knn_graph(knn_ids, knn_distances ? &*knn_distances : nullptr);
    graph = cagra::optimize(make_resources(target, num_threads), g, graph_degree, reorder,
                            data ? data->host() : cagra::dataset_view{}, metric);
  }
  return to_numpy(std::move(graph), rows, graph_degree);
}

nb::dict analyze(const ids_in& graph, int64_t two_hop_samples, int num_threads) {
  cagra::graph_stats s;
  {
    nb::gil_scoped_release nogil;
    const cagra::matrix_view<const uint32_t> g{graph.data(), static_cast<int64_t>(graph.shape(0)),
                                               static_cast<int64_t>(graph.shape(1))};
    s = cagra::analyze(make_resources(cagra::backend::cpu, num_threads), g, two_hop_samples);
  }
  nb::dict d;
  d["nodes"] = s.nodes;
  d["degree"] = s.degree;
  d["avg_two_hop"] = s.avg_two_hop;
  d["strong_components"] = s.strong_components;
  d["weak_components"] = s.weak_components;
  d["invalid_edges"] = s.invalid_edges;
  d["self_loops"] = s.self_loops;
  d["duplicate_edges"] = s.duplicate_edges;
  d["two_hop_samples"] = s.two_hop_samples;
  return d;
}

nb::tuple brute_force(any_array dataset, any_array queries, uint32_t k, cagra::metric metric,
                      bool exclude_self, cagra::backend target, int num_threads) {
  vectors_in data(std::move(dataset), "dataset");
  vectors_in q(std::move(queries), "queries");
  cagra::knn_graph g;
  {
    nb::gil_scoped_release nogil;
    g = cagra::brute_force_knn(make_resources(target, num_threads), metric, data.host(), q.host(),
                               k, exclude_self);
  }
  return nb::make_tuple(to_numpy(std::move(g.ids), g.rows, g.k),
                        to_numpy(std::move(g.distances), g.rows, g.k));
}

/** The build plan line (cagra::plan_build + to_string) for `rows` x `dim` vectors of `dtype`
 *  ("f32", "f16", "u8" or "i8": the names python/cagra/__init__.py maps numpy dtypes to; dim 0:
 *  unknown, device_bytes 0). */
std::string explain_build(int64_t rows, int64_t dim, const std::string& dtype,
                          const cagra::index_params& params, cagra::backend target,
                          int num_threads) {
  cagra::dtype t;
  if (dtype == "f32")
    t = cagra::dtype::f32;
  else if (dtype == "f16")
    t = cagra::dtype::f16;
  else if (dtype == "u8")
    t = cagra::dtype::u8;
  else if (dtype == "i8")
    t = cagra::dtype::i8;
  else
    throw nb::value_error(("unknown vector dtype '" + dtype + "'").c_str());
  return cagra::to_string(
      cagra::plan_build(make_resources(target, num_threads), params, rows, dim, t));
}

}  // namespace cagra_py
