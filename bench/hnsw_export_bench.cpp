// cagra_hnsw_export_bench: "build with CAGRA, serve with hnswlib" against hnswlib's own graph, on
// the same files and the same hnswlib search (docs/hnswlib.md). It builds a CAGRA index (backend
// auto: the GPU when there is one), exports it (cagra::export_hnswlib), loads the file with
// hnswlib's loadIndex and sweeps ef; then builds hnswlib's own graph (M 16, ef_construction 200,
// all threads: hnswlib's parallel insertion, as its Python bindings do it) and sweeps the same ef.
// Both sweeps use one search harness: every query handed to a pool of threads through one atomic
// counter, wall-clock timed, best of --reps passes; recall@k is |found[:k] ∩ truth[:k]| / k.
// Prints a table and appends JSON lines (--json): system "cagra->hnswlib" or "hnswlib", with the
// build (and export) times of each.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <hnswlib/hnswlib.h>

#include <cagra/cagra.hpp>
#include <cagra/hnswlib.hpp>
#include <cagra/io.hpp>

#include "bench_json.hpp"  // tools/cli: JSON quoting, CPU model, commit id

namespace {

struct options {
  std::string base, queries, groundtruth, json, dataset, export_path;
  uint32_t k = 10, graph_degree = 32;
  size_t m = 16, ef_construction = 200;
  std::vector<size_t> efs = {10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512};
  int threads = 0, reps = 3;
  std::string metric = "l2", backend = "auto";
  bool skip_hnswlib = false;
};

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  std::exit(1);
}

long parse_int(const std::string& flag, const std::string& s, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v < lo || v > hi)
    fail(flag + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
         "], got '" + s + "'");
  return v;
}

const char* kUsage =
    "usage: cagra_hnsw_export_bench BASE QUERIES GROUNDTRUTH [--graph-degree 32] [-k 10]\n"
    "         [--ef 10,16,...,512] [--threads T (0 = all cores)] [--reps 3]\n"
    "         [--metric l2|ip|cosine] [--backend auto|cpu|cuda] [--M 16]\n"
    "         [--ef-construction 200] [--json FILE (append)] [--dataset NAME]\n"
    "         [--export FILE (default: a temporary file, removed at the end)]\n"
    "         [--skip-hnswlib (the exported graph only)]\n";

options parse_args(int argc, char** argv) {
  options o;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (a.size() < 2 || a[0] != '-') {
      pos.push_back(a);
      continue;
    }
    if (a == "--skip-hnswlib") {
      o.skip_hnswlib = true;
      continue;
    }
    if (i + 1 >= argc) fail(a + " needs a value");
    const std::string v = argv[++i];
    if (a == "-k" || a == "--k") {
      o.k = uint32_t(parse_int(a, v, 1, 100000));
    } else if (a == "--graph-degree") {
      o.graph_degree = uint32_t(parse_int(a, v, 1, 1024));
    } else if (a == "--M") {
      o.m = size_t(parse_int(a, v, 2, 10000));
    } else if (a == "--ef-construction") {
      o.ef_construction = size_t(parse_int(a, v, 1, 1 << 20));
    } else if (a == "--ef") {
      o.efs.clear();
      for (size_t at = 0; at <= v.size();) {
        const size_t comma = std::min(v.find(',', at), v.size());
        o.efs.push_back(size_t(parse_int(a, v.substr(at, comma - at), 1, 1 << 20)));
        at = comma + 1;
      }
    } else if (a == "--threads") {
      o.threads = int(parse_int(a, v, 0, 4096));
    } else if (a == "--reps") {
      o.reps = int(parse_int(a, v, 1, 1000));
    } else if (a == "--metric") {
      o.metric = v == "inner_product" ? "ip" : v;
    } else if (a == "--backend") {
      o.backend = v;
    } else if (a == "--json") {
      o.json = v;
    } else if (a == "--dataset") {
      o.dataset = v;
    } else if (a == "--export") {
      o.export_path = v;
    } else {
      fail("unknown option '" + a + "' (see --help)");
    }
  }
  if (pos.size() != 3)
    fail("expected BASE QUERIES GROUNDTRUTH, got " + std::to_string(pos.size()) +
         " positional arguments (see --help)");
  o.base = pos[0], o.queries = pos[1], o.groundtruth = pos[2];
  if (o.metric != "l2" && o.metric != "ip" && o.metric != "cosine")
    fail("--metric: expected l2, ip or cosine, got '" + o.metric + "'");
  if (o.threads == 0) {  // the affinity mask, as OpenMP and hnswlib_peer count "all cores"
    cpu_set_t set;
    o.threads = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
    if (o.threads <= 0) o.threads = int(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (o.dataset.empty()) {  // the base file's folder names the data set (bigann10k/base.u8bin)
    const size_t slash = o.base.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : o.base.substr(0, slash);
    o.dataset = dir.substr(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/') + 1);
    if (o.dataset.empty()) o.dataset = o.base.substr(0, o.base.find('.'));
  }
  return o;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/** The vectors as float32 (hnswlib's input), rows normalized for cosine. */
std::vector<float> to_float(const cagra::host_matrix& m, bool normalize) {
  const size_t dim = size_t(m.cols());
  std::vector<float> out(size_t(m.rows()) * dim);
  for (int64_t r = 0; r < m.rows(); ++r) {
    const uint8_t* src = m.row_bytes(r);
    float* row = out.data() + size_t(r) * dim;
    for (size_t j = 0; j < dim; ++j) {
      switch (m.type()) {
        case cagra::dtype::f32: std::memcpy(&row[j], src + 4 * j, 4); break;
        case cagra::dtype::f16: {
          cagra::half h;
          std::memcpy(&h.bits, src + 2 * j, 2);
          row[j] = cagra::to_float(h);
          break;
        }
        case cagra::dtype::u8: row[j] = float(src[j]); break;
        case cagra::dtype::i8: row[j] = float(int8_t(src[j])); break;
        default: fail("vectors must be f32, f16, u8 or i8");
      }
    }
    if (normalize) {
      double s = 0;
      for (size_t j = 0; j < dim; ++j) s += double(row[j]) * row[j];
      if (s > 0)
        for (size_t j = 0; j < dim; ++j) row[j] = float(row[j] / std::sqrt(s));
    }
  }
  return out;
}

/** fn(0 .. n-1) on `threads` threads pulling one item at a time (hnswlib's ParallelFor). */
void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  for (auto& th : pool) th.join();
}

/** One system's sweep: recall@k and QPS (best of reps) per ef, printed and written as JSON. */
struct sweep_context {
  const options* o;
  const std::vector<float>* queries;
  const cagra::host_matrix* truth;  // u32 [nq, >= k]
  size_t nq, dim;
  std::string run_id, device, commit;
  FILE* json;
};

void sweep(const sweep_context& c, hnswlib::HierarchicalNSW<float>& h, const char* system,
           const std::string& extra_json) {
  const options& o = *c.o;
  const uint32_t k = o.k;
  std::vector<uint32_t> found(c.nq * k);
  const auto one = [&](size_t q) {
    auto res = h.searchKnn(c.queries->data() + q * c.dim, k);
    uint32_t* row = found.data() + q * k;
    std::fill(row, row + k, cagra::kInvalidId);
    for (size_t j = res.size(); j-- > 0; res.pop())  // a max-heap: the farthest first
      if (j < k) row[j] = uint32_t(res.top().second);
  };
  std::vector<double> best(o.efs.size(), INFINITY), recalls(o.efs.size());
  for (int r = 0; r < o.reps; ++r) {  // passes round the sweep: a burst spoils one pass only
    for (size_t e = 0; e < o.efs.size(); ++e) {
      h.setEf(o.efs[e]);
      const double t0 = now_s();
      parallel_for(c.nq, o.threads, one);
      best[e] = std::min(best[e], now_s() - t0);
      recalls[e] =
          cagra::recall({found.data(), int64_t(c.nq), int64_t(k)}, c.truth->as<uint32_t>(), k);
    }
  }
  std::printf("%s (%d search threads)\n%8s %10s %12s\n", system, o.threads, "ef", "recall@k",
              "QPS");
  for (size_t e = 0; e < o.efs.size(); ++e) {
    const double qps = double(c.nq) / best[e];
    std::printf("%8zu %10.4f %12.1f\n", o.efs[e], recalls[e], qps);
    if (c.json != nullptr) {
      using cagra::cli::json_number;
      using cagra::cli::json_quote;
      std::fprintf(c.json,
                   "{\"run_id\": %s, \"system\": %s, \"device\": %s, \"commit\": %s, "
                   "\"dataset\": %s, \"metric\": %s, \"n\": %zu, \"dim\": %zu, \"nq\": %zu, "
                   "\"batch\": 0, \"k\": %u, \"params\": {\"M\": %zu, \"ef\": %zu, "
                   "\"threads\": %d%s}, \"recall\": %s, \"qps\": %s, \"latency_ms\": %s}\n",
                   json_quote(c.run_id).c_str(), json_quote(system).c_str(),
                   json_quote(c.device).c_str(), json_quote(c.commit).c_str(),
                   json_quote(o.dataset).c_str(), json_quote(o.metric).c_str(),
                   static_cast<size_t>(h.cur_element_count), c.dim, c.nq, k, h.M_, o.efs[e],
                   o.threads, extra_json.c_str(), json_number(recalls[e]).c_str(),
                   json_number(qps, "%.2f").c_str(), json_number(1e3 * best[e]).c_str());
      std::fflush(c.json);
    }
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse_args(argc, argv);
  std::unique_ptr<FILE, int (*)(FILE*)> json(nullptr, fclose);
  if (!o.json.empty()) {
    json.reset(std::fopen(o.json.c_str(), "a"));  // first: a bad path fails before the builds
    if (!json) fail("cannot open '" + o.json + "' for appending: " + std::strerror(errno));
  }
  std::string export_path = o.export_path;
  const bool temporary = export_path.empty();
  if (temporary) {
    const char* tmp = std::getenv("TMPDIR");
    export_path = std::string(tmp && *tmp ? tmp : "/tmp") + "/cagra_hnsw_export_bench." +
                  std::to_string(getpid()) + ".hnsw";
  }
  try {
    const cagra::host_matrix base = cagra::io::read_matrix(o.base);
    const cagra::host_matrix queries = cagra::io::read_matrix(o.queries);
    const cagra::io::neighbors_file gt = cagra::io::read_neighbors(o.groundtruth);
    const size_t n = size_t(base.rows()), nq = size_t(queries.rows()), dim = size_t(base.cols());
    if (size_t(queries.cols()) != dim) fail("queries and base differ in dimension");
    if (size_t(gt.ids.rows()) != nq || gt.ids.cols() < int64_t(o.k))
      fail("the ground truth needs " + std::to_string(nq) + " rows of >= k neighbours");
    const bool cosine = o.metric == "cosine";
    const std::vector<float> xq = to_float(queries, cosine);
    std::unique_ptr<hnswlib::SpaceInterface<float>> space;
    if (o.metric == "l2")
      space = std::make_unique<hnswlib::L2Space>(dim);
    else
      space = std::make_unique<hnswlib::InnerProductSpace>(dim);

    sweep_context c{&o, &xq, &gt.ids, nq, dim, {}, {}, cagra::cli::commit_id(), json.get()};
    char stamp[32];
    const std::time_t tt = std::time(nullptr);
    std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", std::gmtime(&tt));
    c.run_id = std::string(stamp) + "-hnsw-export-" + std::to_string(getpid());
    c.device = cagra::cli::cpu_model() + " (" + std::to_string(o.threads) + " threads)";

    // CAGRA: build (auto backend), export, load with hnswlib.
    cagra::resources res;
    res.target = cagra::parse_backend(o.backend);
    res.num_threads = o.threads;
    cagra::index_params ip;
    ip.metric = cagra::parse_metric(o.metric);
    ip.graph_degree = o.graph_degree;
    cagra::build_report br;
    const cagra::index idx = cagra::build(res, ip, base, &br);
    cagra::hnswlib_export_report er;
    cagra::export_hnswlib(idx, export_path, {}, res, &er);
    double t0 = now_s();
    auto exported = std::make_unique<hnswlib::HierarchicalNSW<float>>(space.get(), export_path);
    const double load_s = now_s() - t0;
    exported->num_deleted_ = 0;  // hnswlib 0.6.2's loadIndex leaves it unset; nothing is deleted
    if (temporary) std::remove(export_path.c_str());
    const std::string build_backend = cagra::to_string(br.backend_used);
    std::string levels;
    for (int64_t r : er.level_rows) levels += (levels.empty() ? "" : ",") + std::to_string(r);
    std::printf(
        "cagra on %s: n=%zu dim=%zu degree=%u, build %.2f s (%s), export %.2f s (levels %.2f s, "
        "rows per level %s), file %.1f MiB, hnswlib load %.2f s\n",
        o.dataset.c_str(), n, dim, o.graph_degree, br.total_seconds, build_backend.c_str(),
        er.total_seconds, er.link_seconds, levels.c_str(), double(er.file_bytes) / (1 << 20),
        load_s);
    sweep(c, *exported, "cagra->hnswlib",
          ", \"graph_degree\": " + std::to_string(o.graph_degree) +
              ", \"build_backend\": " + cagra::cli::json_quote(build_backend) +
              ", \"build_s\": " + cagra::cli::json_number(br.total_seconds, "%.4f") +
              ", \"export_s\": " + cagra::cli::json_number(er.total_seconds, "%.4f"));
    exported.reset();
    if (o.skip_hnswlib) return 0;

    // hnswlib's own graph over the same vectors.
    const std::vector<float> xb = to_float(base, cosine);
    t0 = now_s();
    hnswlib::HierarchicalNSW<float> own(space.get(), n, o.m, o.ef_construction);
    own.addPoint(xb.data(), 0);  // alone first, as hnswlib's bindings do (the entry point)
    parallel_for(n - 1, o.threads,
                 [&](size_t i) { own.addPoint(xb.data() + (i + 1) * dim, i + 1); });
    const double hnsw_build_s = now_s() - t0;
    std::printf("hnswlib on %s: M=%zu ef_construction=%zu, build %.2f s (%d threads)\n",
                o.dataset.c_str(), o.m, o.ef_construction, hnsw_build_s, o.threads);
    sweep(c, own, "hnswlib",
          ", \"ef_construction\": " + std::to_string(o.ef_construction) +
              ", \"build_s\": " + cagra::cli::json_number(hnsw_build_s, "%.4f"));
    std::printf("build     cagra %.2f s (%s) + export %.2f s vs hnswlib %.2f s (%d threads)\n",
                br.total_seconds, build_backend.c_str(), er.total_seconds, hnsw_build_s, o.threads);
  } catch (const std::exception& e) {
    if (temporary) std::remove(export_path.c_str());
    fail(e.what());
  }
  return 0;
}
