// `cagra info`: what an index file holds (size, dim, dtype, metric, degree, labels, deleted rows)
// and how good its graph is by the reachability measures of paper §III-A (average 2-hop node
// count, strongly and weakly connected components), plus the invariant checks (invalid ids, self
// loops, duplicates). The 2-hop count is sampled on large graphs because its exact cost grows
// with n * d^2.
#include <algorithm>
#include <filesystem>

#include "cli.hpp"

namespace cagra::cli {

namespace {

constexpr int64_t kDefaultTwoHopSamples = 100000;

int run_info(const args& a) {
  const std::string path = a.positional(0);
  const auto samples_opt = static_cast<int64_t>(a.uint("--samples", 0, 0, kMaxRows));
  resources res = make_resources(a);
  check_input(path);

  index idx = load(path);
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(path, ec);
  std::printf("file               %s (%s)\n", path.c_str(),
              ec ? "size unknown" : human_bytes(bytes).c_str());
  std::printf("rows               %lld\n", static_cast<long long>(idx.size()));
  std::printf("dim                %u\n", idx.dim());
  std::printf("dtype              %s\n", to_string(idx.storage_dtype()));
  std::printf("metric             %s\n", to_string(idx.metric()));
  std::printf("graph degree       %u\n", idx.graph_degree());
  std::printf("labels             %s\n",
              idx.has_labels() ? "yes (searches return them)" : "no (row numbers)");
  std::printf("deleted rows       %lld (%lld live)\n", static_cast<long long>(idx.deleted_count()),
              static_cast<long long>(idx.live_size()));
  std::fflush(stdout);

  // Sampling all nodes is exact; above 100K nodes an even sample is accurate to well under 1%.
  int64_t samples = a.has("--samples")
                        ? samples_opt
                        : (idx.size() > kDefaultTwoHopSamples ? kDefaultTwoHopSamples : 0);
  if (samples >= idx.size()) samples = 0;
  progress_display progress("analyze");
  res.progress = progress.callback();
  graph_stats st = analyze(res, idx.graph(), samples);
  progress.finish();

  const int64_t used = st.two_hop_samples > 0 ? st.two_hop_samples : idx.size();
  std::printf("avg 2-hop nodes    %.1f (%s %lld nodes; at most d + d^2 = %llu)\n", st.avg_two_hop,
              used < idx.size() ? "sampled over" : "over all", static_cast<long long>(used),
              static_cast<unsigned long long>(idx.graph_degree()) * (idx.graph_degree() + 1));
  std::printf("strong components  %lld\n", static_cast<long long>(st.strong_components));
  std::printf("weak components    %lld\n", static_cast<long long>(st.weak_components));
  std::printf("invalid edges      %lld\n", static_cast<long long>(st.invalid_edges));
  std::printf("self loops         %lld\n", static_cast<long long>(st.self_loops));
  std::printf("duplicate edges    %lld\n", static_cast<long long>(st.duplicate_edges));
  return 0;
}

}  // namespace

const command_spec& info_command() {
  static const command_spec spec{
      "info",
      "describe an index file and measure its graph",
      "INDEX [options]",
      "Prints the header fields of INDEX (rows, dim, dtype, metric, degree, file size, whether it\n"
      "has labels, the rows deleted by 'cagra remove' and not yet compacted) and graph\n"
      "metrics: average 2-hop node count (sampled over 100,000 nodes on larger graphs), strongly\n"
      "and weakly connected components, and invalid / self / duplicate edges (all 0 when sound).",
      {
          {"--samples", nullptr, "N",
           "nodes sampled for the 2-hop count (0 = all; default all "
           "up to 100000 nodes, else 100000)"},
          {"--threads", nullptr, "T", "CPU threads (default: all; at most 4 per hardware thread)"},
      },
      {"INDEX"},
      run_info};
  return spec;
}

}  // namespace cagra::cli
