// `cagra export-hnsw` and `cagra import-hnsw`: an index to and from hnswlib's own file format
// (cagra/hnswlib.hpp, docs/hnswlib.md), so that a graph built here (on a GPU) can be served by
// hnswlib and everything built on it, and an hnswlib graph can be searched here. The paths are
// checked before any work; the export says how to load the file.
#include <cagra/hnswlib.hpp>

#include "cli.hpp"

namespace cagra::cli {

namespace {

/** hnswlib's Python name of the space for `m` (hnswlib.Index(space=...)). */
const char* python_space(metric m) {
  switch (m) {
    case metric::l2: return "l2";
    case metric::inner_product: return "ip";
    case metric::cosine: return "cosine";
  }
  return "l2";
}

int run_export(const args& a) {
  const std::string index_path = a.positional(0);
  const std::string out = a.str("--output");
  hnswlib_export_params params;
  params.M = static_cast<uint32_t>(a.uint("--M", 0, 2, 32767));
  params.seed = a.uint("--seed", 0, 0, UINT64_MAX);
  params.ef_construction =
      static_cast<uint32_t>(a.uint("--ef-construction", params.ef_construction, 1));
  resources res = make_resources(a);

  check_input(index_path);
  refuse_sharded(index_path, "export-hnsw");
  check_output(out, {index_path}, a.has("--force"));

  index idx = load(index_path);
  print_index_line(idx, index_path);
  std::fflush(stdout);
  progress_display progress("export-hnsw");
  res.progress = progress.callback();
  hnswlib_export_report report;
  export_hnswlib(idx, out, params, res, &report);
  progress.finish();

  std::printf("levels    M %u (level 0: %u slots for degree %u); rows per level:", report.M,
              2 * report.M, idx.graph_degree());
  for (int64_t rows : report.level_rows) std::printf(" %lld", static_cast<long long>(rows));
  std::printf("; entry point row %lld\n", static_cast<long long>(report.entry_point));
  if (report.deleted > 0) {
    std::printf("deleted   %lld rows written with hnswlib's deleted mark\n",
                static_cast<long long>(report.deleted));
  }
  if (idx.storage_dtype() != dtype::f32) {
    std::printf("vectors   %s converted to float32 (hnswlib's storage)\n",
                to_string(idx.storage_dtype()));
  }
  std::printf("time      levels %.3f s, write %.3f s, total %.3f s\n", report.link_seconds,
              report.write_seconds, report.total_seconds);
  std::printf("saved     %s (%s, hnswlib format)\n", out.c_str(),
              human_bytes(report.file_bytes).c_str());
  std::printf("load      Python: p = hnswlib.Index(space='%s', dim=%u); p.load_index('%s')\n",
              python_space(idx.metric()), idx.dim(), out.c_str());
  return 0;
}

int run_import(const args& a) {
  const std::string hnsw_path = a.positional(0);
  const std::string out = a.str("--output");
  if (!a.has("--metric")) {
    throw usage_error(
        "--metric is required: hnswlib files do not record their space (l2, ip "
        "or cosine)");
  }
  hnswlib_import_params params;
  params.metric = metric_option(a, metric::l2);
  params.dim = static_cast<uint32_t>(a.uint("--dim", 0, 1));
  params.graph_degree = static_cast<uint32_t>(a.uint("--graph-degree", 0, 1, 65535));
  resources res = make_resources(a);

  check_input(hnsw_path);
  check_output(out, {hnsw_path}, a.has("--force"));

  const double t0 = now_seconds();
  index idx = import_hnswlib(hnsw_path, params, res);
  std::printf("import    %s: %lld x %u f32, degree %u, metric %s; %.3f s\n", hnsw_path.c_str(),
              static_cast<long long>(idx.size()), idx.dim(), idx.graph_degree(),
              to_string(idx.metric()), now_seconds() - t0);
  if (idx.has_labels()) std::printf("labels    kept (they are not the row numbers)\n");
  if (idx.deleted_count() > 0) {
    std::printf("deleted   %lld rows (hnswlib's deleted mark)\n",
                static_cast<long long>(idx.deleted_count()));
  }
  std::fflush(stdout);
  save_index(idx, out);
  return 0;
}

}  // namespace

const command_spec& export_hnsw_command() {
  static const command_spec spec{
      "export-hnsw",
      "write an index in hnswlib's file format",
      "INDEX -o OUT [options]",
      "Loads INDEX and writes OUT in the format of hnswlib's saveIndex, for hnswlib's loadIndex\n"
      "(C++) or hnswlib.Index.load_index (Python). Level 0 is the CAGRA graph; the upper levels\n"
      "are drawn and linked as hnswlib does. Vectors are written as float32; labels (or row\n"
      "numbers) become hnswlib's labels; deleted rows get hnswlib's deleted mark. l2 -> space\n"
      "'l2', ip -> 'ip', cosine -> 'cosine' (docs/hnswlib.md).",
      {
          {"--output", "-o", "OUT", "where to write the hnswlib file (required)", true},
          {"--M", nullptr, "M",
           "hnswlib's M: upper-level links per row, 2M level-0 slots (default: ceil(degree/2))"},
          {"--seed", nullptr, "S", "seed of the level draw (default 0)"},
          {"--ef-construction", nullptr, "E",
           "ef_construction written in the file, used by hnswlib's addPoint (default 200)"},
          {"--backend", nullptr, "B", "auto (default: cuda when available), cpu or cuda"},
          {"--threads", nullptr, "T", "CPU threads (default: all; at most 4 per hardware thread)"},
          {"--force", nullptr, nullptr, "replace OUT if it exists"},
      },
      {"INDEX"},
      run_export};
  return spec;
}

const command_spec& import_hnsw_command() {
  static const command_spec spec{
      "import-hnsw",
      "read an hnswlib file into an index",
      "FILE --metric M -o INDEX [options]",
      "Reads FILE, an hnswlib index of float32 vectors (L2Space or InnerProductSpace), and saves\n"
      "it as a CAGRA index: level 0 becomes the graph, every row's list made --graph-degree\n"
      "long (short lists filled with the nearest rows two hops away); the upper levels are\n"
      "dropped. Labels and deleted marks are kept. hnswlib files do not record their space:\n"
      "--metric is required (docs/hnswlib.md).",
      {
          {"--output", "-o", "INDEX", "where to write the index (required)", true},
          {"--metric", nullptr, "M", "the file's space: l2, ip or cosine (required)"},
          {"--dim", nullptr, "D", "expected vector dimension (checked against the file)"},
          {"--graph-degree", nullptr, "D",
           "degree of the imported graph (default: the file's 2M level-0 slots)"},
          {"--backend", nullptr, "B", "auto (default: cuda when available), cpu or cuda"},
          {"--threads", nullptr, "T", "CPU threads (default: all; at most 4 per hardware thread)"},
          {"--force", nullptr, nullptr, "replace INDEX if it exists"},
      },
      {"FILE"},
      run_import};
  return spec;
}

}  // namespace cagra::cli
