// The paper's Q-A1 / Q-A2 experiment: what each graph optimization step does to reachability.
//
// Builds the kNN graph of a dataset once (degree d_init), then measures four graphs of the same
// degree d: the kNN graph cut to d, reordering only, reverse edges only, and the full CAGRA
// optimization (rank-based; plus distance-based with --distance), reporting the average 2-hop
// node count, strong and weak components, and the optimization time. Output: a table, and
// JSON lines with --json. With --backend cuda the kNN graph (NN-descent, or brute force below the
// automatic threshold) and every optimization run on the GPU (the GPU optimize equals the CPU's
// bit for bit). --knn-recall N (default 1000) also reports the kNN graph's recall against the
// exact neighbors of N evenly spaced rows (the ">= 0.90 at default settings").
//
//   graph_metrics DATASET [--graph-degree 32] [--intermediate-degree 96] [--limit N]
//                 [--threads T] [--json FILE] [--dataset NAME] [--metric l2|ip|cosine]
//                 [--backend cpu|cuda|auto] [--knn-recall N] [--two-hop-samples N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>

#include "core/bench_hooks.hpp"

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr,
                 "usage: graph_metrics DATASET [--graph-degree D] [--intermediate-degree K] "
                 "[--limit N] [--threads T] [--json FILE] [--dataset NAME]\n");
    return argc < 2 ? 2 : 0;
  }
  std::string path = argv[1], json, name = path;
  uint32_t d = 32, k = 96;
  int64_t limit = 0, recall_rows = 1000, two_hop_samples = 0;
  int threads = 0;
  cagra::metric m = cagra::metric::l2;
  cagra::backend b = cagra::backend::cpu;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string o = argv[i], v = argv[i + 1];
    if (o == "--graph-degree")
      d = uint32_t(std::stoul(v));
    else if (o == "--intermediate-degree")
      k = uint32_t(std::stoul(v));
    else if (o == "--limit")
      limit = std::stoll(v);
    else if (o == "--threads")
      threads = std::stoi(v);
    else if (o == "--json")
      json = v;
    else if (o == "--dataset")
      name = v;
    else if (o == "--metric")
      m = cagra::parse_metric(v);
    else if (o == "--backend")
      b = cagra::parse_backend(v);
    else if (o == "--knn-recall")
      recall_rows = std::stoll(v);
    else if (o == "--two-hop-samples")
      two_hop_samples = std::stoll(v);
    else
      throw cagra::error("unknown option " + o);
  }
  cagra::host_matrix data = cagra::io::read_matrix(path);
  if (limit > 0 && limit < data.rows()) {
    cagra::host_matrix cut(data.type(), limit, data.cols());
    std::memcpy(cut.data(), data.data(), cut.size_bytes());
    data = std::move(cut);
  }
  cagra::resources res;
  res.num_threads = threads;
  res.target = b;
  cagra::index_params ip;
  ip.graph_degree = d;
  ip.intermediate_graph_degree = k;
  ip.metric = m;
  double t0 = now();
  cagra::knn_graph knn = cagra::build_knn_graph(res, ip, data);
  double knn_s = now() - t0;
  const bool gpu =
      b == cagra::backend::cuda || (b == cagra::backend::automatic && cagra::cuda_available());
  std::printf("dataset %s: %lld x %lld, metric %s, kNN degree %u in %.2f s (%s), graph degree %u\n",
              name.c_str(), (long long)data.rows(), (long long)data.cols(), cagra::to_string(m), k,
              knn_s, gpu ? "GPU" : "CPU", d);
  double knn_recall = -1;
  if (recall_rows > 0) {
    // Exact neighbors of evenly spaced rows (k + 1: the row itself comes back first, or tied).
    const int64_t n = knn.rows, r = std::min(recall_rows, n);
    const size_t row_bytes = data.size_bytes() / n;
    cagra::host_matrix sample(data.type(), r, data.cols());
    std::vector<int64_t> rows(r);
    for (int64_t i = 0; i < r; ++i) {
      rows[i] = i * n / r;
      std::memcpy(static_cast<uint8_t*>(sample.data()) + i * row_bytes, data.row_bytes(rows[i]),
                  row_bytes);
    }
    cagra::knn_graph exact = cagra::brute_force_knn(res, m, data, sample, k + 1);
    int64_t hits = 0;
    for (int64_t i = 0; i < r; ++i) {
      const uint32_t* e = exact.ids.data() + i * (k + 1);
      std::vector<uint32_t> truth;
      for (uint32_t j = 0; j <= k && truth.size() < k; ++j)
        if (e[j] != uint32_t(rows[i])) truth.push_back(e[j]);
      const uint32_t* f = knn.ids.data() + rows[i] * k;
      for (uint32_t j = 0; j < k; ++j)
        hits += std::find(truth.begin(), truth.end(), f[j]) != truth.end();
    }
    knn_recall = double(hits) / (double(r) * k);
    std::printf("kNN graph recall@%u vs exact on %lld sampled rows: %.4f\n", k, (long long)r,
                knn_recall);
  }
  std::printf("\n");
  std::printf("%-22s %12s %10s %8s %10s\n", "graph", "avg 2-hop", "strong CC", "weak CC",
              "optimize s");
  std::ofstream out;
  if (!json.empty()) out.open(json, std::ios::app);
  struct variant {
    const char* label;
    bool reorder_step, reverse_step;
    cagra::reorder_kind kind;
  };
  const variant variants[] = {
      {"kNN (cut to d)", false, false, cagra::reorder_kind::rank},
      {"reorder only", true, false, cagra::reorder_kind::rank},
      {"reverse only", false, true, cagra::reorder_kind::rank},
      {"CAGRA (rank)", true, true, cagra::reorder_kind::rank},
      {"CAGRA (distance)", true, true, cagra::reorder_kind::distance},
  };
  for (const variant& v : variants) {
    double t = now();
    cagra::resources ores;
    ores.target = gpu ? cagra::backend::cuda : cagra::backend::cpu;
    ores.num_threads = threads;
    const std::vector<uint32_t> g =
        cagra::bench_hooks::optimize_steps(ores, knn, d, v.kind, v.reorder_step, v.reverse_step);
    double opt_s = now() - t;
    cagra::graph_stats st = cagra::analyze(res, {g.data(), knn.rows, int64_t(d)}, two_hop_samples);
    std::printf("%-22s %12.1f %10lld %8lld %10.2f\n", v.label, st.avg_two_hop,
                (long long)st.strong_components, (long long)st.weak_components, opt_s);
    if (out)
      out << "{\"dataset\":\"" << name << "\",\"n\":" << knn.rows << ",\"graph\":\"" << v.label
          << "\",\"graph_degree\":" << d << ",\"intermediate_degree\":" << k
          << ",\"avg_two_hop\":" << st.avg_two_hop
          << ",\"strong_components\":" << st.strong_components
          << ",\"weak_components\":" << st.weak_components << ",\"optimize_s\":" << opt_s
          << ",\"knn_s\":" << knn_s << ",\"backend\":\"" << (gpu ? "cuda" : "cpu")
          << "\",\"metric\":\"" << cagra::to_string(m) << "\""
          << (knn_recall >= 0 ? ",\"knn_recall\":" + std::to_string(knn_recall) : std::string())
          << "}\n";
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
