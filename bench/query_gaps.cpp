// Batch-1 latency of a query stream with gaps between the queries: an online service rarely
// sends its next query the moment the last one returned. On the GPU a stream of queries less
// than 1 ms apart keeps the search kernel resident (persistent = true); a sparser one finds it
// gone and launches it again (docs/cuda.md, "The resident kernel"). For each gap (microseconds
// from one answer to the next query) and each persistent setting: one query at a time, the
// latency of every call, reported as p50 / p90 / p99 / mean, and the recall of the answers.
//
//   query_gaps INDEX QUERIES GT [--gaps-us 0,100,500,2000,10000] [--queries N (2000)]
//              [--itopk LIST (32)] [--persistent on,off] [--lifetime-us LIST (1000)]
//              [--backend auto|cpu|cuda]
//              [--dataset NAME] [--json FILE]
//
// --lifetime-us: search_params::persistent_lifetime_us, how long the resident kernel waits for
// the next query (persistent on only). A point takes at most ~2 s: at long gaps fewer than N
// queries are sent (the count is printed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>
#include <cagra/plan.hpp>

namespace {

using namespace cagra;
using clk = std::chrono::steady_clock;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  for (size_t at = 0; at <= s.size();) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    v.push_back(s.substr(at, end - at));
    at = end + 1;
  }
  return v;
}

/** Waits `us` microseconds: sleeps for most of it, spins the rest (a sleep alone overshoots by
 *  tens of microseconds). */
void wait_us(double us) {
  if (us <= 0) return;
  const auto until = clk::now() + std::chrono::duration<double, std::micro>(us);
  if (us > 200) std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(us - 100));
  while (clk::now() < until) {
  }
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * double(v.size())));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: query_gaps INDEX QUERIES GT [--gaps-us LIST] [--queries N] "
                 "[--itopk LIST] [--persistent on,off] [--backend B] [--dataset NAME] "
                 "[--json FILE]\n");
    return 2;
  }
  std::vector<std::string> gaps = split("0,100,500,2000,10000"), itopks = {"32"},
                           modes = {"on", "off"}, lifetimes = {"1000"};
  int64_t n = 2000;
  std::string dataset = "unnamed", json, backend_name = "auto";
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--gaps-us")
      gaps = split(v);
    else if (a == "--queries")
      n = std::stoll(v);
    else if (a == "--itopk")
      itopks = split(v);
    else if (a == "--persistent")
      modes = split(v);
    else if (a == "--lifetime-us")
      lifetimes = split(v);
    else if (a == "--backend")
      backend_name = v;
    else if (a == "--dataset")
      dataset = v;
    else if (a == "--json")
      json = v;
    else {
      std::fprintf(stderr, "error: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  try {
    const cagra::index idx = cagra::load(argv[1]);
    const host_matrix q = io::read_matrix(argv[2]);
    const host_matrix gt = io::read_neighbors(argv[3]).ids;
    const uint32_t k = 10;
    const size_t row_bytes = size_t(q.cols()) * dtype_size(q.type());
    const auto* base = static_cast<const uint8_t*>(q.data());
    resources res;
    res.num_threads = 1;
    res.target = backend_name == "cpu"    ? backend::cpu
                 : backend_name == "cuda" ? backend::cuda
                                          : backend::automatic;
    FILE* f = json.empty() ? nullptr : std::fopen(json.c_str(), "a");
    std::printf("%6s %9s %10s %11s %7s %9s %9s %9s %9s %9s\n", "itopk", "gap us", "persistent",
                "lifetime us", "queries", "recall", "p50 us", "p90 us", "p99 us", "mean us");
    for (const std::string& it : itopks)
      for (const std::string& mode : modes)
        for (const std::string& life : mode == "off" ? std::vector<std::string>{"0"} : lifetimes)
          for (const std::string& g : gaps) {
            search_params p;
            p.itopk_size = static_cast<uint32_t>(std::stoul(it));
            p.persistent = mode != "off";
            if (p.persistent) p.persistent_lifetime_us = static_cast<uint32_t>(std::stoul(life));
            const double gap = std::stod(g);
            // At most ~2 s a point; at least 200 queries.
            const int64_t count = std::min<int64_t>(
                {n, q.rows(), std::max<int64_t>(200, static_cast<int64_t>(2e6 / (gap + 20)))});
            std::vector<uint32_t> ids(size_t(count) * k);
            std::vector<float> dist(ids.size());
            const auto one = [&](int64_t i) {
              const dataset_view v(base + size_t(i) * row_bytes, q.type(), 1, q.cols());
              search(res, p, idx, v, k, {ids.data() + i * k, 1, k}, {dist.data() + i * k, 1, k});
            };
            for (int64_t i = 0; i < std::min<int64_t>(count, 200); ++i) one(i);  // warm-up
            std::vector<double> lat;
            lat.reserve(size_t(count));
            for (int64_t i = 0; i < count; ++i) {
              wait_us(gap);
              const auto t0 = clk::now();
              one(i);
              lat.push_back(std::chrono::duration<double, std::micro>(clk::now() - t0).count());
            }
            double mean = 0;
            for (double x : lat) mean += x / double(lat.size());
            const double rec =
                recall({ids.data(), count, k},
                       {static_cast<const uint32_t*>(gt.data()), count, gt.cols()}, k);
            const double p50 = percentile(lat, 0.5), p90 = percentile(lat, 0.9),
                         p99 = percentile(lat, 0.99);
            std::printf("%6s %9.0f %10s %11s %7lld %9.4f %9.1f %9.1f %9.1f %9.1f\n", it.c_str(),
                        gap, mode.c_str(), p.persistent ? life.c_str() : "-", (long long)count, rec,
                        p50, p90, p99, mean);
            std::fflush(stdout);
            const search_plan plan = plan_search(res, p, idx, k, 1, memory_space::host);
            if (f)
              std::fprintf(f,
                           "{\"dataset\":\"%s\",\"itopk\":%s,\"gap_us\":%.0f,\"persistent\":%s,"
                           "\"lifetime_us\":%u,"
                           "\"queries\":%lld,\"recall\":%.6f,\"p50_us\":%.2f,\"p90_us\":%.2f,"
                           "\"p99_us\":%.2f,\"mean_us\":%.2f,\"plan\":\"%s\"}\n",
                           dataset.c_str(), it.c_str(), gap, p.persistent ? "true" : "false",
                           p.persistent ? p.persistent_lifetime_us : 0u, (long long)count, rec, p50,
                           p90, p99, mean, to_string(plan).c_str());
          }
    if (f) std::fclose(f);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
