// `cagra remove`: deletes rows of an index by label (cagra::remove) and saves the result under a
// new name. Deleted rows are tombstones: never returned by a search, still walked through, until
// `cagra compact` (or --compact-above) drops them. An unknown label, one removed before or one
// listed twice is an error and nothing is written.
#include "cli.hpp"

namespace cagra::cli {

namespace {

int run_remove(const args& a) {
  const std::string index_path = a.positional(0);
  const std::string ids_path = a.positional(1);
  const std::string out = a.str("--output");
  const double compact_above = a.real("--compact-above", 0.0, 0.0, 1.0);
  resources res = make_resources(a);

  check_input(index_path);
  refuse_sharded(index_path, "remove");
  check_input(ids_path);
  check_output(out, {index_path, ids_path}, a.has("--force"));

  index idx = load(index_path);
  print_index_line(idx, index_path);
  const std::vector<int64_t> labels = read_labels(ids_path);
  std::printf("remove    %lld %s from %s\n", static_cast<long long>(labels.size()),
              idx.has_labels() ? "labels" : "row numbers (the index has no labels)",
              ids_path.c_str());
  std::fflush(stdout);

  const int64_t rows_before = idx.size();
  const double t0 = now_seconds();
  const int64_t removed =
      remove(res, idx, labels.data(), static_cast<int64_t>(labels.size()), compact_above);
  const double seconds = now_seconds() - t0;
  if (idx.size() < rows_before) {
    std::printf(
        "removed   %lld rows; more than %g of the rows were deleted: compacted to %lld rows;"
        " %.3f s\n",
        static_cast<long long>(removed), compact_above, static_cast<long long>(idx.size()),
        seconds);
  } else {
    std::printf("removed   %lld rows; %lld of %lld rows deleted, %lld live; %.3f s\n",
                static_cast<long long>(removed), static_cast<long long>(idx.deleted_count()),
                static_cast<long long>(idx.size()), static_cast<long long>(idx.live_size()),
                seconds);
  }
  std::fflush(stdout);
  save_index(idx, out);
  return 0;
}

}  // namespace

const command_spec& remove_command() {
  static const command_spec spec{
      "remove",
      "delete rows of an index by label",
      "INDEX IDS -o OUT [options]",
      "Loads INDEX, deletes the rows whose labels IDS lists (row numbers when the index has no\n"
      "labels; .npy of any integer dtype or .ibin, any shape) and saves the result to OUT (never\n"
      "over INDEX). Deleted rows are never returned by a search but stay in the graph until\n"
      "'cagra compact'. An unknown label, one removed before or one listed twice is an error and\n"
      "nothing is written.",
      {
          {"--output", "-o", "OUT", "where to write the index (required)", true},
          {"--compact-above", nullptr, "F",
           "compact when more than this share of rows is deleted afterwards, in [0, 1] "
           "(default 0 = never)"},
          {"--threads", nullptr, "T", "CPU threads (default: all; at most 4 per hardware thread)"},
          {"--force", nullptr, nullptr, "replace OUT if it exists"},
      },
      {"INDEX", "IDS"},
      run_remove};
  return spec;
}

}  // namespace cagra::cli
