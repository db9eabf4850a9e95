// The living index measured (docs/living_index.md, docs/benchmarks.md "Living index"): on one
// dataset with its ground truth,
//  - extend: build on the first half of the rows, insert the second half in batches (one extend
//    call per batch of --chunk rows, as a user adding rows would), and compare
//    recall@10 at equal search parameters with a full build of all rows (plus the insertion rate);
//  - remove: delete a random share of the rows from the full build, and compare recall over the
//    remaining rows (exact answers from the exact filtered path) before and after compaction with
//    a fresh build of those rows; every returned label is checked against the deleted set.
// One JSON line per measured point.
//
//   living_index BASE QUERIES GT [--backend cuda] [--metric l2] [--degree 32] [--chunk 10000]
//                [--itopk 32,64,128] [--remove 0.1,0.5|none] [--no-extend] [--dataset NAME]
//                [--json FILE]
// (--no-extend and --remove none split one run over several processes, e.g. to stay under a
// time limit per command on the CPU backend.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>

#include "bench_json.hpp"

namespace {

using namespace cagra;
using clk = std::chrono::steady_clock;
double since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

struct options {
  std::string base, queries, gt, dataset = "unnamed", json;
  backend target = backend::cuda;
  metric dist = metric::l2;
  uint32_t degree = 32, chunk = 10000, k = 10;
  std::vector<uint32_t> itopk = {32, 64, 128};
  std::vector<double> remove = {0.1, 0.5};
  bool extend = true;
};

std::vector<double> parse_list(const std::string& s) {
  std::vector<double> v;
  if (s == "none") return v;
  size_t at = 0;
  while (at <= s.size()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    v.push_back(std::stod(s.substr(at, end - at)));
    at = end + 1;
  }
  return v;
}

host_matrix rows_of(const host_matrix& m, const std::vector<int64_t>& rows) {
  host_matrix out(m.type(), int64_t(rows.size()), m.cols());
  const size_t b = size_t(m.cols()) * dtype_size(m.type());
  for (size_t i = 0; i < rows.size(); ++i)
    std::memcpy(static_cast<uint8_t*>(out.data()) + i * b, m.row_bytes(rows[i]), b);
  return out;
}

std::vector<int64_t> range(int64_t first, int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

double recall_labels(const std::vector<int64_t>& found, const std::vector<int64_t>& truth,
                     uint32_t k) {
  int64_t hits = 0;
  for (size_t i = 0; i < truth.size() / k; ++i)
    for (uint32_t a = 0; a < k; ++a)
      hits += std::count(found.begin() + i * k, found.begin() + (i + 1) * k, truth[i * k + a]);
  return double(hits) / double(truth.size());
}

struct point {
  double recall = 0, qps = 0;
  std::vector<int64_t> labels;
};

point measure(const resources& res, const cagra::index& idx, const host_matrix& q, uint32_t k,
              uint32_t itopk, const std::vector<int64_t>& truth) {
  search_params sp;
  sp.itopk_size = itopk;
  point p;
  p.labels.resize(size_t(q.rows()) * k);
  matrix_view<int64_t> out{p.labels.data(), q.rows(), k};
  search(res, sp, idx, q, k, out, {});  // warm-up (uploads the index)
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t = clk::now();
    search(res, sp, idx, q, k, out, {});
    best = std::min(best, since(t));
  }
  p.qps = double(q.rows()) / best;
  p.recall = recall_labels(p.labels, truth, k);
  return p;
}

struct recorder {
  options o;
  std::string run_id = cli::make_run_id(), device;
  FILE* f = nullptr;
  void put(const std::string& experiment, const std::string& what, double share, uint32_t itopk,
           const point& p, int64_t n, double seconds, double rate, int64_t violations) {
    std::printf("%-8s %-22s share %.2f itopk %4u  recall %.4f  qps %10.0f  n %lld%s\n",
                experiment.c_str(), what.c_str(), share, itopk, p.recall, p.qps, (long long)n,
                violations > 0 ? "  REMOVED LABELS RETURNED" : "");
    if (!f) return;
    std::fprintf(f,
                 "{\"run_id\":%s,\"system\":%s,\"device\":%s,\"commit\":%s,\"dataset\":%s,"
                 "\"experiment\":%s,\"index\":%s,\"share\":%s,\"n\":%lld,\"k\":%u,\"itopk\":%u,"
                 "\"graph_degree\":%u,\"chunk\":%u,\"recall\":%s,\"qps\":%s,\"seconds\":%s,"
                 "\"rows_per_s\":%s,\"removed_returned\":%lld}\n",
                 cli::json_quote(run_id).c_str(),
                 cli::json_quote(o.target == backend::cuda ? "cagra-cuda" : "cagra-cpu").c_str(),
                 cli::json_quote(device).c_str(), cli::json_quote(cli::commit_id()).c_str(),
                 cli::json_quote(o.dataset).c_str(), cli::json_quote(experiment).c_str(),
                 cli::json_quote(what).c_str(), cli::json_number(share).c_str(), (long long)n, o.k,
                 itopk, o.degree, o.chunk, cli::json_number(p.recall).c_str(),
                 cli::json_number(p.qps).c_str(), cli::json_number(seconds).c_str(),
                 cli::json_number(rate).c_str(), (long long)violations);
    std::fflush(f);
  }
};

int run(const options& o) {
  resources res;
  res.target = o.target;
  recorder rec;
  rec.o = o;
  rec.device = o.target == backend::cuda ? cuda_device_name(0) : cli::cpu_model();
  if (!o.json.empty()) rec.f = std::fopen(o.json.c_str(), "a");
  const host_matrix base = io::read_matrix(o.base);
  const host_matrix q = io::read_matrix(o.queries);
  const host_matrix gt = io::read_neighbors(o.gt).ids;
  const int64_t n = base.rows(), nq = q.rows();
  std::vector<int64_t> truth(size_t(nq) * o.k);
  for (int64_t i = 0; i < nq; ++i)
    for (uint32_t j = 0; j < o.k; ++j)
      truth[size_t(i) * o.k + j] = static_cast<const uint32_t*>(gt.data())[i * gt.cols() + j];
  index_params ip;
  ip.graph_degree = o.degree;
  ip.metric = o.dist;

  // Extend: half built, half inserted, against a full build.
  auto t = clk::now();
  if (o.extend) {
    cagra::index full = build(res, ip, base);
    const double full_s = since(t);
    const int64_t half = n / 2;
    t = clk::now();
    cagra::index grown = build(res, ip, rows_of(base, range(0, half)));
    const double half_s = since(t);
    extend_params ep;
    ep.chunk_size = o.chunk;
    // The second half goes in as a user would add it: one extend call per batch of o.chunk rows.
    extend_report er;
    double ext_s = 0;
    for (int64_t first = half; first < n; first += o.chunk) {
      const host_matrix batch = rows_of(base, range(first, std::min<int64_t>(o.chunk, n - first)));
      extend_report r;
      t = clk::now();
      extend(res, ep, grown, batch, nullptr, &r);
      ext_s += since(t);
      er += r;
    }
    std::printf(
        "extend: %u chunks, setup %.2f s, search %.2f s, chunk kNN %.2f s, prune %.2f s, reverse "
        "%.2f s, device "
        "copy "
        "%.2f s, total %.2f s\n",
        er.chunks, er.setup_seconds, er.search_seconds, er.chunk_knn_seconds, er.prune_seconds,
        er.reverse_seconds, er.device_seconds, er.total_seconds);
    std::printf(
        "build %lld rows %.2f s; build %lld rows %.2f s + extend %lld rows %.2f s = %.0f "
        "rows/s\n",
        (long long)n, full_s, (long long)half, half_s, (long long)(n - half), ext_s,
        double(n - half) / ext_s);
    for (uint32_t itopk : o.itopk) {
      rec.put("extend", "full-build", 1.0, itopk, measure(res, full, q, o.k, itopk, truth), n,
              full_s, double(n) / full_s, 0);
      rec.put("extend", "half-build+extend", 0.5, itopk, measure(res, grown, q, o.k, itopk, truth),
              n, ext_s, double(n - half) / ext_s, 0);
    }
  }

  // Remove: a random share of the full build's rows.
  for (double share : o.remove) {
    std::vector<int64_t> order = range(0, n);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(42));
    std::vector<int64_t> gone(order.begin(), order.begin() + int64_t(share * double(n)));
    std::vector<int64_t> kept(order.begin() + int64_t(gone.size()), order.end());
    std::sort(gone.begin(), gone.end());
    std::sort(kept.begin(), kept.end());
    cagra::index idx = build(res, ip, base);
    t = clk::now();
    remove(res, idx, gone.data(), int64_t(gone.size()));
    const double rm_s = since(t);
    // Exact answers over the remaining rows (the exact filtered path; labels = row numbers).
    std::vector<int64_t> exact(size_t(nq) * o.k);
    search_params xp;
    xp.filter = filter_algo::exact;
    search(res, xp, idx, q, o.k, matrix_view<int64_t>{exact.data(), nq, o.k}, {});
    t = clk::now();
    cagra::index fresh = build(res, ip, rows_of(base, kept));
    const double fresh_s = since(t);
    fresh.set_labels(kept);
    const std::set<int64_t> gone_set(gone.begin(), gone.end());
    auto violations = [&](const point& p) {
      return int64_t(std::count_if(p.labels.begin(), p.labels.end(),
                                   [&](int64_t l) { return gone_set.count(l) > 0; }));
    };
    std::vector<point> before;
    for (uint32_t itopk : o.itopk) before.push_back(measure(res, idx, q, o.k, itopk, exact));
    t = clk::now();
    compact(res, idx);
    const double compact_s = since(t);
    std::printf("remove %.0f%%: %.3f s, compact %.2f s, fresh build of %lld rows %.2f s\n",
                share * 100, rm_s, compact_s, (long long)kept.size(), fresh_s);
    for (size_t i = 0; i < o.itopk.size(); ++i) {
      const uint32_t itopk = o.itopk[i];
      const point fr = measure(res, fresh, q, o.k, itopk, exact);
      const point after = measure(res, idx, q, o.k, itopk, exact);
      rec.put("remove", "fresh-build", share, itopk, fr, int64_t(kept.size()), fresh_s, 0,
              violations(fr));
      rec.put("remove", "tombstoned", share, itopk, before[i], n, rm_s, 0, violations(before[i]));
      rec.put("remove", "compacted", share, itopk, after, idx.size(), compact_s, 0,
              violations(after));
      if (violations(before[i]) || violations(after)) return 2;
    }
  }
  if (rec.f) std::fclose(rec.f);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  std::vector<std::string> pos;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto val = [&]() -> std::string {
        CAGRA_EXPECTS(i + 1 < argc, "%s needs a value", a.c_str());
        return argv[++i];
      };
      if (a == "--backend")
        o.target = parse_backend(val());
      else if (a == "--metric")
        o.dist = parse_metric(val());
      else if (a == "--degree")
        o.degree = uint32_t(std::stoul(val()));
      else if (a == "--chunk")
        o.chunk = uint32_t(std::stoul(val()));
      else if (a == "--dataset")
        o.dataset = val();
      else if (a == "--json")
        o.json = val();
      else if (a == "--itopk") {
        o.itopk.clear();
        for (double v : parse_list(val())) o.itopk.push_back(uint32_t(v));
      } else if (a == "--remove")
        o.remove = parse_list(val());
      else if (a == "--no-extend")
        o.extend = false;
      else
        pos.push_back(a);
    }
    CAGRA_EXPECTS(pos.size() == 3, "usage: living_index BASE QUERIES GT [options]");
    o.base = pos[0], o.queries = pos[1], o.gt = pos[2];
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
