// Several GPUs from Python (cagra/multi_gpu.hpp): the ShardedIndex class (its properties),
// build_sharded, and saving and loading the file set of a sharded index. Its search is in
// search_ext.cpp beside the single index's; a replicated search is Index.search with a devices
// list (resources::devices).
#include <string>
#include <utility>
#include <vector>

#include "ext_common.hpp"

namespace cagra_py {

void bind_sharded_class(nb::module_& m) {
  nb::class_<py_sharded>(m, "ShardedIndex")
      .def_prop_ro("size", [](const py_sharded& p) { return p.idx.size(); })
      .def_prop_ro("dim", [](const py_sharded& p) { return p.idx.dim(); })
      .def_prop_ro("graph_degree", [](const py_sharded& p) { return p.idx.graph_degree(); })
      .def_prop_ro("metric", [](const py_sharded& p) { return p.idx.metric(); })
      .def_prop_ro(
          "dtype",
          [](const py_sharded& p) { return std::string(to_string(p.idx.storage_dtype())); })
      .def_prop_ro("shard_count", [](const py_sharded& p) { return p.idx.shard_count(); })
      .def_prop_ro("shard_offsets", [](const py_sharded& p) {
        std::vector<int64_t> out;
        for (size_t s = 0; s < p.idx.shard_count(); ++s) out.push_back(p.idx.shard_offset(s));
        out.push_back(p.idx.size());
        return out;
      });
}

std::unique_ptr<py_sharded> build_sharded(any_array dataset, const cagra::index_params& params,
                                          cagra::backend target, int num_threads, uint32_t shards,
                                          std::vector<int> devices, std::string checkpoint) {
  vectors_in data(std::move(dataset), "dataset");
  cagra::shard_build_options options;
  options.shards = shards;
  options.checkpoint_dir = std::move(checkpoint);
  nb::gil_scoped_release nogil;
  return std::make_unique<py_sharded>(cagra::build_sharded(
      make_resources(target, num_threads, std::move(devices)), params, data.host(), options));
}

void save_sharded(const py_sharded& p, const std::string& path) {
  nb::gil_scoped_release nogil;
  cagra::save(p.idx, path);
}

std::unique_ptr<py_sharded> load_sharded(const std::string& path) {
  nb::gil_scoped_release nogil;
  return std::make_unique<py_sharded>(cagra::load_sharded(path));
}

}  // namespace cagra_py
