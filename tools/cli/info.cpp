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

/** graph_stats of `idx` with the 2-hop count sampled as `cagra info` does: over
 *  `samples_opt` nodes when --samples was given, else over all of them up to 100K nodes and an
 *  even sample of 100K above (accurate to well under 1%); a progress bar while it runs. */
graph_stats analyze_graph(const args& a, int64_t samples_opt, resources& res, const index& idx) {
  int64_t samples = a.has("--samples")
                        ? samples_opt
                        : (idx.size() > kDefaultTwoHopSamples ? kDefaultTwoHopSamples : 0);
  if (samples >= idx.size()) samples = 0;
  progress_display progress("analyze");
  res.progress = progress.callback();
  const graph_stats st = analyze(res, idx.graph(), samples);
  progress.finish();
  return st;
}

/** `cagra info` of a sharded index: the set's fields, one line of graph metrics per shard, then
 *  the metrics over all shards (components and bad edges summed, the 2-hop count averaged over
 *  the nodes measured). */
int info_sharded(const args& a, const std::string& path, resources res) {
  const auto samples_opt = static_cast<int64_t>(a.uint("--samples", 0, 0, kMaxRows));
  const sharded_index sh = load_sharded(path);
  const size_t n = sh.shard_count();
  std::error_code ec;
  uint64_t bytes = std::filesystem::file_size(path, ec);
  for (size_t s = 0; s < n && !ec; ++s)
    bytes += std::filesystem::file_size(shard_file(path, s, n), ec);
  std::printf("file               %s (sharded index: manifest and %zu shard files, %s in all)\n",
              path.c_str(), n, ec ? "size unknown" : human_bytes(bytes).c_str());
  std::printf("shards             %zu\n", n);
  std::printf("rows               %lld\n", static_cast<long long>(sh.size()));
  int64_t lo = sh.shard(0).size(), hi = lo;
  for (size_t s = 1; s < n; ++s) {
    lo = std::min(lo, sh.shard(s).size());
    hi = std::max(hi, sh.shard(s).size());
  }
  if (lo == hi)
    std::printf("rows per shard     %lld\n", static_cast<long long>(lo));
  else
    std::printf("rows per shard     %lld .. %lld\n", static_cast<long long>(lo),
                static_cast<long long>(hi));
  std::printf("dim                %u\n", sh.dim());
  std::printf("dtype              %s\n", to_string(sh.storage_dtype()));
  std::printf("metric             %s\n", to_string(sh.metric()));
  std::printf("graph degree       %u\n", sh.graph_degree());
  std::printf("labels             no (global row numbers)\n");
  std::printf("deleted rows       0 (%lld live)\n", static_cast<long long>(sh.size()));
  std::fflush(stdout);

  graph_stats total;
  double two_hop_sum = 0;
  int64_t measured = 0;
  for (size_t s = 0; s < n; ++s) {
    const index& idx = sh.shard(s);
    const graph_stats st = analyze_graph(a, samples_opt, res, idx);
    const int64_t used = st.two_hop_samples > 0 ? st.two_hop_samples : idx.size();
    std::printf(
        "shard %-3zu          rows %lld .. %lld: avg 2-hop nodes %.1f (%s %lld), strong "
        "components %lld, weak components %lld, invalid %lld, self loops %lld, duplicates %lld\n",
        s, static_cast<long long>(sh.shard_offset(s)),
        static_cast<long long>(sh.shard_offset(s) + idx.size() - 1), st.avg_two_hop,
        used < idx.size() ? "sampled over" : "over all", static_cast<long long>(used),
        static_cast<long long>(st.strong_components), static_cast<long long>(st.weak_components),
        static_cast<long long>(st.invalid_edges), static_cast<long long>(st.self_loops),
        static_cast<long long>(st.duplicate_edges));
    std::fflush(stdout);
    two_hop_sum += st.avg_two_hop * double(used);
    measured += used;
    total.strong_components += st.strong_components;
    total.weak_components += st.weak_components;
    total.invalid_edges += st.invalid_edges;
    total.self_loops += st.self_loops;
    total.duplicate_edges += st.duplicate_edges;
  }
  std::printf("avg 2-hop nodes    %.1f (over %lld nodes of %zu shards; at most d + d^2 = %llu)\n",
              measured ? two_hop_sum / double(measured) : 0.0, static_cast<long long>(measured), n,
              static_cast<unsigned long long>(sh.graph_degree()) * (sh.graph_degree() + 1));
  std::printf("strong components  %lld (summed over the shards)\n",
              static_cast<long long>(total.strong_components));
  std::printf("weak components    %lld (summed over the shards)\n",
              static_cast<long long>(total.weak_components));
  std::printf("invalid edges      %lld\n", static_cast<long long>(total.invalid_edges));
  std::printf("self loops         %lld\n", static_cast<long long>(total.self_loops));
  std::printf("duplicate edges    %lld\n", static_cast<long long>(total.duplicate_edges));
  return 0;
}

int run_info(const args& a) {
  const std::string path = a.positional(0);
  const auto samples_opt = static_cast<int64_t>(a.uint("--samples", 0, 0, kMaxRows));
  resources res = make_resources(a);
  check_input(path);
  if (is_sharded_file(path)) return info_sharded(a, path, res);

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

  const graph_stats st = analyze_graph(a, samples_opt, res, idx);

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
      "and weakly connected components, and invalid / self / duplicate edges (all 0 when sound).\n"
      "A sharded index (its manifest): the shard count, rows per shard, one line of graph\n"
      "metrics per shard, then the metrics over all shards (components summed).",
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
