// Index.to_hnswlib's binding (python/cagra/_hnswlib.py has the Python side): cagra::export_hnswlib
// on an Index, with the GIL released and the index read-locked for the whole export, and its
// report returned as a dict; and cagra.from_hnswlib's: cagra::import_hnswlib into a new Index.
// Errors are cagra::error, which the module turns into CagraError.
#include "hnswlib_ext.hpp"

#include <cstdint>
#include <string>

#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <cagra/hnswlib.hpp>
#include <cagra/params.hpp>

#include "ext_common.hpp"

namespace nb = nanobind;
using namespace nb::literals;

void bind_hnswlib(nb::module_& m, read_index_fn read_index) {
  m.def(
      "_export_hnswlib",
      [read_index](nb::handle index, const std::string& path, uint32_t M, uint64_t seed,
                   uint32_t ef_construction, cagra::backend target, int num_threads) {
        cagra::hnswlib_export_params params;
        params.M = M;
        params.seed = seed;
        params.ef_construction = ef_construction;
        cagra::resources res;
        res.target = target;
        res.num_threads = num_threads;
        cagra::hnswlib_export_report report;
        read_index(index, [&](const cagra::index& idx) {
          cagra::export_hnswlib(idx, path, params, res, &report);
        });
        nb::list level_rows;
        for (int64_t rows : report.level_rows) level_rows.append(rows);
        nb::dict out;
        out["rows"] = report.rows;
        out["deleted"] = report.deleted;
        out["M"] = report.M;
        out["level_rows"] = level_rows;
        out["entry_point"] = report.entry_point;
        out["file_bytes"] = report.file_bytes;
        out["seconds"] = report.total_seconds;
        return out;
      },
      "index"_a, "path"_a, "M"_a, "seed"_a, "ef_construction"_a, "backend"_a, "num_threads"_a,
      "Writes the index in hnswlib's file format (cagra::export_hnswlib); returns its report.");
  m.def(
      "_import_hnswlib",
      [](const std::string& path, cagra::metric metric, uint32_t dim, uint32_t graph_degree,
         cagra::backend target, int num_threads) {
        cagra::hnswlib_import_params params;
        params.metric = metric;
        params.dim = dim;
        params.graph_degree = graph_degree;
        cagra::resources res;
        res.target = target;
        res.num_threads = num_threads;
        nb::gil_scoped_release nogil;
        return std::make_unique<cagra_py::py_index>(cagra::import_hnswlib(path, params, res));
      },
      "path"_a, "metric"_a, "dim"_a, "graph_degree"_a, "backend"_a, "num_threads"_a,
      "Reads an hnswlib file into an Index (cagra::import_hnswlib).");
}
