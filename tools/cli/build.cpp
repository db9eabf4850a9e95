// `cagra build`: reads a vector file, builds a CAGRA index (kNN graph, then the rank-based
// optimization of paper §III) and saves it. Every option is checked and the output path is
// validated before the dataset is read, so a typo fails in milliseconds instead of after a long
// build; the build shows its progress on stderr because it can take minutes on large sets.
#include <algorithm>
#include <filesystem>
#include <vector>

#include <cagra/multi_gpu.hpp>

#include <cagra/plan.hpp>

#include "cli.hpp"

namespace cagra::cli {

namespace {

namespace fs = std::filesystem;

knn_algo knn_option(const args& a) {
  const std::string s = a.str("--knn", "auto");
  if (s == "auto") return knn_algo::automatic;
  if (s == "nn_descent" || s == "nn-descent") return knn_algo::nn_descent;
  if (s == "brute_force" || s == "brute-force") return knn_algo::brute_force;
  throw usage_error("--knn: expected auto, nn_descent or brute_force, got '" + s + "'");
}

reorder_kind reorder_option(const args& a) {
  const std::string s = a.str("--reorder", "rank");
  if (s == "rank") return reorder_kind::rank;
  if (s == "distance") return reorder_kind::distance;
  throw usage_error("--reorder: expected rank or distance, got '" + s + "'");
}

storage_type storage_option(const args& a) {
  const std::string s = a.str("--storage", "input");
  if (s == "input" || s == "same") return storage_type::same_as_input;
  if (s == "f32") return storage_type::f32;
  if (s == "f16") return storage_type::f16;
  throw usage_error("--storage: expected input, f32 or f16, got '" + s + "'");
}

int run_build(const args& a) {
  const std::string dataset_path = a.positional(0);
  const std::string out = a.str("--output");
  index_params ip;
  ip.metric = metric_option(a, metric::l2);
  ip.graph_degree = static_cast<uint32_t>(a.uint("--graph-degree", ip.graph_degree, 1));
  // 0 = the library's automatic d_init (2d, at most rows - 1; cagra::plan_build).
  ip.intermediate_graph_degree =
      static_cast<uint32_t>(a.uint("--intermediate-degree", ip.intermediate_graph_degree));
  ip.knn.algo = knn_option(a);
  ip.knn.max_iterations =
      static_cast<uint32_t>(a.uint("--knn-iterations", ip.knn.max_iterations, 1));
  ip.reorder = reorder_option(a);
  ip.storage = storage_option(a);
  ip.seed = a.uint("--seed", 0, 0, UINT64_MAX);
  ip.max_device_memory = a.bytes("--max-device-memory", 0);
  ip.knn.partition_rows = static_cast<int64_t>(a.uint("--partition-rows", 0, 0, kMaxRows));
  const int64_t limit = static_cast<int64_t>(a.uint("--limit", 0, 1, kMaxRows));
  resources res = make_resources(a);
  // Sharded: --shards N (N >= 1), or a --devices list of several devices (one shard per device,
  // also with --shards 0). Otherwise one index (on devices[0] when --devices names one).
  const bool shards_given = a.has("--shards");
  const auto shards_opt = static_cast<uint32_t>(a.uint("--shards", 0, 0, 4096));
  const bool sharded = shards_given || res.devices.size() > 1;
  const size_t shards = shards_opt ? shards_opt : std::max<size_t>(1, res.devices.size());
  const std::string checkpoint = a.str("--checkpoint", "");
  if (a.has("--checkpoint") && checkpoint.empty())
    throw usage_error("--checkpoint: expected a folder name");
  if (!checkpoint.empty() && fs::exists(checkpoint) && !fs::is_directory(checkpoint))
    throw usage_error("--checkpoint: '" + checkpoint + "' exists and is not a folder");
  // One index: the kNN stage's partitions are the checkpoints (docs/large_builds.md).
  if (!sharded) ip.knn.checkpoint_dir = checkpoint;

  check_input(dataset_path);
  if (sharded)
    check_sharded_output(out, shards, {dataset_path}, a.has("--force"));
  else
    check_output(out, {dataset_path}, a.has("--force"));

  const double t0 = now_seconds();
  host_matrix data = read_vectors(dataset_path);
  dataset_view view = data.view();
  if (limit > 0 && limit < view.rows) view.rows = limit;
  std::printf("dataset   %s: %lld x %lld %s%s (read in %.2f s)\n", dataset_path.c_str(),
              static_cast<long long>(view.rows), static_cast<long long>(view.cols),
              to_string(view.type), view.rows < data.rows() ? " (--limit)" : "",
              now_seconds() - t0);
  if (sharded && static_cast<int64_t>(shards) > view.rows) {
    throw cagra::error(std::to_string(shards) + " shards for " + std::to_string(view.rows) +
                       " rows: a shard needs at least one row (use fewer shards)");
  }
  // What the build will do, every automatic value resolved (the library's rules, not ours). A
  // sharded build runs the plan of each shard: that of the largest is printed (the shards differ
  // by at most one row).
  const int64_t plan_rows =
      sharded ? (view.rows + int64_t(shards) - 1) / int64_t(shards) : view.rows;
  const build_plan plan = plan_build(res, ip, plan_rows, view.cols, view.type);
  if (a.has("--explain")) {
    if (sharded)
      std::printf("plan: %zu shards of up to %lld rows; each: %s\n", shards,
                  static_cast<long long>(plan_rows), to_string(plan).c_str());
    else
      std::printf("plan: %s\n", to_string(plan).c_str());
  }
  // A build fitted into less memory than the one-pass build says how (before the work).
  const bool lean = plan.partition_rows > 0 ||
                    (plan.target == backend::cuda && plan.optimize != optimize_path::device);
  if (lean && !a.has("--explain"))
    std::printf("plan      kNN graph over partitions of at most %lld rows, optimize on %s%s\n",
                static_cast<long long>(plan.partition_rows ? plan.partition_rows : plan_rows),
                to_string(plan.optimize),
                plan.target == backend::cuda
                    ? (", device memory " + std::to_string(plan.device_bytes >> 20) + " MiB of " +
                       std::to_string(plan.device_budget >> 20) + " MiB, host memory about " +
                       std::to_string(plan.host_bytes >> 20) + " MiB")
                          .c_str()
                    : "");
  std::fflush(stdout);

  progress_display progress("build");
  res.progress = progress.callback();
  build_report report;
  index idx;
  sharded_index sh;
  std::vector<shard_event> events;
  if (sharded) {
    shard_build_options options;
    options.shards = static_cast<uint32_t>(shards_opt);
    options.checkpoint_dir = checkpoint;
    options.on_shard = [&](const shard_event& e) { events.push_back(e); };
    sh = build_sharded(res, ip, view, options, &report);
  } else {
    // The rows read become the index's vectors when they need no conversion (no second copy
    // of the data set in host memory).
    data.truncate_rows(view.rows);
    idx = build(res, ip, std::move(data), &report);
  }
  progress.finish();

  std::printf("build     backend %s, knn %s", to_string(report.backend_used),
              to_string(report.knn_used));
  if (report.knn_used == knn_algo::nn_descent) {
    std::printf(" (%u iterations)", report.knn_iterations);
  }
  std::printf(", degree %u (intermediate %u), metric %s, reorder %s\n",
              sharded ? sh.graph_degree() : idx.graph_degree(), plan.intermediate_graph_degree,
              to_string(sharded ? sh.metric() : idx.metric()), to_string(ip.reorder));
  if (report.knn_partitions > 1)
    std::printf(
        "partition %lld kNN graphs merged%s\n", static_cast<long long>(report.knn_partitions),
        report.knn_partitions_overlapped ? " (each built while the one before merged)" : "");
  if (!sharded && !checkpoint.empty())
    std::printf("checkpoint %s: %lld kNN partitions resumed, %lld built\n", checkpoint.c_str(),
                static_cast<long long>(report.knn_partitions_resumed),
                static_cast<long long>(report.knn_partitions - report.knn_partitions_resumed));
  std::printf("time      knn %.3f s, optimize %.3f s, total %.3f s%s\n", report.knn_seconds,
              report.optimize_seconds, report.total_seconds,
              sharded ? " (knn and optimize summed over the shards)" : "");
  if (sharded) {
    const std::vector<int> devices = devices_of(res);
    const bool gpu = report.backend_used == backend::cuda;
    std::printf("sharded   %zu shards over %lld rows%s\n", sh.shard_count(),
                static_cast<long long>(sh.size()),
                gpu ? (", devices " + devices_text(devices)).c_str() : "");
    if (!checkpoint.empty())
      std::printf("checkpoint %s: %u shards resumed, %u built\n", checkpoint.c_str(),
                  report.shards_resumed, report.shards_built);
    std::vector<const shard_event*> event_of(sh.shard_count(), nullptr);
    for (const shard_event& e : events) event_of[e.shard] = &e;
    for (size_t s = 0; s < sh.shard_count(); ++s) {
      const int64_t first = sh.shard_offset(s), rows = sh.shard(s).size();
      std::printf("shard %-3zu rows %lld .. %lld (%lld rows)", s, static_cast<long long>(first),
                  static_cast<long long>(first + rows - 1), static_cast<long long>(rows));
      if (gpu) std::printf(", device %d", devices[s % devices.size()]);
      const shard_event* e = event_of[s];
      if (e && e->resumed)
        std::printf(", resumed from %s", checkpoint.c_str());
      else if (!checkpoint.empty())
        std::printf(", built%s%s%s", e && !e->reason.empty() ? " (checkpoint not used: " : "",
                    e ? e->reason.c_str() : "", e && !e->reason.empty() ? ")" : "");
      std::printf("\n");
    }
  }
  std::fflush(stdout);

  if (sharded)
    save_sharded(sh, out);
  else
    save_index(idx, out);
  return 0;
}

}  // namespace

const command_spec& build_command() {
  static const command_spec spec{
      "build",
      "build an index from a vector file",
      "DATASET -o INDEX [options]",
      "Reads DATASET (.fbin/.u8bin/.i8bin, .fvecs/.bvecs, .npy, IDX(.gz), .hdf5[:name]), builds a\n"
      "CAGRA graph (kNN graph by NN-descent or brute force, then rank-based pruning, reverse\n"
      "edges and merge) and saves the index to INDEX. Progress goes to stderr, times to stdout.\n"
      "With --shards or several --devices it builds a sharded index: one graph per contiguous\n"
      "row range, saved as the manifest INDEX and the files INDEX.shard-S-of-N; with\n"
      "--checkpoint DIR each finished shard (one index: each kNN partition) is kept in DIR, so\n"
      "that the same command resumes an interrupted build.",
      {
          {"--output", "-o", "INDEX", "where to write the index (required)", true},
          {"--graph-degree", nullptr, "D", "out-degree of the final graph (default 64)"},
          {"--intermediate-degree", nullptr, "K",
           "degree of the kNN graph, >= D (default 0 = auto: 2*D, at most rows - 1)"},
          {"--metric", nullptr, "M", "l2 (default), ip or cosine"},
          {"--backend", nullptr, "B", "auto (default: cuda when available), cpu or cuda"},
          {"--knn", nullptr, "A", "kNN graph algorithm: auto (default), nn_descent, brute_force"},
          {"--knn-iterations", nullptr, "I", "NN-descent iteration cap (default 20)"},
          {"--reorder", nullptr, "R", "edge ordering for pruning: rank (default) or distance"},
          {"--storage", nullptr, "S", "vector storage: input (default), f32 or f16"},
          {"--seed", nullptr, "S", "seed of all randomness of the build (default 0)"},
          {"--max-device-memory", nullptr, "SIZE",
           "device memory the GPU build may use, in bytes or with KiB/MiB/GiB/TiB (e.g. 8GiB): "
           "a set that does not fit is built in kNN partitions, with the graph optimization "
           "partly or wholly on the host; a build that cannot fit even so is refused before it "
           "starts (default 0: the device's free memory; --explain shows the plan)"},
          {"--partition-rows", nullptr, "N",
           "build the kNN graph over overlapping partitions of at most N rows, one pass each "
           "(k-means clusters, each row in its two nearest; docs/large_builds.md); default 0: "
           "one pass, or what fits --max-device-memory"},
          {"--threads", nullptr, "T", "CPU threads (default: all; at most 4 per hardware thread)"},
          {"--shards", nullptr, "N",
           "build a sharded index of N shards (contiguous row ranges, one graph each), saved as "
           "INDEX plus INDEX.shard-S-of-N; 0 = one per --devices entry (docs/multi_gpu.md)"},
          {"--devices", nullptr, "LIST",
           "CUDA devices, comma-separated (0,1,...): several build a sharded index, one shard "
           "per device unless --shards says otherwise (shard s on device s mod count)"},
          {"--checkpoint", nullptr, "DIR",
           "save each finished shard (sharded builds) or kNN partition (one index) into DIR "
           "with a fingerprint of its inputs, and load those DIR already holds for the same "
           "inputs instead of building them again (rerun the same command to resume an "
           "interrupted build; docs/multi_gpu.md, docs/large_builds.md)"},
          {"--limit", nullptr, "N", "use only the first N rows of DATASET"},
          {"--force", nullptr, nullptr, "replace INDEX if it exists"},
          {"--explain", nullptr, nullptr,
           "print the build plan (every automatic value resolved) before building"},
      },
      {"DATASET"},
      run_build};
  return spec;
}

}  // namespace cagra::cli
