// Several GPUs measured (docs/multi_gpu.md, docs/benchmarks.md "Multi-GPU"), on one dataset with
// its ground truth:
//  - replicated: one index (built on the first device), searched with every query in one call
//    over the first 1, 2, 4 ... devices: the batch-10K QPS scaling; the same calls made by as many
//    concurrent host threads as there are devices (each call whole on one device);
//  - sharded: the rows split into G shards built in parallel on G devices (build time), searched
//    over those devices, and the same shards all on the first device (the results must be the
//    same, the QPS is that of one GPU); the merge's share of the search time (merge_topk timed
//    alone on the shards' own answers); in a CUDA build also the sharded search of queries in
//    device memory on the first device (NCCL between GPUs).
// One JSON line per measured point.
//
//   multi_gpu BASE QUERIES GT [--devices 0,1,2,3] [--degree 32] [--itopk 32,64,128]
//             [--repeat 5] [--dataset NAME] [--json FILE] [--shards 2,4] [--no-single]
//             [--no-one-gpu] [--no-sharded]
// --no-sharded skips the sharded runs, --no-single the single index and the replicated runs (a
// set too large for one GPU),
// --no-one-gpu the shards-on-one-device runs; the host memory peak is printed at the end.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <omp.h>
#include <sys/resource.h>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>
#include <cagra/multi_gpu.hpp>
#if CAGRA_BENCH_DEVICE
#include <cuda_runtime_api.h>
#endif

#include "bench_json.hpp"

namespace {

using namespace cagra;
using clk = std::chrono::steady_clock;
double since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

struct options {
  std::string base, queries, gt, dataset = "unnamed", json;
  std::vector<int> devices;
  uint32_t degree = 32, k = 10;
  int repeat = 5;
  std::vector<uint32_t> itopk = {32, 64, 128};
  std::vector<uint32_t> shards;  // empty: 2, 4, ... up to the device count
  bool single = true;            // the single index and the replicated runs
  bool one_gpu = true;           // the shards all on the first device as well
  bool sharded = true;           // the sharded builds and searches
};

template <typename T>
std::vector<T> parse_list(const std::string& s) {
  std::vector<T> v;
  size_t at = 0;
  while (at <= s.size()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    v.push_back(T(std::stol(s.substr(at, end - at))));
    at = end + 1;
  }
  return v;
}

struct point {
  double recall = 0, qps = 0, seconds = 0;
};

/** Seconds of the fastest of `repeat` runs of `f`, after one untimed run (uploads the index). */
template <typename F>
double best_seconds(int repeat, F&& f) {
  f();
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    const auto t = clk::now();
    f();
    best = std::min(best, since(t));
  }
  return best;
}

/** The point of `nq` queries searched in `seconds` with these results. */
point point_of(double seconds, const std::vector<uint32_t>& ids, int64_t nq, const host_matrix& gt,
               uint32_t k) {
  point p;
  p.seconds = seconds;
  p.qps = double(nq) / seconds;
  p.recall = recall({ids.data(), nq, k}, gt.as<uint32_t>(), k);
  return p;
}

/** Best of `repeat` timed calls with every query, after one warm-up call (uploads the index). */
template <typename Index>
point measure(const resources& res, const Index& idx, const host_matrix& q, const host_matrix& gt,
              uint32_t k, uint32_t itopk, int repeat) {
  search_params sp;
  sp.itopk_size = itopk;
  std::vector<uint32_t> ids(size_t(q.rows()) * k);
  std::vector<float> dist(ids.size());
  matrix_view<uint32_t> out{ids.data(), q.rows(), k};
  matrix_view<float> out_d{dist.data(), q.rows(), k};
  const double best = best_seconds(repeat, [&] { search(res, sp, idx, q, k, out, out_d); });
  return point_of(best, ids, q.rows(), gt, k);
}

#if CAGRA_BENCH_DEVICE
/** measure() with the queries and results in device memory on the first device (a sharded
 *  search then broadcasts the queries from there and merges there: NCCL between GPUs). The
 *  results are copied back for the recall after the timed calls. */
point measure_device(const resources& res, const sharded_index& idx, const host_matrix& q,
                     const host_matrix& gt, uint32_t k, uint32_t itopk, int repeat) {
  search_params sp;
  sp.itopk_size = itopk;
  const int device = res.devices.empty() ? res.device : res.devices[0];
  const size_t q_bytes = q.size_bytes(), n = size_t(q.rows()) * k;
  void *dq = nullptr, *d_ids = nullptr, *d_dist = nullptr;
  auto check = [](cudaError_t e) {
    if (e != cudaSuccess) throw error(std::string("CUDA: ") + cudaGetErrorString(e));
  };
  check(cudaSetDevice(device));
  check(cudaMalloc(&dq, q_bytes));
  check(cudaMalloc(&d_ids, n * sizeof(uint32_t)));
  check(cudaMalloc(&d_dist, n * sizeof(float)));
  check(cudaMemcpy(dq, q.data(), q_bytes, cudaMemcpyHostToDevice));
  const auto dev = memory_space::device;
  const dataset_view qv(dq, q.type(), q.rows(), q.cols(), dev);
  const matrix_view<uint32_t> out{static_cast<uint32_t*>(d_ids), q.rows(), k, dev};
  const matrix_view<float> out_d{static_cast<float*>(d_dist), q.rows(), k, dev};
  const double best = best_seconds(repeat, [&] { search(res, sp, idx, qv, k, out, out_d); });
  std::vector<uint32_t> ids(n);
  check(cudaMemcpy(ids.data(), d_ids, n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  check(cudaFree(dq));
  check(cudaFree(d_ids));
  check(cudaFree(d_dist));
  return point_of(best, ids, q.rows(), gt, k);
}
#endif

/** `rows` rows cycling through m's rows. */
host_matrix repeat_rows(const host_matrix& m, int64_t rows) {
  host_matrix out(m.type(), rows, m.cols());
  const size_t rb = size_t(m.cols()) * dtype_size(m.type());
  for (int64_t i = 0; i < rows; ++i)
    std::memcpy(static_cast<uint8_t*>(out.data()) + size_t(i) * rb, m.row_bytes(i % m.rows()), rb);
  return out;
}

/** `callers` host threads, each searching its share of the queries one per call (itopk 64,
 *  defaults otherwise); QPS over all calls, after one warm-up round on every device. */
point batch1_callers(const resources& res, const cagra::index& idx, const host_matrix& q,
                     const host_matrix& gt, uint32_t k, int callers) {
  const int64_t nq = std::min<int64_t>(q.rows(), 4000);
  std::vector<uint32_t> ids(size_t(nq) * k);
  const size_t rb = size_t(q.cols()) * dtype_size(q.type());
  auto one = [&](int64_t i) {
    resources r = res;
    r.num_threads = 1;
    search(r, search_params{}, idx, dataset_view(q.row_bytes(i), q.type(), 1, q.cols()), k,
           {ids.data() + size_t(i) * k, 1, k}, {});
  };
  for (size_t w = 0; w < std::max<size_t>(1, res.devices.size()) * 2; ++w) one(0);
  const auto t = clk::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c)
    threads.emplace_back([&, c] {
      for (int64_t i = c; i < nq; i += callers) one(i);
    });
  for (auto& th : threads) th.join();
  point p;
  p.seconds = since(t);
  p.qps = double(nq) / p.seconds;
  (void)rb;
  host_matrix part(gt.type(), nq, gt.cols());
  std::memcpy(part.data(), gt.data(), size_t(nq) * size_t(gt.cols()) * 4);
  p.recall = recall({ids.data(), nq, k}, part.as<uint32_t>(), k);
  return p;
}

/** `callers` host threads, each making `rounds` calls with every query (itopk as given); QPS
 *  over all calls. The threads are made once and each makes one untimed call first, as a
 *  server's pool would: a thread's first call pays for things kept per thread (its verified
 *  OpenMP team size, core/threads.cpp), which fresh threads would add to every round. A
 *  replicated index gives concurrent calls whole devices (docs/multi_gpu.md "Replicated split
 *  rule"). */
point batch_callers(const resources& res, const cagra::index& idx, const host_matrix& q,
                    const host_matrix& gt, uint32_t k, uint32_t itopk, int callers, int rounds) {
  search_params sp;
  sp.itopk_size = itopk;
  std::vector<std::vector<uint32_t>> ids(size_t(callers),
                                         std::vector<uint32_t>(size_t(q.rows()) * k));
  std::atomic<int> warm{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c)
    threads.emplace_back([&, c] {
      auto call = [&] { search(res, sp, idx, q, k, {ids[size_t(c)].data(), q.rows(), k}, {}); };
      call();
      warm.fetch_add(1);
      while (!go.load()) std::this_thread::yield();
      for (int r = 0; r < rounds; ++r) call();
    });
  while (warm.load() < callers) std::this_thread::yield();
  const auto t = clk::now();
  go.store(true);
  for (auto& th : threads) th.join();
  point p;
  p.seconds = since(t);
  p.qps = double(q.rows()) * callers * rounds / p.seconds;
  p.recall = recall({ids[0].data(), q.rows(), k}, gt.as<uint32_t>(), k);
  return p;
}

/** Seconds merge_topk takes over the shards' own answers (best of `repeat`). */
double merge_seconds(const resources& res, const sharded_index& sh, const host_matrix& q,
                     uint32_t k, uint32_t itopk, int repeat) {
  search_params sp;
  sp.itopk_size = itopk;
  const size_t n = sh.shard_count(), words = size_t(q.rows()) * k;
  std::vector<std::vector<uint32_t>> ids(n, std::vector<uint32_t>(words));
  std::vector<std::vector<float>> dist(n, std::vector<float>(words));
  std::vector<matrix_view<const uint32_t>> iv;
  std::vector<matrix_view<const float>> dv;
  for (size_t s = 0; s < n; ++s) {
    resources r = res;
    r.devices.clear();
    search(r, sp, sh.shard(s), q, k, {ids[s].data(), q.rows(), k}, {dist[s].data(), q.rows(), k});
    for (uint32_t& id : ids[s])
      if (id != kInvalidId) id += uint32_t(sh.shard_offset(s));
    iv.push_back({ids[s].data(), q.rows(), k});
    dv.push_back({dist[s].data(), q.rows(), k});
  }
  std::vector<uint32_t> out(words);
  std::vector<float> out_d(words);
  double best = 1e30;
  for (int r = 0; r < repeat; ++r) {
    const auto t = clk::now();
    merge_topk(iv, dv, k, {out.data(), q.rows(), k}, {out_d.data(), q.rows(), k});
    best = std::min(best, since(t));
  }
  return best;
}

struct recorder {
  options o;
  std::string run_id = cli::make_run_id(), device;
  int64_t n = 0, nq = 0, batch = 0;  // batch 0: every query in one call
  int callers = 1;                   // host threads calling at once
  FILE* f = nullptr;
  void put(const char* experiment, const std::vector<int>& devices, size_t shards, uint32_t itopk,
           const point& p, double build_s, double merge_s) {
    std::string list;
    for (int d : devices) list += (list.empty() ? "" : ",") + std::to_string(d);
    std::printf(
        "%-16s devices %-8s shards %zu itopk %4u  recall %.4f  qps %11.0f  build %6.2f s%s\n",
        experiment, list.c_str(), shards, itopk, p.recall, p.qps, build_s,
        merge_s >= 0 ? ("  merge " + std::to_string(merge_s * 1e3) + " ms").c_str() : "");
    if (!f) return;
    std::fprintf(f,
                 "{\"run_id\":%s,\"system\":\"cagra-cuda\",\"device\":%s,\"commit\":%s,"
                 "\"dataset\":%s,\"experiment\":%s,\"devices\":[%s],\"gpus\":%zu,\"shards\":%zu,"
                 "\"n\":%lld,\"nq\":%lld,\"batch\":%lld,\"callers\":%d,\"k\":%u,\"itopk\":%u,"
                 "\"graph_degree\":%u,"
                 "\"recall\":%s,\"qps\":%s,\"search_s\":%s,\"build_s\":%s,\"merge_s\":%s}\n",
                 cli::json_quote(run_id).c_str(), cli::json_quote(device).c_str(),
                 cli::json_quote(cli::commit_id()).c_str(), cli::json_quote(o.dataset).c_str(),
                 cli::json_quote(experiment).c_str(), list.c_str(), devices.size(), shards,
                 (long long)n, (long long)nq, (long long)batch, callers, o.k, itopk, o.degree,
                 cli::json_number(p.recall).c_str(), cli::json_number(p.qps).c_str(),
                 cli::json_number(p.seconds).c_str(), cli::json_number(build_s).c_str(),
                 cli::json_number(merge_s).c_str());
    std::fflush(f);
  }
};

int run(const options& o) {
  recorder rec;
  rec.o = o;
  rec.device = cuda_device_name(o.devices.empty() ? 0 : o.devices[0]);
  if (!o.json.empty()) rec.f = std::fopen(o.json.c_str(), "a");
  const host_matrix base = io::read_matrix(o.base);
  const host_matrix q = io::read_matrix(o.queries);
  const host_matrix gt = io::read_neighbors(o.gt).ids;
  rec.n = base.rows();
  rec.nq = q.rows();
  std::printf("%s: %lld x %lld, %lld queries; %s; %d OpenMP threads\n", o.dataset.c_str(),
              (long long)base.rows(), (long long)base.cols(), (long long)q.rows(),
              rec.device.c_str(), omp_get_max_threads());
  index_params ip;
  ip.graph_degree = o.degree;
  resources first;
  first.target = backend::cuda;
  first.device = o.devices[0];

  // 1, 2, 4, ... of the devices (and all of them).
  std::vector<size_t> counts;
  for (size_t m = 1; m < o.devices.size(); m *= 2) counts.push_back(m);
  counts.push_back(o.devices.size());
  auto t = clk::now();
  if (o.single) {
    const cagra::index single = build(first, ip, base);
    const double single_s = since(t);
    // Replicated over each count of devices, every query in one call.
    for (size_t m : counts) {
      resources r = first;
      r.devices.assign(o.devices.begin(), o.devices.begin() + int64_t(m));
      for (uint32_t itopk : o.itopk)
        rec.put("replicated", r.devices, 1, itopk, measure(r, single, q, gt, o.k, itopk, o.repeat),
                single_s, -1);
    }
    // Concurrent callers of batch-10K calls (as many as the largest device count, for every
    // device count: the same load), each call whole on one device.
    const int callers = int(counts.back());
    if (callers > 1)
      for (size_t m : counts) {
        resources r = first;
        r.devices.assign(o.devices.begin(), o.devices.begin() + int64_t(m));
        rec.callers = callers;
        for (uint32_t itopk : o.itopk)
          rec.put("replicated-callers", r.devices, 1, itopk,
                  batch_callers(r, single, q, gt, o.k, itopk, callers, o.repeat * 2), single_s, -1);
        rec.callers = 1;
      }
    // Larger calls: the queries repeated 10 times in one call (same recall, less overhead per
    // query), and concurrent batch-1 callers (one query per call from `callers` host threads; a
    // replicated index sends each call to the least busy device).
    const host_matrix big = repeat_rows(q, q.rows() * 10);
    const host_matrix big_gt = repeat_rows(gt, gt.rows() * 10);
    for (size_t m : counts) {
      resources r = first;
      r.devices.assign(o.devices.begin(), o.devices.begin() + int64_t(m));
      rec.nq = big.rows();
      for (uint32_t itopk : o.itopk)
        rec.put("replicated-100k", r.devices, 1, itopk,
                measure(r, single, big, big_gt, o.k, itopk, o.repeat), single_s, -1);
      rec.batch = 1;
      rec.nq = std::min<int64_t>(q.rows(), 4000);
      rec.callers = 16;
      rec.put("replicated-batch1", r.devices, 1, 64, batch1_callers(r, single, q, gt, o.k, 16),
              single_s, -1);
      rec.callers = 1;
      rec.batch = 0;
      rec.nq = q.rows();
    }
  }
  // Sharded over G devices, then the same shards on the first device alone.
  std::vector<size_t> shard_counts(o.shards.begin(), o.shards.end());
  if (shard_counts.empty() && o.sharded)
    for (size_t m : counts)
      if (m >= 2) shard_counts.push_back(m);
  for (size_t m : shard_counts) {
    resources r = first;
    r.devices.assign(o.devices.begin(), o.devices.begin() + int64_t(std::min(m, o.devices.size())));
    t = clk::now();
    build_report rep;
    const sharded_index sh = build_sharded(r, ip, base, uint32_t(m), &rep);
    const double build_s = since(t);
    std::printf(
        "sharded build: %zu shards on %zu devices in %.1f s (summed over the shards: kNN "
        "%.1f s, optimize %.1f s)\n",
        m, r.devices.size(), build_s, rep.knn_seconds, rep.optimize_seconds);
    for (uint32_t itopk : o.itopk) {
      // The merge is timed over answers of every shard searched on the first device: only
      // where the shards fit there together (--no-one-gpu: a set too large for one GPU).
      const double merge_s = o.one_gpu ? merge_seconds(first, sh, q, o.k, itopk, o.repeat) : -1;
      rec.put("sharded", r.devices, m, itopk, measure(r, sh, q, gt, o.k, itopk, o.repeat), build_s,
              merge_s);
      if (o.one_gpu)
        rec.put("sharded-one-gpu", {o.devices[0]}, m, itopk,
                measure(first, sh, q, gt, o.k, itopk, o.repeat), build_s, merge_s);
#if CAGRA_BENCH_DEVICE
      rec.put("sharded-device-queries", r.devices, m, itopk,
              measure_device(r, sh, q, gt, o.k, itopk, o.repeat), build_s, -1);
#endif
    }
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("host memory peak (max resident set): %.1f GiB\n", double(ru.ru_maxrss) / (1 << 20));
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
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw error(a + " needs a value");
        return argv[++i];
      };
      if (a == "--devices")
        o.devices = parse_list<int>(value());
      else if (a == "--degree")
        o.degree = uint32_t(std::stoul(value()));
      else if (a == "--itopk")
        o.itopk = parse_list<uint32_t>(value());
      else if (a == "--repeat")
        o.repeat = std::stoi(value());
      else if (a == "--dataset")
        o.dataset = value();
      else if (a == "--json")
        o.json = value();
      else if (a == "--shards")
        o.shards = parse_list<uint32_t>(value());
      else if (a == "--no-single")
        o.single = false;
      else if (a == "--no-one-gpu")
        o.one_gpu = false;
      else if (a == "--no-sharded")
        o.sharded = false;
      else if (a.rfind("--", 0) == 0)
        throw error("unknown option " + a);
      else
        pos.push_back(a);
    }
    if (pos.size() != 3) throw error("usage: multi_gpu BASE QUERIES GT [options]");
    o.base = pos[0];
    o.queries = pos[1];
    o.gt = pos[2];
    if (o.devices.empty())
      for (int d = 0; d < 64 && cuda_available(); ++d) {
        try {
          (void)cuda_device_name(d);
          o.devices.push_back(d);
        } catch (const error&) {
          break;
        }
      }
    if (o.devices.empty()) throw error("no CUDA device");
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
