// The plans in words: `name=value` lines that show what "automatic" resolved to (cagra::to_string
// of a build_plan or search_plan, printed by `cagra build/search --explain` and Python's
// Index.explain), and the names of the plans' enums.
#include <string>

#include <cagra/plan.hpp>

namespace cagra {

const char* to_string(filter_kind f) {
  switch (f) {
    case filter_kind::none: return "none";
    case filter_kind::shared: return "shared";
    case filter_kind::per_query: return "per_query";
  }
  return "unknown";
}

const char* to_string(search_io io) {
  switch (io) {
    case search_io::none: return "none";
    case search_io::copy: return "copy";
    case search_io::mapped: return "mapped";
    case search_io::host_merge: return "host_merge";
    case search_io::persistent: return "persistent";
    case search_io::device: return "device";
  }
  return "unknown";
}

std::string to_string(const build_plan& p) {
  std::string s = std::string("backend=") + to_string(p.target) + " knn=" + to_string(p.knn) +
                  " graph_degree=" + std::to_string(p.graph_degree) +
                  " intermediate_graph_degree=" + std::to_string(p.intermediate_graph_degree) +
                  " storage=" + to_string(p.storage);
  // The GPU's fields only on the GPU, as in the search plan.
  if (p.partition_rows) s += " partition_rows=" + std::to_string(p.partition_rows);
  if (p.target == backend::cuda)  // the CPU optimizes on the host, always
    s += std::string(" optimize=") + to_string(p.optimize) +
         " device_bytes=" + std::to_string(p.device_bytes) +
         " device_budget=" + std::to_string(p.device_budget) +
         " host_bytes=" + std::to_string(p.host_bytes);
  return s;
}

const char* to_string(optimize_path o) {
  switch (o) {
    case optimize_path::device: return "device";
    case optimize_path::prune_on_device: return "prune_on_device";
    case optimize_path::host: return "host";
  }
  return "unknown";
}

std::string to_string(const search_plan& p) {
  const auto kv = [](const char* k, uint64_t v) {
    return std::string(" ") + k + "=" + std::to_string(v);
  };
  std::string s = std::string("backend=") + to_string(p.target);
  if (p.target == backend::cuda)
    s += std::string(" algo=") + to_string(p.algo) + " io=" + to_string(p.io);
  else if (p.algo == search_algo::multi_cta)  // the CPU's walkers (cpu/parallel_walk.cpp)
    s += std::string(" algo=") + to_string(p.algo);
  s += kv("k", p.k) + kv("itopk", p.itopk) + kv("search_width", p.search_width) +
       kv("max_iterations", p.max_iterations) + kv("min_iterations", p.min_iterations) +
       kv("random_samplings", p.random_samplings) + kv("initial_nodes", p.initial_nodes) +
       kv("hash_bits", p.hash_bits) + kv("hash_reset_interval", p.hash_reset_interval) +
       kv("seed", p.seed);
  if (p.target == backend::cuda)
    s += kv("team_size", p.team_size) + kv("block_size", p.block_size) +
         kv("ctas_per_query", p.ctas_per_query);
  else if (p.algo == search_algo::multi_cta)
    s += kv("ctas_per_query", p.ctas_per_query);
  if (p.io == search_io::persistent) s += kv("persistent_lifetime_us", p.persistent_lifetime_us);
  if (p.pool_rows_per_cta) s += kv("pool_rows_per_cta", p.pool_rows_per_cta);
  if (p.filter != filter_kind::none)
    s += std::string(" filter=") + to_string(p.filter) +
         " filter_path=" + to_string(p.filter_path) + kv("allowed_rows", uint64_t(p.allowed_rows)) +
         (p.filter_in_merge ? " filter_in_merge=1" : "");
  if (p.traversal != traversal_type::exact)
    s += std::string(" traversal=") + to_string(p.traversal) + kv("rerank", p.rerank) +
         (p.stored_rows != rows_location::automatic
              ? std::string(" stored_rows=") + to_string(p.stored_rows)
              : std::string());
  return s;
}

}  // namespace cagra
