// `cagra extend`: inserts the vectors of a file into an index (cagra::extend: the new rows find
// their neighbours through the index's own search, get pruned like a build's rows and hand
// reverse edges to existing rows) and saves the grown index under a new name. Everything that
// can be checked without the work (paths, dimension, label count, labels against the index's own)
// is checked before the insertion starts; the library leaves the index unchanged on any error.
#include <cstring>

#include "cli.hpp"

namespace cagra::cli {

namespace {

int run_extend(const args& a) {
  const std::string index_path = a.positional(0);
  const std::string vectors_path = a.positional(1);
  const std::string out = a.str("--output");
  const std::string labels_path = a.str("--labels", "");
  // The library's defaults (0 = automatic; extend_params in cagra/params.hpp).
  extend_params ep;
  ep.chunk_size = static_cast<uint32_t>(a.uint("--chunk-size", ep.chunk_size));
  ep.candidates = static_cast<uint32_t>(a.uint("--candidates", ep.candidates));
  ep.itopk_size = static_cast<uint32_t>(a.uint("--itopk", ep.itopk_size));
  resources res = make_resources(a);

  check_input(index_path);
  refuse_sharded(index_path, "extend");
  check_input(vectors_path);
  std::vector<std::string> inputs = {index_path, vectors_path};
  if (!labels_path.empty()) {
    check_input(labels_path);
    inputs.push_back(labels_path);
  }
  check_output(out, inputs, a.has("--force"));

  index idx = load(index_path);
  print_index_line(idx, index_path);
  ep.validate(idx.graph_degree());
  const host_matrix vectors = read_vectors(vectors_path);
  if (vectors.cols() != static_cast<int64_t>(idx.dim())) {
    throw cagra::error("vectors '" + vectors_path + "' have dim " + std::to_string(vectors.cols()) +
                       " but the index has dim " + std::to_string(idx.dim()));
  }
  std::vector<int64_t> labels;
  if (!labels_path.empty()) {
    labels = read_labels(labels_path);
    if (static_cast<int64_t>(labels.size()) != vectors.rows()) {
      throw cagra::error("labels '" + labels_path + "' hold " + std::to_string(labels.size()) +
                         " labels but '" + vectors_path + "' has " +
                         std::to_string(vectors.rows()) + " vectors: give one label per vector");
    }
  } else if (idx.has_labels()) {
    throw cagra::error("index '" + index_path +
                       "' has labels: give one label per new vector with --labels FILE");
  }
  std::printf("vectors   %s: %lld x %lld %s%s\n", vectors_path.c_str(),
              static_cast<long long>(vectors.rows()), static_cast<long long>(vectors.cols()),
              to_string(vectors.type()), labels.empty() ? "" : (", labels " + labels_path).c_str());
  std::fflush(stdout);

  const int64_t before = idx.size();
  progress_display progress("extend");
  // Only the insertion's own stage: each chunk's inner stages (its kNN) would restart from 0%.
  res.progress = [show = progress.callback()](const char* stage, double fraction) {
    if (stage != nullptr && std::strcmp(stage, "extend") == 0) show(stage, fraction);
  };
  const double t0 = now_seconds();
  extend(res, ep, idx, vectors.view(), labels.empty() ? nullptr : labels.data());
  const double seconds = now_seconds() - t0;
  progress.finish();
  std::printf("extend    %lld rows added, %lld rows now (backend %s, chunk %s); %.3f s\n",
              static_cast<long long>(idx.size() - before), static_cast<long long>(idx.size()),
              backend_name(res), ep.chunk_size ? std::to_string(ep.chunk_size).c_str() : "auto",
              seconds);
  std::fflush(stdout);
  save_index(idx, out);
  return 0;
}

}  // namespace

const command_spec& extend_command() {
  static const command_spec spec{
      "extend",
      "insert new vectors into an index",
      "INDEX NEW_VECTORS -o OUT [options]",
      "Loads INDEX, inserts every row of NEW_VECTORS (any vector file of the index's dimension)\n"
      "and saves the grown index to OUT (never over INDEX). The new rows are rows size .. size +\n"
      "n - 1. An index with labels needs --labels: one label per new vector, none already in the\n"
      "index. --labels on an index without labels gives its existing rows their row numbers as\n"
      "labels. On any error nothing is written.",
      {
          {"--output", "-o", "OUT", "where to write the grown index (required)", true},
          {"--labels", nullptr, "FILE",
           "labels of the new vectors: .npy (any integer dtype) or .ibin (int32)"},
          {"--chunk-size", nullptr, "N",
           "rows inserted together (default 0 = auto: 2000 on the CPU, 10000 on the GPU)"},
          {"--candidates", nullptr, "C",
           "neighbour candidates per new row before pruning (default 0 = auto: 2 x degree)"},
          {"--itopk", nullptr, "M",
           "list length of the search that finds them (default 0 = auto: max(64, 2 x C))"},
          {"--backend", nullptr, "B", "auto (default: cuda when available), cpu or cuda"},
          {"--threads", nullptr, "T", "CPU threads (default: all; at most 4 per hardware thread)"},
          {"--force", nullptr, nullptr, "replace OUT if it exists"},
      },
      {"INDEX", "NEW_VECTORS"},
      run_extend};
  return spec;
}

}  // namespace cagra::cli
