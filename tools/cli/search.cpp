// `cagra search`: loads an index, answers every query of a file in one batch and writes the
// neighbors (ids, then distances) as .ibin, the big-ann-benchmarks format that `cagra eval` and
// other tools read, or as .npy of int64 ids; an index with labels returns its labels. Inputs and
// the output path are checked before the index is loaded, and the search is timed on its own (no
// file I/O) so the printed QPS means what it says.
#include <algorithm>

#include <cagra/plan.hpp>

#include "cli.hpp"

namespace cagra::cli {

namespace {

int run_search(const args& a) {
  const std::string index_path = a.positional(0);
  const std::string queries_path = a.positional(1);
  const std::string out = a.str("--output");
  const auto k = static_cast<uint32_t>(a.uint("-k", 10, 1));
  // The library's defaults; an itopk below k is raised to k by the library (cagra::plan_search).
  search_params sp;
  sp.itopk_size = static_cast<uint32_t>(a.uint("--itopk", sp.itopk_size, 1));
  sp.search_width = static_cast<uint32_t>(a.uint("--search-width", sp.search_width, 1));
  sp.max_iterations = static_cast<uint32_t>(a.uint("--max-iterations", sp.max_iterations));
  sp.seed = a.uint("--seed", sp.seed, 0, UINT64_MAX);
  sp.filter = filter_algo_option(a);
  sp.traversal = traversal_option(a);
  sp.rerank = static_cast<uint32_t>(a.uint("--rerank", sp.rerank));
  sp.stored_rows = stored_rows_option(a);
  const std::string filter_path = a.str("--filter", "");
  resources res = make_resources(a);

  check_input(index_path);
  check_input(queries_path);
  if (!filter_path.empty()) check_input(filter_path);
  const bool to_npy = has_extension(out, ".npy");
  if (!has_extension(out, ".ibin") && !to_npy) {
    throw usage_error("output '" + out +
                      "' must end in .ibin (ids, then distances) or .npy (int64 labels)");
  }
  std::vector<std::string> inputs = input_files(index_path);
  inputs.push_back(queries_path);
  check_output(out, inputs, a.has("--force"));

  const any_index x = load_any(index_path);
  const index& idx = x.single;  // labels and deleted rows: a single index only
  host_matrix queries = read_vectors(queries_path);
  check_queries(x, queries, queries_path);
  if (static_cast<int64_t>(k) > x.size()) {
    throw cagra::error("-k " + std::to_string(k) + " is larger than the index (" +
                       std::to_string(x.size()) + " vectors)");
  }

  // An index with labels returns labels: the .ibin format stores ids as int32 (-1 = no
  // neighbour), so every label must fit there; checked before the search, not after it.
  if (idx.has_labels() && !to_npy) {
    for (int64_t label : idx.labels()) {
      if (label < 0 || label > INT32_MAX) {
        throw cagra::error("index '" + index_path + "' holds label " + std::to_string(label) +
                           ", which .ibin (int32 ids, -1 = no neighbour) cannot store: write "
                           "the neighbors as .npy (int64 labels)");
      }
    }
  }
  const int64_t nq = queries.rows();
  filter_file filter;
  if (!filter_path.empty()) filter = read_filter(filter_path, x.size(), nq);
  // What the search will do (all queries in one call), every automatic value resolved; for a
  // sharded index, the search of shard 0 (each shard runs its own).
  const search_plan plan = point_plan(res, sp, x, k, nq, filter.view);
  if (a.has("--explain")) {
    if (x.is_sharded)
      std::printf("plan: %zu shards; each (shard 0): %s\n", x.shard_count(),
                  to_string(plan).c_str());
    else
      std::printf("plan: %s\n", to_string(plan).c_str());
  }
  std::fflush(stdout);
  // Labels (row numbers for an index without labels, -1 for an empty slot) for .npy and for an
  // index with labels; ids for the rest, as before labels existed.
  const bool want_labels = to_npy || idx.has_labels();
  std::vector<uint32_t> ids(want_labels ? 0 : static_cast<size_t>(nq) * k);
  std::vector<int64_t> labels(want_labels ? static_cast<size_t>(nq) * k : 0);
  std::vector<float> dist(static_cast<size_t>(nq) * k);
  const double t0 = now_seconds();
  if (x.is_sharded) {  // global row numbers, never labels
    std::vector<uint32_t> rows(static_cast<size_t>(nq) * k);
    x.search(res, sp, queries.view(), k, {rows.data(), nq, k}, {dist.data(), nq, k}, filter.view);
    if (want_labels) {
      for (size_t i = 0; i < rows.size(); ++i)
        labels[i] = rows[i] == kInvalidId ? -1 : int64_t{rows[i]};
    } else {
      ids = std::move(rows);
    }
  } else if (want_labels) {
    search(res, sp, idx, queries.view(), k, matrix_view<int64_t>{labels.data(), nq, k},
           {dist.data(), nq, k}, filter.view);
  } else {
    search(res, sp, idx, queries.view(), k, {ids.data(), nq, k}, {dist.data(), nq, k}, filter.view);
  }
  const double seconds = now_seconds() - t0;

  std::printf("queries   %lld x %u %s\n", static_cast<long long>(nq), x.dim(),
              to_string(queries.type()));
  std::printf("search    k %u, itopk %u, search width %u, backend %s, threads %d", k, plan.itopk,
              plan.search_width, to_string(plan.target), effective_threads(res.num_threads));
  if (plan.traversal == traversal_type::int8)
    std::printf(", traversal int8 (rerank %u)", plan.rerank);
  if (!res.devices.empty()) std::printf(", devices %s", devices_text(res.devices).c_str());
  if (x.is_sharded) std::printf(", %zu shards merged", x.shard_count());
  std::printf("\n");
  if (!filter_path.empty()) {
    const double rows = double(x.size()) * double(filter.view.queries ? nq : 1);
    std::printf("filter    %s: %s, %.4g%% of rows allowed, path %s\n", filter_path.c_str(),
                filter.view.queries ? "one bitset per query" : "one bitset for all queries",
                100.0 * double(filter.allowed) / rows, to_string(plan.filter_path));
  }
  std::printf("time      %.4f s, %.0f QPS\n", seconds, seconds > 0 ? nq / seconds : 0.0);
  std::fflush(stdout);

  if (to_npy) {
    write_labels_npy(out, labels.data(), nq, k);
    std::printf("saved     %s (int64 %s, no distances)\n", out.c_str(),
                idx.has_labels() ? "labels" : "row numbers");
    return 0;
  }
  if (want_labels) {  // labels checked above: each in [0, 2^31) or -1 (stored as kInvalidId)
    ids.resize(labels.size());
    for (size_t i = 0; i < labels.size(); ++i)
      ids[i] = labels[i] < 0 ? kInvalidId : static_cast<uint32_t>(labels[i]);
  }
  io::write_neighbors(out, matrix_view<const uint32_t>{ids.data(), nq, k},
                      matrix_view<const float>{dist.data(), nq, k});
  std::printf("saved     %s%s\n", out.c_str(), idx.has_labels() ? " (labels)" : "");
  return 0;
}

}  // namespace

const command_spec& search_command() {
  // The defaults shown are the library's (search_params{}), so the help cannot drift from them.
  static const std::string itopk_help = "internal top-M list length (default " +
                                        std::to_string(search_params{}.itopk_size) +
                                        "); raised to K when smaller, as hnswlib raises ef";
  static const command_spec spec{
      "search",
      "search an index for the k nearest neighbors of each query",
      "INDEX QUERIES -k K -o NEIGHBORS [options]",
      "Searches INDEX (written by 'cagra build') for the K approximate nearest neighbors of every\n"
      "row of QUERIES, all queries in one batch, and writes NEIGHBORS as .ibin: uint32 rows,\n"
      "uint32 K, the ids, then the distances; or as .npy: int64 ids, no distances. Prints the\n"
      "query count, wall time and QPS. The ids are the index's labels when it has labels\n"
      "(.ibin: every label must be in [0, 2^31)), else row numbers. Deleted rows are never\n"
      "returned. With --filter (over row numbers, not labels), only allowed rows are returned;\n"
      "slots beyond them hold id 4294967295 in .ibin, -1 in .npy, and distance inf.\n"
      "INDEX may be a sharded index (the manifest 'cagra build --shards' wrote): every shard is\n"
      "searched and the lists merged; the ids are global row numbers.",
      {
          {"-k", nullptr, "K", "neighbors per query (required)", true},
          {"--output", "-o", "NEIGHBORS",
           "where to write the neighbors: .ibin, or .npy of int64 ids (required)", true},
          {"--itopk", nullptr, "M", itopk_help.c_str()},
          {"--search-width", nullptr, "P", "parents expanded per iteration (default 1)"},
          {"--max-iterations", nullptr, "I", "iteration cap (default 0 = auto)"},
          {"--seed", nullptr, "S", "seed of the random initial nodes (default 0)"},
          {"--traversal", nullptr, "T",
           "exact (default) or int8: walk the graph on an int8 copy of an f32/f16 index's rows, "
           "then re-rank the best candidates by exact distances (u8/i8 indexes: exact only)"},
          {"--rerank", nullptr, "N",
           "int8 traversal: candidates re-ranked per query, in [K, itopk] (default 0 = auto: "
           "min(itopk, max(32, 4K)))"},
          {"--stored-rows", nullptr, "WHERE",
           "int8 traversal on the GPU: where the re-ranked rows are read, auto (default: on the "
           "GPU when they fit), device or host (left in host memory, read across PCIe)"},
          {"--filter", nullptr, "FILE",
           "return only allowed rows: a mask (.npy bool/uint8 or .u8bin, one byte per index row; "
           "one row, or one per query) or a list of allowed ids (.ibin, .npy int32/uint32)"},
          {"--filter-algo", nullptr, "A",
           "filtered search path: auto (default), graph or exact (docs/filter.md)"},
          {"--backend", nullptr, "B", "auto (default: cuda when available), cpu or cuda"},
          {"--threads", nullptr, "T", "CPU threads (default: all; at most 4 per hardware thread)"},
          {"--devices", nullptr, "LIST",
           "CUDA devices, comma-separated (0,1,...): a single index is replicated over them, a "
           "sharded index puts shard s on device s mod count (docs/multi_gpu.md)"},
          {"--force", nullptr, nullptr, "replace NEIGHBORS if it exists"},
          {"--explain", nullptr, nullptr,
           "print the search plan (every automatic value resolved) before searching"},
      },
      {"INDEX", "QUERIES"},
      run_search};
  return spec;
}

}  // namespace cagra::cli
