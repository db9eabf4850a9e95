// The `cagra` tool's enum and list options, parsed by the library's parsers where it has one;
// a value they refuse is a usage error (status 2) that names the flag and the values it takes.
#include <cstdlib>
#include <sstream>

#include "cli.hpp"

namespace cagra::cli {

metric metric_option(const args& a, metric fallback) {
  if (!a.has("--metric")) return fallback;
  try {
    return parse_metric(a.str("--metric"));
  } catch (const cagra::error&) {
    throw usage_error("--metric: expected l2, ip or cosine, got '" + a.str("--metric") + "'");
  }
}

filter_algo filter_algo_option(const args& a) {
  const std::string s = a.str("--filter-algo", "auto");
  if (s == "auto") return filter_algo::automatic;
  if (s == "graph") return filter_algo::graph;
  if (s == "exact") return filter_algo::exact;
  throw usage_error("--filter-algo: expected auto, graph or exact, got '" + s + "'");
}

namespace {
/** The value of `flag` (its default spelled as `fallback`) through the library's parser; its
 *  error becomes a usage error naming the flag and the values it takes (`expected`). */
template <typename Parse>
auto parsed_option(const args& a, const char* flag, const char* fallback, Parse parse,
                   const char* expected) {
  const std::string s = a.str(flag, fallback);
  try {
    return parse(s);
  } catch (const cagra::error&) {
    throw usage_error(std::string(flag) + ": expected " + expected + ", got '" + s + "'");
  }
}
}  // namespace

traversal_type traversal_option(const args& a) {
  return parsed_option(a, "--traversal", to_string(search_params{}.traversal), parse_traversal,
                       "exact or int8");
}

rows_location stored_rows_option(const args& a) {
  return parsed_option(a, "--stored-rows", to_string(search_params{}.stored_rows),
                       parse_rows_location, "auto, device or host");
}

std::vector<double> selectivity_list(const args& a) {
  std::vector<double> out;
  if (!a.has("--filter-selectivity")) return out;
  std::stringstream ss(a.str("--filter-selectivity"));
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || !(v > 0 && v <= 1))
      throw usage_error(
          "--filter-selectivity: expected shares of rows in (0, 1] such as "
          "0.5,0.1,0.01, got '" +
          item + "'");
    out.push_back(v);
  }
  if (out.empty()) throw usage_error("--filter-selectivity: empty list");
  return out;
}

std::vector<traversal_type> traversal_list(const args& a) {
  if (!a.has("--traversal")) return {search_params{}.traversal};
  const std::string s = a.str("--traversal");
  std::vector<traversal_type> out;
  size_t start = 0;
  while (true) {
    const size_t comma = s.find(',', start);
    const std::string item =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    try {
      out.push_back(parse_traversal(item));
    } catch (const cagra::error&) {
      throw usage_error("--traversal: expected a comma-separated list of exact and int8, got '" +
                        s + "'");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace cagra::cli
