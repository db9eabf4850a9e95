// The extension module `cagra._cagra`: a thin nanobind layer over include/cagra/*.hpp. It checks
// and converts arrays (any DLPack producer: numpy, cupy, torch; CUDA arrays go to the CUDA
// search in place, results come back as CUDA arrays) and parameters, releases the GIL
// around every call that does real work, and turns cagra::error into cagra.CagraError (a
// ValueError). Defaults, string options and docstrings live in python/cagra/ (the pure-Python
// package). An Index may change (extend, remove, compact) while other Python threads search it:
// see py_index in ext_common.hpp.
//
// This file is the module's table of contents; the work is in one file per stage:
// arrays.cpp (checked vector input, numpy output), params_ext.cpp (enums, parameter structs),
// index_ext.cpp (the Index class, save, load), multi_gpu_ext.cpp (the ShardedIndex class,
// build_sharded, its save and load), build_ext.cpp, living_ext.cpp (extend, remove,
// compact), search_ext.cpp, io_ext.cpp and hnswlib_ext.cpp (Index.to_hnswlib). The order of the
// definitions below is the order of python/cagra/_cagra.pyi (nanobind.stubgen follows it).
#include <exception>
#include <string>

#include "ext_common.hpp"
#include "hnswlib_ext.hpp"

using namespace cagra_py;
using namespace nb::literals;

NB_MODULE(_cagra, m) {
  m.doc() = "Binding of the cagra C++ library; use the `cagra` package, not this module.";
  nb::exception<cagra::error> cagra_error(m, "CagraError", PyExc_ValueError);
  // nb::exception's translator sets the message with PyErr_SetString, which decodes strictly: a
  // byte that is not UTF-8 would raise UnicodeDecodeError instead of CagraError. The library
  // escapes the file bytes it quotes, so its messages are ASCII; should one still hold such a
  // byte, this translator (registered later, so tried first) shows it as \xNN.
  nb::register_exception_translator(
      [](const std::exception_ptr& p, void* type) {
        try {
          std::rethrow_exception(p);
        } catch (const cagra::error& e) {
          const std::string what = e.what();
          PyObject* msg =
              PyUnicode_DecodeUTF8(what.data(), Py_ssize_t(what.size()), "backslashreplace");
          if (msg == nullptr) {  // cannot happen with backslashreplace; never lose the error
            PyErr_Clear();
            msg = PyUnicode_FromString("cagra error (message not decodable)");
          }
          PyErr_SetObject(static_cast<PyObject*>(type), msg);
          Py_XDECREF(msg);
        }
      },
      cagra_error.ptr());
  m.attr("built_with_cuda") =
#ifdef CAGRA_PY_CUDA
      true;
#else
      false;
#endif

  bind_enums(m);
  m.attr("INVALID_ID") = cagra::kInvalidId;
  bind_params(m);
  bind_index_class(m);

  bind_sharded_class(m);

  m.def("build", &build, "dataset"_a, "params"_a, "backend"_a, "num_threads"_a,
        "labels"_a.none() = nb::none(), "devices"_a = std::vector<int>());
  m.def("build_sharded", &build_sharded, "dataset"_a, "params"_a, "backend"_a, "num_threads"_a,
        "shards"_a, "devices"_a, "checkpoint"_a = std::string());
  m.def("extend", &extend, "index"_a, "vectors"_a, "labels"_a.none(), "params"_a, "backend"_a,
        "num_threads"_a);
  m.def("remove", &remove_rows, "index"_a, "labels"_a, "compact_above"_a, "backend"_a,
        "num_threads"_a);
  m.def("compact", &compact, "index"_a, "backend"_a, "num_threads"_a);
  m.def("search", &search, "index"_a, "queries"_a, "k"_a, "params"_a, "backend"_a, "num_threads"_a,
        "framework"_a = "", "filter_words"_a.none() = nb::none(), "filter_per_query"_a = false,
        "devices"_a = std::vector<int>(), "stream"_a = 0, "filter_count"_a = -1,
        "filter_stamp"_a = 0, "stream_ordered"_a = false, "out_ids"_a = 0, "out_distances"_a = 0);
  // A stamp no call has made before (cagra/filter.hpp row_filter::new_stamp; cagra.Filter's).
  m.def("new_filter_stamp", &cagra::row_filter::new_stamp);
  m.def("search_sharded", &search_sharded, "index"_a, "queries"_a, "k"_a, "params"_a, "backend"_a,
        "num_threads"_a, "framework"_a = "", "filter_words"_a.none() = nb::none(),
        "filter_per_query"_a = false, "devices"_a = std::vector<int>(), "stream"_a = 0,
        "out_ids"_a = 0, "out_distances"_a = 0);
  m.def("explain_build", &explain_build, "rows"_a, "dim"_a, "dtype"_a, "params"_a, "backend"_a,
        "num_threads"_a);
  m.def("explain_search", &explain_search, "index"_a, "k"_a, "batch"_a, "params"_a, "backend"_a,
        "num_threads"_a, "filter_words"_a.none() = nb::none(), "filter_per_query"_a = false);
  m.def(
      "_raise_error",
      [](const nb::bytes& what) { throw cagra::error(std::string(what.c_str(), what.size())); },
      "what"_a,
      "Raises CagraError with these bytes as the message (the tests' check of the "
      "message translation).");
  m.def(
      "_host_copies", [] { return g_host_copies.load(); },
      "Device -> host copies of CUDA arrays made so far (build, brute_force, optimize; never "
      "search).");
  m.def("build_knn_graph", &build_knn_graph, "dataset"_a, "params"_a, "backend"_a, "num_threads"_a);
  m.def("optimize", &optimize, "knn_ids"_a, "knn_distances"_a.none(), "graph_degree"_a, "reorder"_a,
        "dataset"_a.none(), "metric"_a, "backend"_a, "num_threads"_a);
  m.def("analyze", &analyze, "graph"_a, "two_hop_samples"_a, "num_threads"_a);
  m.def("brute_force", &brute_force, "dataset"_a, "queries"_a, "k"_a, "metric"_a, "exclude_self"_a,
        "backend"_a, "num_threads"_a);
  m.def("save", &save, "index"_a, "path"_a);
  m.def("load", &load, "path"_a);
  m.def("save_sharded", &save_sharded, "index"_a, "path"_a);
  m.def("load_sharded", &load_sharded, "path"_a);
  m.def("is_sharded_file", &cagra::is_sharded_file, "path"_a);
  m.def("read_matrix", &read_matrix, "path"_a);
  m.def("read_neighbors", &read_neighbors, "path"_a);
  m.def("recall", &recall, "found"_a, "truth"_a, "k"_a);
  m.def("version", &cagra::version);
  m.def("cuda_available", &cagra::cuda_available);
  m.def(
      "search_backend",
      [](cagra::backend target) { return cagra::search_backend(make_resources(target, 0)); },
      "backend"_a);
  m.def("cuda_device_name", &cagra::cuda_device_name, "device"_a);
  bind_hnswlib(m, [](nb::handle h, const std::function<void(const cagra::index&)>& f) {
    read_locked(nb::cast<const py_index&>(h), f);
  });
}
