// The JSON-lines record that `cagra bench` appends per sweep point, and the facts about the run
// that go into it (run id, device, commit). Kept apart from the sweep so the record's fields are
// in one place: plotting scripts and bench/results/ depend on their names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <cagra/filter.hpp>

namespace cagra::cli {

struct bench_record {
  std::string run_id;  // shared by all points of one sweep
  std::string system;  // "cagra-cpu" or "cagra-cuda"
  std::string device;  // "Intel Xeon ... (2 threads)"
  // The configuration (docs/multi_gpu.md): the CUDA device list (resources::devices, or the one
  // device; recorded on the CPU backend too, where it changes nothing) and the shard count (1 for
  // a single index). Both left out when empty / 0 (a peer's record).
  std::vector<int> devices;
  int64_t shards = 0;
  std::string commit;
  std::string dataset;
  std::string metric;
  int64_t n = 0;  // index size
  int64_t dim = 0;
  int64_t nq = 0;     // queries searched
  int64_t batch = 0;  // 0 = all queries in one call
  uint32_t k = 0;
  uint32_t itopk = 0;
  uint32_t search_width = 0;
  uint32_t max_iterations = 0;
  int threads = 0;
  // Search settings for the ablations (written into params only when not the default: 0 / "").
  uint32_t team_size = 0;
  uint32_t random_samplings = 0;
  // The int8 traversal (search_params::traversal): "int8" when the point's plan walks the int8
  // copy, with the plan's resolved rerank count; "" = exact (both left out of the JSON).
  std::string traversal;
  uint32_t rerank = 0;
  // search_params::stored_rows as asked for an int8 point ("device" or "host"); "" = auto.
  std::string stored_rows;
  std::string algo;  // "single_cta" / "multi_cta" when forced
  uint32_t hash_bits = 0;
  uint32_t hash_reset_interval = 0;
  bool persistent = false;  // the point ran through the resident batch-1 kernel (plan io)
  std::string storage;      // element type of the index's stored vectors ("u8", "f32", ...)
  uint32_t graph_degree = 0;
  double recall = 0;
  double qps = 0;
  double latency_ms = 0;  // mean wall time of one search call (one batch)
  double build_s = -1;    // < 0: unknown (written as null)
  // `cagra bench --stats` only (< 0: not measured, the fields are left out): CPU search work
  // per query, and bytes read per query = distances x dim x element size + parents x degree x 4.
  double dists_per_query = -1;
  double parents_per_query = -1;
  double iterations_per_query = -1;
  double hash_resets_per_query = -1;
  double bytes_per_query = -1;
  // cagra::to_string(cagra::plan_search(...)) of the point: what "auto" chose (written when set).
  std::string plan;
  // `cagra bench --filter-selectivity` only (< 0: unfiltered, the fields are left out): the share
  // of rows the point's filter allows, and how many returned ids it did not allow (must be 0).
  double selectivity = -1;
  int64_t filter_violations = -1;
  // `cagra bench --deleted-share` only (< 0: none, left out): the share of rows deleted.
  double deleted_share = -1;
};

/** A JSON string literal of `s` (quotes added, escaped per RFC 8259). */
std::string json_quote(const std::string& s);
/** A JSON number printed with `fmt`; NaN and infinities (which JSON lacks) become null. */
std::string json_number(double v, const char* fmt = "%.6g");

/** One JSON object on one line (no trailing newline), strings escaped per RFC 8259. */
std::string to_json(const bench_record& r);
/** A timestamp-based id ("20261121T052312Z-4821"): sortable, unique per process. */
std::string make_run_id();
/** The CPU model from /proc/cpuinfo, tidied ("Intel Xeon Platinum 8480+"), or "unknown CPU". */
std::string cpu_model();
/** $CAGRA_COMMIT, else `git rev-parse --short HEAD` in the source tree, else "unknown". */
std::string commit_id();

/** The allowed rows of a filtered benchmark point: exactly max(1, round(share * rows)) rows,
 *  drawn uniformly from `seed` (partial Fisher-Yates over std::mt19937_64), so that `cagra bench`
 *  and the peers' harnesses given the same share and seed filter the same rows. */
row_bitset random_allowed_rows(int64_t rows, double share, uint64_t seed);

}  // namespace cagra::cli
