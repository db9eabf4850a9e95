// JSON lines for `cagra bench`, written by hand (no JSON library for one flat record) with
// RFC 8259 string escaping and null for non-finite numbers, so every line parses with any JSON
// reader. Also the run's provenance: a timestamp run id, the CPU model and the git commit, which
// bench/results/ needs to compare numbers across machines and versions; and the allowed rows of
// a filtered point, which `cagra bench` and the peers draw alike.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>
#include <vector>

#include "bench_json.hpp"

namespace cagra::cli {

std::string json_quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string json_number(double v, const char* fmt) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The source tree, for `git rev-parse`: CMake compiles with absolute paths, so this file's own
// path names it (CAGRA_SOURCE_DIR wins when the build defines it).
std::string source_dir() {
#ifdef CAGRA_SOURCE_DIR
  return CAGRA_SOURCE_DIR;
#else
  std::string file = __FILE__;
  const std::string tail = "tools/cli/bench_json.cpp";
  if (file.size() > tail.size() &&
      file.compare(file.size() - tail.size(), tail.size(), tail) == 0 && file[0] == '/') {
    return file.substr(0, file.size() - tail.size());
  }
  return ".";
#endif
}

}  // namespace

std::string to_json(const bench_record& r) {
  std::ostringstream o;
  o << "{\"run_id\":" << json_quote(r.run_id) << ",\"system\":" << json_quote(r.system)
    << ",\"device\":" << json_quote(r.device);
  if (!r.devices.empty()) {
    o << ",\"devices\":[";
    for (size_t i = 0; i < r.devices.size(); ++i) o << (i ? "," : "") << r.devices[i];
    o << "]";
  }
  if (r.shards > 0) o << ",\"shards\":" << r.shards;
  o << ",\"commit\":" << json_quote(r.commit) << ",\"dataset\":" << json_quote(r.dataset)
    << ",\"metric\":" << json_quote(r.metric) << ",\"n\":" << r.n << ",\"dim\":" << r.dim
    << ",\"nq\":" << r.nq << ",\"batch\":" << r.batch << ",\"k\":" << r.k
    << ",\"params\":{\"itopk\":" << r.itopk << ",\"search_width\":" << r.search_width
    << ",\"max_iterations\":" << r.max_iterations << ",\"threads\":" << r.threads
    << ",\"storage\":" << json_quote(r.storage) << ",\"graph_degree\":" << r.graph_degree;
  if (r.team_size) o << ",\"team_size\":" << r.team_size;
  if (r.random_samplings) o << ",\"num_random_samplings\":" << r.random_samplings;
  if (!r.traversal.empty())
    o << ",\"traversal\":" << json_quote(r.traversal) << ",\"rerank\":" << r.rerank;
  if (!r.stored_rows.empty()) o << ",\"stored_rows\":" << json_quote(r.stored_rows);
  if (!r.algo.empty()) o << ",\"algo\":" << json_quote(r.algo);
  if (r.hash_bits) o << ",\"hash_bits\":" << r.hash_bits;
  if (r.hash_reset_interval) o << ",\"hash_reset_interval\":" << r.hash_reset_interval;
  if (r.persistent) o << ",\"persistent\":true";
  o << "},\"recall\":" << json_number(r.recall, "%.6f") << ",\"qps\":" << json_number(r.qps, "%.2f")
    << ",\"latency_ms\":" << json_number(r.latency_ms, "%.6g")
    << ",\"build_s\":" << (r.build_s < 0 ? std::string("null") : json_number(r.build_s, "%.6g"));
  if (!r.plan.empty()) o << ",\"plan\":" << json_quote(r.plan);
  if (r.selectivity >= 0) o << ",\"selectivity\":" << json_number(r.selectivity, "%.6g");
  if (r.deleted_share >= 0) o << ",\"deleted_share\":" << json_number(r.deleted_share, "%.6g");
  if (r.filter_violations >= 0) o << ",\"filter_violations\":" << r.filter_violations;
  if (r.dists_per_query >= 0) {
    o << ",\"stats\":{\"dists_per_query\":" << json_number(r.dists_per_query, "%.2f")
      << ",\"parents_per_query\":" << json_number(r.parents_per_query, "%.2f")
      << ",\"iterations_per_query\":" << json_number(r.iterations_per_query, "%.2f")
      << ",\"hash_resets_per_query\":" << json_number(r.hash_resets_per_query, "%.3f")
      << ",\"bytes_per_query\":" << json_number(r.bytes_per_query, "%.0f") << "}";
  }
  o << "}";
  return o.str();
}

std::string make_run_id() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &utc);
  return std::string(buf) + "-" + std::to_string(::getpid());
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    std::string m = trim(line.substr(colon + 1));
    // Drop trademark noise and collapse spaces: "Intel(R) Xeon(R) CPU  X" -> "Intel Xeon X".
    for (const char* junk : {"(R)", "(r)", "(TM)", "(tm)", " CPU", " Processor"}) {
      for (size_t p; (p = m.find(junk)) != std::string::npos;) m.erase(p, std::strlen(junk));
    }
    std::string out;
    for (char c : m)
      if (!(c == ' ' && (out.empty() || out.back() == ' '))) out += c;
    out = trim(out);
    if (!out.empty()) return out;
  }
  return "unknown CPU";
}

std::string commit_id() {
  if (const char* env = std::getenv("CAGRA_COMMIT"); env != nullptr && *env != '\0') return env;
  std::string dir = source_dir();
  std::string quoted = "'";
  for (char c : dir) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  std::string cmd = "git -C " + quoted + " rev-parse --short HEAD 2>/dev/null";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "unknown";
  char buf[128] = {0};
  std::string out;
  while (std::fgets(buf, sizeof buf, p) != nullptr) out += buf;
  int rc = ::pclose(p);
  out = trim(out);
  if (rc != 0 || out.empty() || out.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return "unknown";
  }
  return out;
}

row_bitset random_allowed_rows(int64_t rows, double share, uint64_t seed) {
  const auto want = std::max<int64_t>(1, std::llround(share * double(rows)));
  std::vector<uint32_t> perm(static_cast<size_t>(rows));
  std::iota(perm.begin(), perm.end(), 0u);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < want; ++i) {
    std::uniform_int_distribution<int64_t> pick(i, rows - 1);
    std::swap(perm[size_t(i)], perm[size_t(pick(rng))]);
  }
  return row_bitset::from_ids(perm.data(), want, rows);
}

}  // namespace cagra::cli
