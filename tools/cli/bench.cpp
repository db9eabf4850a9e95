// `cagra bench`: the recall/QPS trade-off of an index, measured by sweeping itopk x search_width
// over one query set with known ground truth. Each point runs one untimed call (the first call of
// a process uploads the index, a new plan may grow workspaces: it cost the first point of a
// batch-1 sweep 6x its latency) and, on a GPU, untimed passes for 0.2 s, then takes the best of
// --repeat timed passes, prints a table
// row and appends one JSON line, flushed at once so an interrupted sweep keeps the points it
// finished. --batch 1 runs one query per call on one thread: the online (latency) case of the
// paper's Fig. 12, as opposed to the default throughput case of one call with every query.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <utility>

#include <cagra/plan.hpp>

#include "bench_json.hpp"
#include "cli.hpp"
// --stats counts the CPU search's work: internal stages of the library (not public API).
#include "core/bench_hooks.hpp"

namespace cagra::cli {

namespace {

const std::vector<uint32_t> kDefaultItopk = {16, 32, 64, 96, 128, 192, 256, 384, 512};

// Untimed search time on a GPU before each point's timed passes.
constexpr double kWarmupSeconds = 0.2;

struct pass_result {
  double seconds = 0;
  int64_t calls = 0;
};

// One timed pass over all queries, `batch` rows per search call (0 = all in one call).
pass_result run_pass(const resources& res, const search_params& sp, const any_index& idx,
                     const host_matrix& queries, uint32_t k, int64_t batch,
                     std::vector<uint32_t>& ids, std::vector<float>& dist,
                     const row_filter& filter = {}) {
  const int64_t nq = queries.rows();
  const int64_t step = batch > 0 ? batch : nq;
  const auto* base = static_cast<const uint8_t*>(queries.data());
  const size_t row_bytes = queries.view().row_bytes();
  pass_result r;
  const double t0 = now_seconds();
  for (int64_t i = 0; i < nq; i += step) {
    const int64_t rows = std::min(step, nq - i);
    dataset_view q(base + static_cast<size_t>(i) * row_bytes, queries.type(), rows, queries.cols());
    idx.search(res, sp, q, k, {ids.data() + i * k, rows, k}, {dist.data() + i * k, rows, k},
               filter);
    ++r.calls;
  }
  r.seconds = now_seconds() - t0;
  return r;
}

int run_bench(const args& a) {
  const std::string index_path = a.positional(0);
  const std::string queries_path = a.positional(1);
  const std::string truth_path = a.positional(2);
  const auto k = static_cast<uint32_t>(a.uint("-k", 10, 1));
  const std::vector<uint32_t> itopks = a.uint_list("--itopk", kDefaultItopk, 1, UINT32_MAX);
  const std::vector<uint32_t> widths = a.uint_list("--search-width", {1}, 1, UINT32_MAX);
  const auto max_iterations = static_cast<uint32_t>(a.uint("--max-iterations", 0));
  const std::vector<uint32_t> teams = a.uint_list("--team-size", {0}, 0, 32);
  const std::vector<uint32_t> samplings = a.uint_list("--random-samplings", {0}, 0, 64);
  const std::vector<traversal_type> traversals = traversal_list(a);
  const auto rerank = static_cast<uint32_t>(a.uint("--rerank", 0));
  const rows_location stored_rows = stored_rows_option(a);
  const bool any_int8 =
      std::find(traversals.begin(), traversals.end(), traversal_type::int8) != traversals.end();
  // The sweep's walks: every --random-samplings value with every --traversal, in that order.
  std::vector<std::pair<uint32_t, traversal_type>> walks;
  for (uint32_t sampling : samplings)
    for (traversal_type traversal : traversals) walks.emplace_back(sampling, traversal);
  for (uint32_t t : teams)
    if (t != 0 && t != 2 && t != 4 && t != 8 && t != 16 && t != 32)
      throw usage_error("--team-size: expected 0 (auto), 2, 4, 8, 16 or 32, got " +
                        std::to_string(t));
  const std::string algo_name = a.str("--algo", "auto");
  search_algo algo = search_algo::automatic;
  if (algo_name == "single")
    algo = search_algo::single_cta;
  else if (algo_name == "multi")
    algo = search_algo::multi_cta;
  else if (algo_name != "auto")
    throw usage_error("--algo: expected auto, single or multi, got '" + algo_name + "'");
  const auto hash_bits = static_cast<uint32_t>(a.uint("--hash-bits", 0, 0, 24));
  const auto hash_reset = static_cast<uint32_t>(a.uint("--hash-reset-interval", 0, 0, 1u << 20));
  const std::string persistent_name = a.str("--persistent", "on");
  if (persistent_name != "on" && persistent_name != "off")
    throw usage_error("--persistent: expected on or off, got '" + persistent_name + "'");
  const bool persistent = persistent_name == "on";
  const auto lifetime_us =
      static_cast<uint32_t>(a.uint("--persistent-lifetime-us", 1000, 200, 10'000'000));
  const auto batch = static_cast<int64_t>(a.uint("--batch", 0, 0, kMaxRows));
  const auto repeat = static_cast<int>(a.uint("--repeat", 1, 1, 1000));
  const double build_s = a.real("--build-s", -1, 0, 1e12);
  const std::string json_path = a.str("--json");
  const bool want_stats = a.has("--stats");
  const bool explain = a.has("--explain");
  const std::vector<double> selectivities = selectivity_list(a);
  const uint64_t filter_seed = a.uint("--filter-seed", 0, 0, UINT64_MAX);
  const double deleted_share = a.real("--deleted-share", 0, 0, 0.99);
  const filter_algo falgo = filter_algo_option(a);
  resources res = make_resources(a);
  // Latency mode: one query per call on one thread, as an online server would run it; with
  // --algo multi the CPU walks each query on all the threads (cpu/parallel_walk.cpp).
  if (batch == 1 && algo != search_algo::multi_cta) res.num_threads = 1;

  for (const auto& p : {index_path, queries_path, truth_path}) check_input(p);
  // The JSON file is appended to, never replaced, so an existing one is fine; an input is not.
  std::vector<std::string> inputs = input_files(index_path);
  inputs.push_back(queries_path);
  inputs.push_back(truth_path);
  if (!json_path.empty()) check_output(json_path, inputs, true);
  if (want_stats && manifest_shard_count(index_path) > 0) {
    throw cagra::error("--stats counts the CPU search of a single index, and '" + index_path +
                       "' is a sharded index (" + std::to_string(manifest_shard_count(index_path)) +
                       " shards): run --stats on one shard file");
  }

  any_index x = load_any(index_path);
  const any_index& idx = x;
  const index& single = x.single;  // labels and --stats: a single index only
  // --deleted-share: a random share of the rows removed first (the living index's tombstones,
  // drawn as the filters are, from the seed after --filter-seed); every point's ground truth is
  // then the exact search of what is left.
  const bool deletions = deleted_share > 0;
  if (deletions) {
    if (x.is_sharded)
      throw usage_error("--deleted-share: removes rows of a single index; '" + index_path +
                        "' is sharded");
    const row_bitset gone = random_allowed_rows(single.size(), deleted_share, filter_seed + 1);
    std::vector<int64_t> labels;
    labels.reserve(size_t(gone.count()));
    for (int64_t r = 0; r < single.size(); ++r)
      if (gone.test(r)) labels.push_back(single.label_of(r));
    remove(res, x.single, labels.data(), int64_t(labels.size()));
    std::printf("deleted   %lld rows (%.4g%%), seed %llu\n", static_cast<long long>(labels.size()),
                100.0 * double(labels.size()) / double(single.size()),
                static_cast<unsigned long long>(filter_seed + 1));
  }
  host_matrix queries = read_vectors(queries_path);
  check_queries(idx, queries, queries_path);
  io::neighbors_file truth = io::read_neighbors(truth_path);
  const int64_t nq = queries.rows();
  if (truth.ids.rows() != nq) {
    throw cagra::error("ground truth '" + truth_path + "' has " + std::to_string(truth.ids.rows()) +
                       " rows but there are " + std::to_string(nq) + " queries");
  }
  if (truth.ids.cols() < k) {
    throw cagra::error("ground truth '" + truth_path + "' has " + std::to_string(truth.ids.cols()) +
                       " neighbors per row, fewer than -k " + std::to_string(k));
  }
  if (static_cast<int64_t>(k) > idx.size()) {
    throw cagra::error("-k " + std::to_string(k) + " is larger than the index (" +
                       std::to_string(idx.size()) + " vectors)");
  }
  // An index with labels is measured by its labels (GROUNDTRUTH lists labels, as search writes
  // them); ground truth holds uint32 ids, so every label must fit there.
  if (single.has_labels()) {
    for (int64_t label : single.labels()) {
      if (label < 0 || label >= int64_t{kInvalidId}) {
        throw cagra::error("index '" + index_path + "' holds label " + std::to_string(label) +
                           ", which no ground-truth id (uint32) can match");
      }
    }
  }
  // A sweep choice, not a library rule: itopk < k would run as itopk = k (the library raises it),
  // so those points are skipped rather than measured twice under another name.
  std::vector<uint32_t> sweep_itopk;
  for (uint32_t m : itopks)
    if (m >= k) sweep_itopk.push_back(m);
  if (sweep_itopk.empty()) {
    throw usage_error("--itopk: every value is smaller than -k " + std::to_string(k) +
                      " (the sweep skips those: the search would raise each to k); give one >= k");
  }

  std::ofstream json;
  if (!json_path.empty()) {
    json.open(json_path, std::ios::app);
    if (!json) throw cagra::error("cannot open '" + json_path + "' for appending");
  }
  bench_record rec;
  rec.run_id = make_run_id();
  rec.system = std::string("cagra-") + backend_name(res);
  rec.threads = effective_threads(res.num_threads);
  rec.devices = devices_of(res);
  rec.shards = static_cast<int64_t>(x.shard_count());
  rec.device = rec.system == "cagra-cuda"
                   ? cuda_device_name(rec.devices[0]) +
                         (rec.devices.size() > 1 ? " x " + std::to_string(rec.devices.size()) : "")
                   : cpu_model() + " (" + std::to_string(rec.threads) +
                         (rec.threads == 1 ? " thread)" : " threads)");
  rec.commit = commit_id();
  rec.dataset = a.has("--dataset") ? a.str("--dataset")
                                   : std::filesystem::path(queries_path).filename().string();
  rec.metric = to_string(idx.metric());
  rec.n = idx.size();
  rec.dim = idx.dim();
  rec.storage = to_string(idx.storage_dtype());
  rec.graph_degree = idx.graph_degree();
  rec.nq = nq;
  rec.batch = batch;
  rec.k = k;
  rec.max_iterations = max_iterations;
  rec.build_s = build_s;
  rec.algo = algo == search_algo::automatic    ? ""
             : algo == search_algo::single_cta ? "single_cta"
                                               : "multi_cta";
  rec.hash_bits = hash_bits;
  rec.hash_reset_interval = hash_reset;

  std::printf("index     %s: %lld x %u %s, degree %u, metric %s", index_path.c_str(),
              static_cast<long long>(idx.size()), idx.dim(), to_string(idx.storage_dtype()),
              idx.graph_degree(), to_string(idx.metric()));
  if (x.is_sharded) std::printf(", %zu shards", x.shard_count());
  std::printf("\n");
  std::printf("queries   %lld, k %u, batch %s, %s, %s, best of %d", static_cast<long long>(nq), k,
              batch == 0 ? "all" : std::to_string(batch).c_str(), rec.system.c_str(),
              rec.device.c_str(), repeat);
  if (!res.devices.empty()) std::printf(", devices %s", devices_text(res.devices).c_str());
  std::printf("\n");
  std::printf("\n%6s %6s %4s %10s %12s", "itopk", "width", "team",
              ("recall@" + std::to_string(k)).c_str(), "QPS");
  if (batch > 0) std::printf(" %12s", batch == 1 ? "latency ms" : "ms/batch");
  if (any_int8) std::printf(" %6s", "rerank");
  if (want_stats) std::printf(" %10s %9s %8s %12s", "dist/q", "parents/q", "iters/q", "bytes/q");
  std::printf("\n");
  std::fflush(stdout);

  std::vector<uint32_t> ids(static_cast<size_t>(nq) * k), found;
  std::vector<float> dist(static_cast<size_t>(nq) * k);
  // Filtered points: per selectivity a random allowed subset and its exact filtered ground truth
  // (the exact path of the same backend: cuBLAS on the GPU). 1.0 is the unfiltered search.
  std::vector<double> shares = selectivities;
  if (shares.empty()) shares.push_back(-1);
  for (double share : shares) {
    row_bitset allowed;
    host_matrix filtered_truth;
    if ((share > 0 && share < 1) || deletions) {
      // Unfiltered points of an index with deleted rows: every row allowed, for the truth only.
      allowed = share > 0 && share < 1 ? random_allowed_rows(idx.size(), share, filter_seed)
                                       : row_bitset(idx.size(), true);
      search_params ex;
      ex.filter = filter_algo::exact;
      filtered_truth = host_matrix(dtype::u32, nq, k);
      std::vector<float> tmp(static_cast<size_t>(nq) * k);
      const double t0 = now_seconds();
      idx.search(res, ex, queries.view(), k, filtered_truth.as<uint32_t>(), {tmp.data(), nq, k},
                 allowed.view());
      if (share > 0 && share < 1)
        std::printf(
            "filter    %.4g%% of rows allowed (%lld), seed %llu; exact filtered ground "
            "truth in %.2f s\n",
            100.0 * double(allowed.count()) / double(idx.size()),
            static_cast<long long>(allowed.count()), static_cast<unsigned long long>(filter_seed),
            now_seconds() - t0);
      else
        std::printf("filter    none; exact ground truth of the rows left in %.2f s\n",
                    now_seconds() - t0);
    } else if (share >= 1) {
      std::printf("filter    100%% of rows allowed: the unfiltered search\n");
    }
    const bool filtered = share > 0 && share < 1;
    const row_filter fview = filtered ? allowed.view() : row_filter{};
    const matrix_view<const uint32_t> truth_ids = filtered_truth.rows()
                                                      ? filtered_truth.as<const uint32_t>()
                                                      : truth.ids.as<const uint32_t>();
    rec.selectivity = share < 0 ? -1 : fview.empty() ? 1.0 : double(allowed.count()) / idx.size();
    rec.deleted_share = deletions ? double(single.deleted_count()) / double(single.size()) : -1;
    for (uint32_t team : teams) {
      for (size_t w = 0; w < walks.size(); ++w) {
        const auto [sampling, traversal] = walks[w];
        const bool new_sampling = w == 0 || walks[w - 1].first != sampling;
        if (sampling && new_sampling) std::printf("random samplings %u\n", sampling);
        if (traversal == traversal_type::int8) {
          if (rerank)
            std::printf("traversal int8, rerank %u\n", rerank);
          else
            std::printf("traversal int8, rerank auto (the rerank column: the plan's count)\n");
        }
        for (uint32_t width : widths) {
          for (uint32_t itopk : sweep_itopk) {
            search_params sp;
            sp.itopk_size = itopk;
            sp.search_width = width;
            sp.max_iterations = max_iterations;
            sp.team_size = team;
            sp.num_random_samplings = sampling;
            sp.traversal = traversal;
            sp.rerank = rerank;
            sp.stored_rows = stored_rows;
            sp.algo = algo;
            sp.hash_bits = hash_bits;
            sp.hash_reset_interval = hash_reset;
            sp.persistent = persistent;
            sp.persistent_lifetime_us = lifetime_us;
            sp.filter = falgo;
            // The plan of one search call of this point (a last, shorter batch may differ).
            // A sharded index: the plan of shard 0 (each shard runs its own).
            const search_plan plan =
                point_plan(res, sp, idx, k, batch > 0 ? std::min(batch, nq) : nq, fview);
            rec.plan = to_string(plan);
            // What ran: the resident kernel only where the plan takes it (batch 1 on the GPU's
            // multi-CTA kernel, no filter).
            rec.persistent = plan.io == search_io::persistent;
            if (explain) {
              std::printf("plan: %s\n", rec.plan.c_str());
              std::fflush(stdout);
            }
            {  // untimed: the first call of a point may upload the index or grow workspaces
              const int64_t rows = batch > 0 ? std::min(batch, nq) : nq;
              idx.search(res, sp, {queries.data(), queries.type(), rows, queries.cols()}, k,
                         {ids.data(), rows, k}, {dist.data(), rows, k}, fview);
              // On a GPU, then untimed passes for at least kWarmupSeconds: best-of-3 batch-10K
              // passes time only ~20 ms, and right after a long index upload the first points of
              // a sweep were up to 45% slow (30M and 100M rows on an H100; the device settling).
              const double t0 = now_seconds();
              while (plan.target == backend::cuda && now_seconds() - t0 < kWarmupSeconds)
                run_pass(res, sp, idx, queries, k, batch, ids, dist, fview);
            }
            pass_result best;
            for (int r = 0; r < repeat; ++r) {
              pass_result p = run_pass(res, sp, idx, queries, k, batch, ids, dist, fview);
              if (r == 0 || p.seconds < best.seconds) best = p;
            }
            rec.itopk = itopk;
            rec.search_width = width;
            rec.team_size = team;
            rec.random_samplings = sampling;
            // The plan's traversal: int8 only where the walk runs on the int8 copy (the exact
            // filtered path ignores it), with the candidates it re-ranks.
            rec.traversal = plan.traversal == traversal_type::int8 ? "int8" : "";
            rec.rerank = plan.rerank;
            rec.stored_rows = rec.traversal.empty() || stored_rows == rows_location::automatic
                                  ? ""
                                  : to_string(stored_rows);
            // The file's ground truth lists labels; the filtered one (an exact search) rows.
            const bool by_label = single.has_labels() && fview.empty();
            if (by_label) {
              found = ids;
              for (uint32_t& id : found)
                if (id != kInvalidId) id = static_cast<uint32_t>(single.label_of(id));
            }
            rec.recall = recall({(by_label ? found : ids).data(), nq, k}, truth_ids, k);
            if (share >= 0 || deletions) {  // every returned id checked: filter, deleted rows
              rec.filter_violations = 0;
              for (uint32_t id : ids)
                rec.filter_violations +=
                    id != kInvalidId &&
                    ((!fview.empty() && !allowed.test(id)) || (deletions && single.is_deleted(id)));
            }
            rec.qps = best.seconds > 0 ? nq / best.seconds : 0;
            rec.latency_ms = best.calls > 0 ? best.seconds * 1e3 / best.calls : 0;
            std::printf("%6u %6u %4s %10.4f %12.0f", itopk, width,
                        team ? std::to_string(team).c_str() : "auto", rec.recall, rec.qps);
            if (batch > 0) std::printf(" %12.4f", rec.latency_ms);
            if (any_int8) {
              if (plan.traversal == traversal_type::int8)
                std::printf(" %6u", plan.rerank);
              else
                std::printf(" %6s", "-");
            }
            if (want_stats) {
              // One more, untimed pass of the CPU search with its work counted: the CUDA single-CTA
              // kernel takes the same steps, so the counts describe it too. Bytes per query =
              // vectors read (one row per distance) + graph rows read (one per parent); the int8
              // traversal reads code rows (one byte a value) and then `rerank` stored rows.
              bench_hooks::search_stats st;
              std::vector<uint32_t> sids(static_cast<size_t>(nq) * k);
              bench_hooks::cpu_search_with_stats(res, sp, single, queries.view(), k, sids.data(),
                                                 &st);
              const double q = static_cast<double>(std::max<uint64_t>(st.queries, 1));
              rec.dists_per_query = st.distances / q;
              rec.parents_per_query = st.parents / q;
              rec.iterations_per_query = st.iterations / q;
              rec.hash_resets_per_query = st.hash_resets / q;
              const bool int8 = !rec.traversal.empty();
              const double row_bytes = double(idx.dim()) * dtype_size(idx.storage_dtype());
              rec.bytes_per_query = rec.dists_per_query * (int8 ? double(idx.dim()) : row_bytes) +
                                    rec.parents_per_query * idx.graph_degree() * sizeof(uint32_t) +
                                    (int8 ? double(rec.rerank) * row_bytes : 0.0);
              std::printf(" %10.1f %9.1f %8.1f %12.0f", rec.dists_per_query, rec.parents_per_query,
                          rec.iterations_per_query, rec.bytes_per_query);
            }
            std::printf("\n");
            std::fflush(stdout);
            if (json.is_open()) {
              json << to_json(rec) << '\n';
              json.flush();
              if (!json) throw cagra::error("cannot write to '" + json_path + "'");
            }
            if (rec.filter_violations > 0)
              throw cagra::error("the filtered search returned " +
                                 std::to_string(rec.filter_violations) + " disallowed ids");
          }
        }
      }
    }
  }
  return 0;
}

}  // namespace

const command_spec& bench_command() {
  static const command_spec spec{
      "bench",
      "sweep search parameters: recall@k and QPS table, JSON lines",
      "INDEX QUERIES GROUNDTRUTH [options]",
      "Searches every query of QUERIES with each itopk x search-width pair (itopk < k skipped),\n"
      "measures recall@k against GROUNDTRUTH and QPS (best of --repeat passes), prints a table\n"
      "and appends one JSON object per point to --json FILE (fields: docs/cli.md; \"plan\" is\n"
      "the search plan the library resolved, as --explain prints it; \"devices\" and\n"
      "\"shards\" the configuration). INDEX may be a sharded index (its manifest).",
      {
          {"-k", nullptr, "K", "neighbors per query (default 10)"},
          {"--itopk", nullptr, "LIST", "itopk values (default 16,32,64,96,128,192,256,384,512)"},
          {"--search-width", nullptr, "LIST", "search widths (default 1)"},
          {"--max-iterations", nullptr, "I", "iteration cap (default 0 = auto)"},
          {"--team-size", nullptr, "LIST",
           "GPU threads per distance, swept: 0 = auto (default), 2..32"},
          {"--random-samplings", nullptr, "LIST",
           "random draws per initial slot, swept: 0 = auto (default; the plan prints it)"},
          {"--traversal", nullptr, "LIST",
           "graph walk, swept: exact (default) and/or int8 (an int8 copy of an f32/f16 index's "
           "rows, the best candidates re-ranked exactly), e.g. exact,int8"},
          {"--rerank", nullptr, "N",
           "int8 traversal: candidates re-ranked per query, in [k, itopk] (default 0 = auto: "
           "min(itopk, max(32, 4k)); the rerank column shows it)"},
          {"--stored-rows", nullptr, "WHERE",
           "int8 traversal on the GPU: where the re-ranked rows are read, auto (default), device "
           "or host (left in host memory, read across PCIe)"},
          {"--algo", nullptr, "A",
           "auto (default), single or multi: the GPU's kernel; on the CPU, multi walks each "
           "query on all the threads"},
          {"--hash-bits", nullptr, "B", "visited-hash size as log2(slots) (default 0 = auto)"},
          {"--hash-reset-interval", nullptr, "I",
           "forgettable hash: reset every I iterations (default 0 = never)"},
          {"--persistent", nullptr, "on|off",
           "GPU batch 1 (multi-CTA, no filter): on (default) keeps the search kernel resident "
           "between queries, off launches it per query"},
          {"--persistent-lifetime-us", nullptr, "US",
           "how long the resident kernel waits for the next query before it leaves, 200 .. "
           "10000000 us (default 1000)"},
          {"--batch", nullptr, "B",
           "queries per search call: 0 = all (default); 1 = one query "
           "per call on one thread (latency)"},
          {"--repeat", nullptr, "R", "timed passes per point, the best is kept (default 1)"},
          {"--threads", nullptr, "T",
           "CPU threads (default: all, 1 with --batch 1 unless --algo multi; at most 4 per "
           "hardware thread)"},
          {"--backend", nullptr, "B", "auto (default: cuda when available), cpu or cuda"},
          {"--devices", nullptr, "LIST",
           "CUDA devices, comma-separated (0,1,...): a single index is replicated over them, a "
           "sharded index puts shard s on device s mod count (docs/multi_gpu.md)"},
          {"--json", nullptr, "FILE", "append one JSON line per point to FILE"},
          {"--dataset", nullptr, "NAME", "dataset name in the JSON (default: QUERIES file name)"},
          {"--build-s", nullptr, "S", "build time to record in the JSON (default null)"},
          {"--stats", nullptr, nullptr,
           "per point, one more untimed CPU search pass counting "
           "distances, parents, iterations and bytes per query"},
          {"--explain", nullptr, nullptr,
           "print each point's search plan (every automatic value "
           "resolved) before measuring it"},
          {"--filter-selectivity", nullptr, "LIST",
           "filtered search: per share of rows (e.g. 0.5,0.1,0.01; 1 = unfiltered) a random "
           "allowed subset, its exact ground truth, then the sweep"},
          {"--filter-seed", nullptr, "S", "seed of the random allowed subsets (default 0)"},
          {"--deleted-share", nullptr, "X",
           "remove a random share X in [0, 0.99] of the rows first (seed --filter-seed + 1; a "
           "single index), each point's ground truth then the exact search of the rest"},
          {"--filter-algo", nullptr, "A", "filtered search path: auto (default), graph or exact"},
      },
      {"INDEX", "QUERIES", "GROUNDTRUTH"},
      run_bench};
  return spec;
}

}  // namespace cagra::cli
