// `cagra eval`: recall@K of a neighbor file against a ground-truth file. It prints exactly one
// line, "recall@K=0.xxxx", on stdout so that scripts can grep or parse it; every mismatch between
// the two files (row count, too few columns) is an error rather than a silently wrong number.
#include "cli.hpp"

namespace cagra::cli {

namespace {

int run_eval(const args& a) {
  const std::string found_path = a.positional(0);
  const std::string truth_path = a.positional(1);
  const auto k = static_cast<uint32_t>(a.uint("-k", 10, 1));
  check_input(found_path);
  check_input(truth_path);

  io::neighbors_file found = io::read_neighbors(found_path);
  io::neighbors_file truth = io::read_neighbors(truth_path);
  if (found.ids.rows() != truth.ids.rows()) {
    throw cagra::error("'" + found_path + "' has " + std::to_string(found.ids.rows()) +
                       " rows but '" + truth_path + "' has " + std::to_string(truth.ids.rows()));
  }
  if (found.ids.cols() < k) {
    throw cagra::error("'" + found_path + "' has " + std::to_string(found.ids.cols()) +
                       " neighbors per row, fewer than -k " + std::to_string(k));
  }
  if (truth.ids.cols() < k) {
    throw cagra::error("'" + truth_path + "' has " + std::to_string(truth.ids.cols()) +
                       " neighbors per row, fewer than -k " + std::to_string(k));
  }
  if (found.ids.rows() == 0) throw cagra::error("'" + found_path + "' holds no rows");
  const double r = recall(found.ids.as<const uint32_t>(), truth.ids.as<const uint32_t>(), k);
  std::printf("recall@%u=%.4f\n", k, r);
  return 0;
}

}  // namespace

const command_spec& eval_command() {
  static const command_spec spec{
      "eval",
      "recall@K of a neighbor file against ground truth",
      "NEIGHBORS GROUNDTRUTH -k K",
      "Reads both files (.ibin, .ivecs, .npy or .hdf5 neighbors), checks that they have the same\n"
      "number of rows and at least K columns, and prints one line: recall@K=0.xxxx (the mean\n"
      "over rows of |found[:K] & truth[:K]| / K).",
      {
          {"-k", nullptr, "K", "recall depth (required)", true},
      },
      {"NEIGHBORS", "GROUNDTRUTH"},
      run_eval};
  return spec;
}

}  // namespace cagra::cli
