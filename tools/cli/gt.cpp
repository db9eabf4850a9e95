// `cagra gt`: exact ground truth by brute force, written as .ibin with distances, so that data
// sets that ship without neighbors (Fashion-MNIST in the demo, a user's own vectors) can be
// evaluated with `cagra eval` / `cagra bench`. It costs nq * n distances, so it is meant for
// query sets of thousands, not millions. With --backend cuda (or auto on a large problem with a
// GPU visible) it runs on the GPU through cuBLAS; the printed QPS is the exact search's, to quote
// beside CAGRA's.
#include <filesystem>
#include <fstream>

#include "bench_json.hpp"
#include "cli.hpp"

namespace cagra::cli {

namespace {

/** The backend brute_force_knn picks (the rule of src/core/dispatch.cpp: cuda when asked for, or
 *  for auto when a GPU is visible, k <= 2048 and nq * n >= 1e8; the CPU otherwise). */
const char* gt_backend(const resources& res, int64_t nq, int64_t n, uint32_t k) {
  if (res.target == backend::cuda) return "cuda (cuBLAS)";
  if (res.target == backend::automatic && k <= 2048 && double(nq) * double(n) >= 1e8 &&
      cuda_available())
    return "cuda (cuBLAS)";
  return "cpu";
}

int run_gt(const args& a) {
  const std::string base_path = a.positional(0);
  const std::string queries_path = a.positional(1);
  const std::string out = a.str("--output");
  const auto k = static_cast<uint32_t>(a.uint("-k", 100, 1));
  const metric m = metric_option(a, metric::l2);
  resources res = make_resources(a);

  check_input(base_path);
  check_input(queries_path);
  if (!has_extension(out, ".ibin")) {
    throw usage_error("output '" + out + "' must end in .ibin (ids, then distances)");
  }
  check_output(out, {base_path, queries_path}, a.has("--force"));
  const std::string json_path = a.str("--json");
  if (!json_path.empty())
    check_output(json_path, {base_path, queries_path, out}, true);  // appended to

  host_matrix base = read_vectors(base_path);
  host_matrix queries = read_vectors(queries_path);
  if (base.cols() != queries.cols()) {
    throw cagra::error("queries '" + queries_path + "' have dim " + std::to_string(queries.cols()) +
                       " but base '" + base_path + "' has dim " + std::to_string(base.cols()));
  }
  if (static_cast<int64_t>(k) > base.rows()) {
    throw cagra::error("-k " + std::to_string(k) + " is larger than the base set (" +
                       std::to_string(base.rows()) + " vectors)");
  }

  progress_display progress("gt");
  res.progress = progress.callback();
  const double t0 = now_seconds();
  knn_graph gt = brute_force_knn(res, m, base, queries, k);
  const double seconds = now_seconds() - t0;
  progress.finish();

  io::write_neighbors(
      out, gt.view(),
      matrix_view<const float>{gt.distances.data(), gt.rows, static_cast<int64_t>(gt.k)});
  std::printf("ground truth  %lld queries x %u neighbors over %lld vectors, metric %s\n",
              static_cast<long long>(gt.rows), gt.k, static_cast<long long>(base.rows()),
              to_string(m));
  std::printf("backend       %s\n", gt_backend(res, queries.rows(), base.rows(), k));
  std::printf("time          %.3f s\n", seconds);
  std::printf(
      "qps           %.1f  (exact search, queries / second, conversion and transfers included)\n",
      seconds > 0 ? double(gt.rows) / seconds : 0.0);
  std::printf("saved         %s\n", out.c_str());
  if (!json_path.empty()) {
    // The exact search as one more system of the benchmark (recall 1 by definition), beside
    // CAGRA's points: bench/plot.py draws it as a marker.
    const bool gpu = std::string(gt_backend(res, queries.rows(), base.rows(), k)) != "cpu";
    bench_record rec;
    rec.run_id = make_run_id();
    rec.system = gpu ? "cuda-brute-force" : "cpu-brute-force";
    rec.threads = effective_threads(res.num_threads);
    rec.device = gpu ? cuda_device_name(res.device)
                     : cpu_model() + " (" + std::to_string(rec.threads) + " threads)";
    rec.commit = commit_id();
    rec.dataset = a.has("--dataset") ? a.str("--dataset")
                                     : std::filesystem::path(queries_path).filename().string();
    rec.metric = to_string(m);
    rec.n = base.rows();
    rec.dim = base.cols();
    rec.nq = gt.rows;
    rec.batch = 0;
    rec.k = k;
    rec.storage = to_string(base.type());
    rec.recall = 1.0;
    rec.qps = seconds > 0 ? double(gt.rows) / seconds : 0.0;
    rec.latency_ms = seconds * 1e3;
    std::ofstream json(json_path, std::ios::app);
    if (!json) throw cagra::error("cannot open '" + json_path + "' for appending");
    json << to_json(rec) << "\n";
  }
  return 0;
}

}  // namespace

const command_spec& gt_command() {
  static const command_spec spec{
      "gt",
      "exact ground truth by brute force",
      "BASE QUERIES -k K -o GT [options]",
      "Computes the exact K nearest neighbors in BASE of every row of QUERIES and writes them as\n"
      ".ibin with distances (ids, then distances), the format 'cagra eval' and 'cagra bench' read.",
      {
          {"-k", nullptr, "K", "neighbors per query (required)", true},
          {"--output", "-o", "GT", "where to write the ground truth, .ibin (required)", true},
          {"--metric", nullptr, "M", "l2 (default), ip or cosine"},
          {"--backend", nullptr, "B", "auto (default: cuda when available), cpu or cuda"},
          {"--threads", nullptr, "T", "CPU threads (default: all; at most 4 per hardware thread)"},
          {"--force", nullptr, nullptr, "replace GT if it exists"},
          {"--json", nullptr, "FILE", "append the exact search's QPS as a bench JSON line"},
          {"--dataset", nullptr, "NAME", "dataset name in the JSON (default: QUERIES file name)"},
      },
      {"BASE", "QUERIES"},
      run_gt};
  return spec;
}

}  // namespace cagra::cli
