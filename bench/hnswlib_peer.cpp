// hnswlib_peer: builds an HNSW index (hnswlib, header-only) over the same files that `cagra bench`
// reads and sweeps ef, writing the same JSON-lines records, so that bench/plot.py can draw both
// systems on one recall/QPS plot. It mirrors how hnswlib is normally benchmarked (its Python
// bindings): parallel insertion after a lone first point, and for batch mode every query handed to
// a thread pool with one atomic counter, timed wall-clock, best of several repetitions. Recall is
// the definition of cagra::recall (|found[:k] ∩ truth[:k]| / k, averaged), computed here so that
// the peer does not depend on the CAGRA search code being finished.
//
// Filtered points (--filter-selectivity): the allowed rows are drawn as `cagra bench` draws them
// (cagra::cli::random_allowed_rows: same share and seed, same rows), hnswlib searches with its
// filter functor (BaseFilterFunctor: the allowed rows only are returned, the walk goes through
// all), and the filtered ground truth is the exact k nearest allowed rows (cagra::brute_force_knn
// over those rows).
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <hnswlib/hnswlib.h>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>
#include <cagra/types.hpp>

#include "bench_json.hpp"  // tools/cli: the JSON-record helpers shared with `cagra bench`

namespace {

struct options {
  std::string base, queries, groundtruth;
  uint32_t k = 10;
  size_t m = 16, ef_construction = 200;
  std::vector<size_t> efs = {10, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512};
  int threads = 0;
  std::vector<int> batches = {0};
  std::string metric = "l2";
  std::string json, dataset, save_index, load_index;
  int reps = 3;
  std::vector<double> selectivities;  // empty: unfiltered only
  uint64_t filter_seed = 0;
};

#if CAGRA_HNSWLIB_FILTER
/** hnswlib's filter: the rows of a bitset. */
struct allowed_rows : hnswlib::BaseFilterFunctor {
  const cagra::row_bitset* rows;
  explicit allowed_rows(const cagra::row_bitset* r) : rows(r) {}
  bool operator()(hnswlib::labeltype id) override { return rows->test(int64_t(id)); }
};
#else
struct allowed_rows {  // hnswlib < 0.7 has no filter: --filter-selectivity is refused
  explicit allowed_rows(const cagra::row_bitset*) {}
};
#endif

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  std::exit(1);
}

long parse_int(const std::string& flag, const std::string& s, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0 || v < lo || v > hi)
    fail(flag + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
         "], got '" + s + "'");
  return v;
}

std::vector<long> parse_list(const std::string& flag, const std::string& s, long lo, long hi) {
  std::vector<long> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(parse_int(flag, s.substr(start, comma - start), lo, hi));
    start = comma + 1;
  }
  return out;
}

const char* kUsage =
    "usage: hnswlib_peer BASE QUERIES GROUNDTRUTH [-k 10] [--M 16] [--ef-construction 200]\n"
    "         [--ef 10,16,...,512] [--threads T (0 = all cores)] [--batch 0|1|0,1]\n"
    "         [--metric l2|ip|cosine] [--json FILE (append)] [--dataset NAME] [--reps 3]\n"
    "         [--save-index FILE] [--load-index FILE]\n"
    "         [--filter-selectivity 0.5,0.1,... (1 = unfiltered)] [--filter-seed S]\n";

options parse_args(int argc, char** argv) {
  options o;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (a.size() < 2 || a[0] != '-') {
      pos.push_back(a);
      continue;
    }
    if (i + 1 >= argc) fail(a + " needs a value");
    std::string v = argv[++i];
    if (a == "-k" || a == "--k")
      o.k = parse_int(a, v, 1, 100000);
    else if (a == "--M" || a == "-M")
      o.m = parse_int(a, v, 2, 10000);
    else if (a == "--ef-construction")
      o.ef_construction = parse_int(a, v, 1, 1 << 20);
    else if (a == "--ef") {
      o.efs.clear();
      for (long e : parse_list(a, v, 1, 1 << 20)) o.efs.push_back(e);
    } else if (a == "--threads")
      o.threads = parse_int(a, v, 0, 4096);
    else if (a == "--batch") {
      o.batches.clear();
      for (long b : parse_list(a, v, 0, 1)) o.batches.push_back(static_cast<int>(b));
    } else if (a == "--metric")
      o.metric = v;
    else if (a == "--json")
      o.json = v;
    else if (a == "--dataset")
      o.dataset = v;
    else if (a == "--reps")
      o.reps = parse_int(a, v, 1, 1000);
    else if (a == "--save-index")
      o.save_index = v;
    else if (a == "--filter-selectivity") {
      size_t at = 0;
      while (at <= v.size()) {
        const size_t comma = std::min(v.find(',', at), v.size());
        const std::string item = v.substr(at, comma - at);
        char* end = nullptr;
        const double s = std::strtod(item.c_str(), &end);
        if (item.empty() || *end != '\0' || !(s > 0 && s <= 1))
          fail("--filter-selectivity: expected shares in (0, 1], got '" + item + "'");
        o.selectivities.push_back(s);
        at = comma + 1;
      }
    } else if (a == "--filter-seed")
      o.filter_seed = static_cast<uint64_t>(parse_int(a, v, 0, LONG_MAX));
    else if (a == "--load-index")
      o.load_index = v;
    else
      fail("unknown option '" + a + "' (see --help)");
  }
  if (pos.size() != 3)
    fail("expected BASE QUERIES GROUNDTRUTH, got " + std::to_string(pos.size()) +
         " positional arguments (see --help)");
  o.base = pos[0], o.queries = pos[1], o.groundtruth = pos[2];
  if (o.metric == "inner_product") o.metric = "ip";
  if (o.metric != "l2" && o.metric != "ip" && o.metric != "cosine")
    fail("--metric: expected l2, ip or cosine, got '" + o.metric + "'");
  if (!o.save_index.empty() && !o.load_index.empty())
    fail("--save-index and --load-index are exclusive");
#if !CAGRA_HNSWLIB_FILTER
  if (!o.selectivities.empty())
    fail(
        "--filter-selectivity needs hnswlib >= 0.7 (its filter functor); this build has an older "
        "one: HNSWLIB_VERSION=0.8.0 bash scripts/dev/fetch_hnswlib.sh, then reconfigure");
#endif
  if (o.threads == 0) {
    // The affinity mask, not the host's core count: in a container these differ, and OpenMP
    // (used by `cagra bench`) also follows the mask, so "all cores" means the same on both sides.
    cpu_set_t set;
    o.threads = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
    if (o.threads <= 0) o.threads = std::max(1u, std::thread::hardware_concurrency());
  }
  if (o.dataset.empty()) {
    // Benchmark files usually sit in a folder named after the data set (fashion-mnist/train-...).
    size_t slash = o.base.rfind('/');
    if (slash != std::string::npos && slash > 0) {
      std::string dir = o.base.substr(0, slash);
      o.dataset = dir.substr(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/') + 1);
    }
    if (o.dataset.empty() || o.dataset == "." || o.dataset == "..") {
      std::string file = o.base.substr(slash == std::string::npos ? 0 : slash + 1);
      o.dataset = file.substr(0, file.find('.'));
    }
  }
  return o;
}

// hnswlib's fast spaces are float only, so every input type is widened (exactly, for u8/i8/f16).
std::vector<float> to_float(const cagra::host_matrix& m, bool normalize) {
  size_t n = static_cast<size_t>(m.rows()) * m.cols();
  std::vector<float> out(n);
  const void* p = m.data();
  for (size_t i = 0; i < n; ++i) {
    switch (m.type()) {
      case cagra::dtype::f32: out[i] = static_cast<const float*>(p)[i]; break;
      case cagra::dtype::f16:
        out[i] = cagra::to_float(static_cast<const cagra::half*>(p)[i]);
        break;
      case cagra::dtype::u8: out[i] = static_cast<const uint8_t*>(p)[i]; break;
      case cagra::dtype::i8: out[i] = static_cast<const int8_t*>(p)[i]; break;
      case cagra::dtype::u32: out[i] = float(static_cast<const uint32_t*>(p)[i]); break;
      case cagra::dtype::i32: out[i] = float(static_cast<const int32_t*>(p)[i]); break;
    }
  }
  if (normalize) {
    for (int64_t r = 0; r < m.rows(); ++r) {
      float* row = out.data() + r * m.cols();
      double s = 0;
      for (int64_t j = 0; j < m.cols(); ++j) s += double(row[j]) * row[j];
      if (s > 0)
        for (int64_t j = 0; j < m.cols(); ++j) row[j] = static_cast<float>(row[j] / std::sqrt(s));
    }
  }
  return out;
}

// Same scheme as hnswlib's python_bindings ParallelFor: threads pull one item at a time from a
// shared counter, which balances the very uneven per-query cost of a graph search.
void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn) {
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  for (auto& th : pool) th.join();
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) {
  options o = parse_args(argc, argv);
  std::unique_ptr<FILE, int (*)(FILE*)> json(nullptr, fclose);
  if (!o.json.empty()) {
    json.reset(std::fopen(o.json.c_str(), "a"));  // open first: a bad path fails before the build
    if (!json) fail("cannot open '" + o.json + "' for appending: " + std::strerror(errno));
  }
  try {
    cagra::host_matrix base = cagra::io::read_matrix(o.base);
    cagra::host_matrix queries = cagra::io::read_matrix(o.queries);
    cagra::io::neighbors_file gt = cagra::io::read_neighbors(o.groundtruth);
    const size_t n = base.rows(), nq = queries.rows(), dim = base.cols();
    if (n == 0 || nq == 0) fail("empty base or query file");
    if (static_cast<size_t>(queries.cols()) != dim)
      fail("queries have dimension " + std::to_string(queries.cols()) + " but the base has " +
           std::to_string(dim));
    if (static_cast<size_t>(gt.ids.rows()) != nq)
      fail("ground truth has " + std::to_string(gt.ids.rows()) + " rows for " + std::to_string(nq) +
           " queries");
    if (gt.ids.cols() < o.k)
      fail("ground truth has " + std::to_string(gt.ids.cols()) + " neighbors per query, -k is " +
           std::to_string(o.k));
    bool cosine = o.metric == "cosine";
    std::vector<float> xb = to_float(base, cosine), xq = to_float(queries, cosine);
    std::unique_ptr<hnswlib::SpaceInterface<float>> space;
    if (o.metric == "l2")
      space = std::make_unique<hnswlib::L2Space>(dim);
    else
      space = std::make_unique<hnswlib::InnerProductSpace>(dim);

    std::unique_ptr<hnswlib::HierarchicalNSW<float>> hnsw;
    double build_s = NAN;
    if (!o.load_index.empty()) {
      hnsw = std::make_unique<hnswlib::HierarchicalNSW<float>>(space.get(), o.load_index);
      if (hnsw->cur_element_count != n)
        fail("index '" + o.load_index + "' holds " + std::to_string(hnsw->cur_element_count) +
             " vectors, the base " + std::to_string(n));
      o.m = hnsw->M_, o.ef_construction = hnsw->ef_construction_;
      // hnswlib's file has no metric and no build time; a sidecar written by --save-index keeps
      // both, so a re-run cannot search with the wrong space and still reports the build time.
      std::ifstream side(o.load_index + ".meta");
      std::string saved_metric;
      if (side >> saved_metric >> build_s) {
        if (saved_metric != o.metric)
          fail("index '" + o.load_index + "' was built with --metric " + saved_metric + ", not " +
               o.metric);
      } else {
        build_s = NAN;
      }
    } else {
      double t0 = now_s();
      hnsw =
          std::make_unique<hnswlib::HierarchicalNSW<float>>(space.get(), n, o.m, o.ef_construction);
      // The first point alone, as hnswlib's bindings do: it becomes the entry point, and
      // inserting it concurrently with others would race on the empty graph.
      hnsw->addPoint(xb.data(), 0);
      parallel_for(n - 1, o.threads,
                   [&](size_t i) { hnsw->addPoint(xb.data() + (i + 1) * dim, i + 1); });
      build_s = now_s() - t0;
      std::fprintf(stderr,
                   "built HNSW M=%zu ef_construction=%zu over %zu x %zu in %.2f s "
                   "(%d threads)\n",
                   o.m, o.ef_construction, n, dim, build_s, o.threads);
      if (!o.save_index.empty()) {
        hnsw->saveIndex(o.save_index);
        std::ofstream(o.save_index + ".meta")
            << o.metric << " " << cagra::cli::json_number(build_s, "%.4f") << "\n";
      }
    }

    // One run id for the whole sweep lets plot.py tell repeated sweeps of one config apart.
    char stamp[32];
    std::time_t tt = std::time(nullptr);
    std::strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", std::gmtime(&tt));
    const std::string run_id = std::string(stamp) + "-hnswlib-" + std::to_string(getpid());
    const std::string cpu = cagra::cli::cpu_model();
    const std::string commit = cagra::cli::commit_id();
    const uint32_t k = o.k;
    std::vector<uint32_t> found(nq * k);

    std::printf(
        "hnswlib on %s: n=%zu dim=%zu nq=%zu k=%u M=%zu ef_construction=%zu "
        "threads=%d build_s=%s\n",
        o.dataset.c_str(), n, dim, nq, k, o.m, o.ef_construction, o.threads,
        cagra::cli::json_number(build_s, "%.2f").c_str());
    std::vector<double> shares = o.selectivities;
    if (shares.empty()) shares.push_back(-1);
    for (double share : shares) {
      // The allowed rows (as `cagra bench` draws them) and the exact k nearest allowed rows.
      cagra::row_bitset allowed;
      cagra::host_matrix filtered_truth;
      std::unique_ptr<allowed_rows> filter;
      if (share > 0 && share < 1) {
        allowed = cagra::cli::random_allowed_rows(int64_t(n), share, o.filter_seed);
        std::vector<uint32_t> ids;
        for (int64_t i = 0; i < int64_t(n); ++i)
          if (allowed.test(i)) ids.push_back(uint32_t(i));
        cagra::host_matrix sub(base.type(), int64_t(ids.size()), int64_t(dim));
        const size_t row_bytes = dim * cagra::dtype_size(base.type());
        for (size_t i = 0; i < ids.size(); ++i)
          std::memcpy(static_cast<uint8_t*>(sub.data()) + i * row_bytes, base.row_bytes(ids[i]),
                      row_bytes);
        const uint32_t kk = uint32_t(std::min<size_t>(o.k, ids.size()));
        const cagra::knn_graph g =
            cagra::brute_force_knn({}, cagra::parse_metric(o.metric), sub, queries, kk);
        filtered_truth = cagra::host_matrix(cagra::dtype::u32, int64_t(nq), o.k);
        uint32_t* t = static_cast<uint32_t*>(filtered_truth.data());
        for (size_t q = 0; q < nq; ++q)
          for (uint32_t j = 0; j < o.k; ++j)
            t[q * o.k + j] = j < kk ? ids[g.ids[q * kk + j]] : cagra::kInvalidId;
        filter = std::make_unique<allowed_rows>(&allowed);
        std::printf("filter: %.4g%% of rows allowed (%zu), seed %llu\n",
                    100.0 * double(ids.size()) / double(n), ids.size(),
                    (unsigned long long)o.filter_seed);
      }
      const auto truth = filter ? filtered_truth.as<uint32_t>() : gt.ids.as<uint32_t>();
      const std::string selectivity_field =
          share < 0
              ? std::string()
              : ", \"selectivity\": " +
                    cagra::cli::json_number(filter ? double(allowed.count()) / double(n) : 1.0);
      for (int batch : o.batches) {
        // As in `cagra bench`: the device string and params.threads name the threads that searched.
        int threads = batch ? 1 : o.threads;
        std::string device =
            cpu + " (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
        std::printf("batch=%d (%d search thread%s)\n%8s %10s %12s %12s\n", batch, threads,
                    threads == 1 ? "" : "s", "ef", "recall@k", "QPS", "latency_ms");
        auto one = [&](size_t q) {
#if CAGRA_HNSWLIB_FILTER
          auto res = hnsw->searchKnn(xq.data() + q * dim, k, filter.get());
#else
          auto res = hnsw->searchKnn(xq.data() + q * dim, k);
#endif
          uint32_t* row = found.data() + q * k;
          std::fill(row, row + k, cagra::kInvalidId);
          // searchKnn returns a max-heap: the farthest comes out first.
          for (size_t j = res.size(); j-- > 0; res.pop())
            if (j < k) row[j] = static_cast<uint32_t>(res.top().second);
        };
        // The repetitions go round the whole sweep rather than repeating each point in a row: on a
        // shared machine a burst of other work then spoils one pass of a point, not all of them.
        std::vector<double> best(o.efs.size(), INFINITY), recalls(o.efs.size());
        for (int r = 0; r < o.reps; ++r) {
          for (size_t e = 0; e < o.efs.size(); ++e) {
            hnsw->setEf(o.efs[e]);
            double t0 = now_s();
            parallel_for(nq, threads, one);
            best[e] = std::min(best[e], now_s() - t0);
            size_t hits = 0;
            for (size_t q = 0; q < nq; ++q) {
              const uint32_t* f = found.data() + q * k;
              const uint32_t* t = truth.row(q);
              for (uint32_t j = 0; j < k; ++j)
                if (f[j] != cagra::kInvalidId && std::find(t, t + k, f[j]) != t + k) ++hits;
            }
            recalls[e] = double(hits) / (double(nq) * k);
          }
        }
        for (size_t e = 0; e < o.efs.size(); ++e) {
          size_t ef = o.efs[e];
          double recall = recalls[e], qps = nq / best[e];
          // batch 1: the mean time one query waits; batch 0: the time to answer the whole batch.
          double latency_ms = batch ? 1e3 * best[e] / nq : 1e3 * best[e];
          std::printf("%8zu %10.4f %12.1f %12.4f\n", ef, recall, qps, latency_ms);
          if (json) {
            std::fprintf(
                json.get(),
                "{\"run_id\": %s, \"system\": \"hnswlib\", \"device\": %s, \"commit\": %s, "
                "\"dataset\": %s, \"metric\": %s, \"n\": %zu, \"dim\": %zu, \"nq\": %zu, "
                "\"batch\": %d, \"k\": %u, "
                "\"params\": {\"M\": %zu, \"ef_construction\": %zu, \"ef\": %zu, "
                "\"threads\": %d}, \"recall\": %s, \"qps\": %s, \"latency_ms\": %s, "
                "\"build_s\": %s%s}\n",
                cagra::cli::json_quote(run_id).c_str(), cagra::cli::json_quote(device).c_str(),
                cagra::cli::json_quote(commit).c_str(), cagra::cli::json_quote(o.dataset).c_str(),
                cagra::cli::json_quote(o.metric).c_str(), n, dim, nq, batch, k, o.m,
                o.ef_construction, ef, threads, cagra::cli::json_number(recall).c_str(),
                cagra::cli::json_number(qps, "%.2f").c_str(),
                cagra::cli::json_number(latency_ms).c_str(),
                cagra::cli::json_number(build_s, "%.4f").c_str(), selectivity_field.c_str());
            std::fflush(json.get());
          }
          std::fflush(stdout);
        }
      }
    }
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return 0;
}
