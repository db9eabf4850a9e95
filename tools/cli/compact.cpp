// `cagra compact`: drops the rows `cagra remove` deleted (cagra::compact: the neighbour lists that
// pointed at them are repaired, rows are renumbered) and saves the result under a new name. The
// labels stay with their rows; an index without labels gets its old row numbers as labels, so the
// ids a search returns do not change meaning.
#include "cli.hpp"

namespace cagra::cli {

namespace {

int run_compact(const args& a) {
  const std::string index_path = a.positional(0);
  const std::string out = a.str("--output");
  resources res = make_resources(a);

  check_input(index_path);
  refuse_sharded(index_path, "compact");
  check_output(out, {index_path}, a.has("--force"));

  index idx = load(index_path);
  print_index_line(idx, index_path);
  const int64_t deleted = idx.deleted_count();
  const bool had_labels = idx.has_labels();
  const double t0 = now_seconds();
  compact(res, idx);
  const double seconds = now_seconds() - t0;
  if (deleted == 0) {
    std::printf("compact   no deleted rows: the index is written unchanged\n");
  } else {
    std::printf("compact   %lld deleted rows dropped, %lld rows now%s; %.3f s\n",
                static_cast<long long>(deleted), static_cast<long long>(idx.size()),
                had_labels ? "" : " (labels: the old row numbers)", seconds);
  }
  std::fflush(stdout);
  save_index(idx, out);
  return 0;
}

}  // namespace

const command_spec& compact_command() {
  static const command_spec spec{
      "compact",
      "drop the deleted rows of an index",
      "INDEX -o OUT [options]",
      "Loads INDEX, drops the rows 'cagra remove' deleted (their neighbours' lists are repaired\n"
      "through the deleted rows' own neighbours; rows are renumbered) and saves the result to OUT\n"
      "(never over INDEX). Labels stay with their rows; an index without labels gets its old row\n"
      "numbers as labels, so search results keep their meaning.",
      {
          {"--output", "-o", "OUT", "where to write the index (required)", true},
          {"--threads", nullptr, "T", "CPU threads (default: all; at most 4 per hardware thread)"},
          {"--force", nullptr, nullptr, "replace OUT if it exists"},
      },
      {"INDEX"},
      run_compact};
  return spec;
}

}  // namespace cagra::cli
