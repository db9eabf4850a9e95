// The enums and parameter structs of the extension, bound field by field under the C++ names.
// Default-constructed, the structs carry the C++ defaults (include/cagra/params.hpp) that
// python/cagra/_options.py reads as the package's keyword defaults.
#include "ext_common.hpp"

namespace cagra_py {

void bind_enums(nb::module_& m) {
  nb::enum_<cagra::metric>(m, "Metric")
      .value("l2", cagra::metric::l2)
      .value("inner_product", cagra::metric::inner_product)
      .value("cosine", cagra::metric::cosine);
  nb::enum_<cagra::backend>(m, "Backend")
      .value("auto", cagra::backend::automatic)
      .value("cpu", cagra::backend::cpu)
      .value("cuda", cagra::backend::cuda);
  nb::enum_<cagra::knn_algo>(m, "KnnAlgo")
      .value("auto", cagra::knn_algo::automatic)
      .value("nn_descent", cagra::knn_algo::nn_descent)
      .value("brute_force", cagra::knn_algo::brute_force);
  nb::enum_<cagra::reorder_kind>(m, "Reorder")
      .value("rank", cagra::reorder_kind::rank)
      .value("distance", cagra::reorder_kind::distance);
  nb::enum_<cagra::storage_type>(m, "Storage")
      .value("same", cagra::storage_type::same_as_input)
      .value("f32", cagra::storage_type::f32)
      .value("f16", cagra::storage_type::f16);
  nb::enum_<cagra::search_algo>(m, "SearchAlgo")
      .value("auto", cagra::search_algo::automatic)
      .value("single_cta", cagra::search_algo::single_cta)
      .value("multi_cta", cagra::search_algo::multi_cta);
  nb::enum_<cagra::filter_algo>(m, "FilterAlgo")
      .value("auto", cagra::filter_algo::automatic)
      .value("graph", cagra::filter_algo::graph)
      .value("exact", cagra::filter_algo::exact);
  nb::enum_<cagra::traversal_type>(m, "Traversal")
      .value("exact", cagra::traversal_type::exact)
      .value("int8", cagra::traversal_type::int8);
  nb::enum_<cagra::rows_location>(m, "RowsLocation")
      .value("auto", cagra::rows_location::automatic)
      .value("device", cagra::rows_location::device)
      .value("host", cagra::rows_location::host);
}

void bind_params(nb::module_& m) {
  using ip = cagra::index_params;
  nb::class_<ip>(m, "IndexParams")
      .def(nb::init<>())
      .def_rw("metric", &ip::metric)
      .def_rw("graph_degree", &ip::graph_degree)
      .def_rw("intermediate_graph_degree", &ip::intermediate_graph_degree)
      .def_prop_rw(
          "knn_algo", [](const ip& p) { return p.knn.algo; },
          [](ip& p, cagra::knn_algo v) { p.knn.algo = v; })
      .def_prop_rw(
          "knn_max_iterations", [](const ip& p) { return p.knn.max_iterations; },
          [](ip& p, uint32_t v) { p.knn.max_iterations = v; })
      .def_prop_rw(
          "knn_termination_threshold", [](const ip& p) { return p.knn.termination_threshold; },
          [](ip& p, float v) { p.knn.termination_threshold = v; })
      .def_prop_rw(
          "knn_sample_rate", [](const ip& p) { return p.knn.sample_rate; },
          [](ip& p, float v) { p.knn.sample_rate = v; })
      .def_prop_rw(
          "knn_partition_rows", [](const ip& p) { return p.knn.partition_rows; },
          [](ip& p, int64_t v) { p.knn.partition_rows = v; })
      .def_prop_rw(
          "knn_checkpoint_dir", [](const ip& p) { return p.knn.checkpoint_dir; },
          [](ip& p, const std::string& v) { p.knn.checkpoint_dir = v; })
      .def_rw("reorder", &ip::reorder)
      .def_rw("storage", &ip::storage)
      .def_rw("seed", &ip::seed)
      .def_rw("max_device_memory", &ip::max_device_memory);
  using sp = cagra::search_params;
  nb::class_<sp>(m, "SearchParams")
      .def(nb::init<>())
      .def_rw("itopk_size", &sp::itopk_size)
      .def_rw("search_width", &sp::search_width)
      .def_rw("max_iterations", &sp::max_iterations)
      .def_rw("min_iterations", &sp::min_iterations)
      .def_rw("team_size", &sp::team_size)
      .def_rw("algo", &sp::algo)
      .def_rw("hash_bits", &sp::hash_bits)
      .def_rw("hash_reset_interval", &sp::hash_reset_interval)
      .def_rw("persistent", &sp::persistent)
      .def_rw("persistent_lifetime_us", &sp::persistent_lifetime_us)
      .def_rw("num_random_samplings", &sp::num_random_samplings)
      .def_rw("seed", &sp::seed)
      .def_rw("filter", &sp::filter)
      .def_rw("traversal", &sp::traversal)
      .def_rw("rerank", &sp::rerank)
      .def_rw("stored_rows", &sp::stored_rows);

  using ep = cagra::extend_params;
  nb::class_<ep>(m, "ExtendParams")
      .def(nb::init<>())
      .def_rw("chunk_size", &ep::chunk_size)
      .def_rw("candidates", &ep::candidates)
      .def_rw("itopk_size", &ep::itopk_size);
}

}  // namespace cagra_py
