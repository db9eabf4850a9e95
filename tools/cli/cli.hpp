// Shared pieces of the `cagra` command-line tool: the option parser, the subcommand table entry,
// and small helpers (output-path safety, progress display, timing, resources) that several
// subcommands need. Everything here is internal to the tool; the library knows nothing of it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>
#include <cagra/multi_gpu.hpp>
#include <cagra/plan.hpp>

namespace cagra::cli {

/** A mistake on the command line (unknown option, malformed value, ...): exit status 2. */
class usage_error : public std::runtime_error {
 public:
  explicit usage_error(const std::string& what) : std::runtime_error(what) {}
};

/** One option of a subcommand. `value` names the argument in the help text; nullptr = flag. */
struct option_spec {
  const char* name;   // "--itopk" or "-k"
  const char* alias;  // "-o" for "--output", or nullptr
  const char* value;  // "M", "FILE", ... or nullptr for a flag
  const char* help;
  bool required = false;
};

class args;

/** A subcommand: its name, help text, options and entry point. */
struct command_spec {
  const char* name;
  const char* summary;      // one line for `cagra --help`
  const char* usage;        // positional part: "DATASET -o INDEX"
  const char* description;  // paragraph(s) under the usage line
  std::vector<option_spec> options;
  std::vector<const char*> positionals;  // names of the required positional arguments
  int (*run)(const args&);
};

/** Parsed command line of one subcommand, with strict typed getters (usage_error on bad input). */
class args {
 public:
  args(const command_spec& spec, int argc, char** argv, int first);

  const command_spec& spec() const { return *spec_; }
  bool help() const { return help_; }
  const std::string& positional(size_t i) const { return positional_.at(i); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }

  std::string str(const std::string& name, const std::string& fallback = "") const;
  /** Unsigned integer in [lo, hi]; `fallback` when the option is absent. */
  uint64_t uint(const std::string& name, uint64_t fallback, uint64_t lo = 0,
                uint64_t hi = UINT32_MAX) const;
  double real(const std::string& name, double fallback, double lo, double hi) const;
  /** A size in bytes: plain bytes ("1048576") or a number with a binary suffix KiB, MiB, GiB or
   *  TiB ("8GiB", "1.5 GiB"; the result rounded down to whole bytes), below 2^64; `fallback`
   *  when the option is absent. */
  uint64_t bytes(const std::string& name, uint64_t fallback) const;
  /** Comma-separated unsigned integers in [lo, hi] ("16,32,64"). */
  std::vector<uint32_t> uint_list(const std::string& name, std::vector<uint32_t> fallback,
                                  uint64_t lo, uint64_t hi) const;

 private:
  const command_spec* spec_;
  bool help_ = false;
  std::vector<std::string> positional_;
  std::map<std::string, std::string> values_;  // key: the option's canonical name
};

/** Prints the help text of one subcommand. */
void print_command_help(const command_spec& spec, FILE* out);

// ---- subcommands (one file each) ------------------------------------------------------------
const command_spec& build_command();
const command_spec& search_command();
const command_spec& eval_command();
const command_spec& bench_command();
const command_spec& info_command();
const command_spec& gt_command();
const command_spec& extend_command();
const command_spec& remove_command();
const command_spec& compact_command();
const command_spec& export_hnsw_command();  // hnsw.cpp: export-hnsw and import-hnsw
const command_spec& import_hnsw_command();

// ---- helpers (util.cpp) ---------------------------------------------------------------------
/** Refuses an output path that names one of the inputs, that exists without `force`, or whose
 *  folder does not exist. Called before any heavy work, so a mistake costs nothing. */
void check_output(const std::string& output, const std::vector<std::string>& inputs, bool force);
/** Throws cagra::error unless `path` names an existing regular file (HDF5 ":name" allowed). */
void check_input(const std::string& path);
/** Lower-cased extension check ("x.IBIN" has ".ibin"). */
bool has_extension(const std::string& path, const std::string& ext);

/** Resources from the common options (--backend, --threads, --devices); no progress callback. */
resources make_resources(const args& a);
/** --devices LIST: comma-separated CUDA device ordinals, each >= 0 and listed once (usage error
 *  otherwise); empty when the option is absent. */
std::vector<int> devices_option(const args& a);
/** "0,1,3". */
std::string devices_text(const std::vector<int>& devices);
/** Parsers of the enum options that turn a library error into a usage error. */
metric metric_option(const args& a, metric fallback);
/** The thread count a run actually uses (resolves 0 = all). */
int effective_threads(int requested);
/** --filter-algo: auto (default), graph or exact. */
filter_algo filter_algo_option(const args& a);
/** --traversal: exact (default) or int8, one value (search); usage error otherwise. */
traversal_type traversal_option(const args& a);
/** --stored-rows: auto (default), device or host. */
rows_location stored_rows_option(const args& a);
/** --traversal LIST: comma-separated exact and int8 values (bench); {exact} when absent. */
std::vector<traversal_type> traversal_list(const args& a);
/** --filter-selectivity LIST: comma-separated shares of rows in (0, 1] (bench); empty when absent.
 */
std::vector<double> selectivity_list(const args& a);
/** "cuda" when the resources pick the CUDA backend, else "cpu". */
const char* backend_name(const resources& res);

/** Shows the progress of long library calls on stderr: one line rewritten with \r on a
 *  terminal, else a line every ~10% per stage (logs stay short). Thread-safe. */
class progress_display {
 public:
  explicit progress_display(const char* what);
  ~progress_display();
  /** The callback to store in resources::progress. */
  std::function<void(const char*, double)> callback();
  /** Ends the display (erases the terminal line). */
  void finish();

 private:
  struct state;
  std::shared_ptr<state> state_;
};

/** One line describing a loaded index: "index     PATH: 9900 x 128 u8, degree 32, metric l2",
 *  then ", labels" when it has labels and ", N deleted" when rows are deleted. */
void print_index_line(const index& idx, const std::string& path);
/** Saves `idx` to `path` (cagra::save: temporary file, then rename) and prints "saved ...". */
void save_index(const index& idx, const std::string& path);

// ---- sharded indexes (cagra/multi_gpu.hpp) --------------------------------------------------
/** The shard count a sharded manifest declares ("shards N" on its second line; 0 when `path` is
 *  not a manifest or the line is unreadable). Reads the manifest only, no shard. */
size_t manifest_shard_count(const std::string& path);
/** The file `path.shard-S-of-N` of shard `s` of a set of `n`, as cagra::save(sharded_index)
 *  names it. */
std::string shard_file(const std::string& path, size_t s, size_t n);
/** `path`, and when it is a sharded manifest the files of its shards too: the inputs an output
 *  must not name. */
std::vector<std::string> input_files(const std::string& path);
/** Throws cagra::error when `path` is a sharded manifest: "'PATH' is a sharded index (N shards):
 *  COMMAND works on a single index". For the commands that take one cagra::index. */
void refuse_sharded(const std::string& path, const char* command);
/** Saves a sharded index (cagra::save: the shard files, then the manifest) and prints "saved ...".
 */
void save_sharded(const sharded_index& idx, const std::string& path);
/** check_output for the file set of a sharded index of `shards` shards at `output`: the manifest
 *  and every PATH.shard-S-of-N file (none may be an input, none may exist without `force`). */
void check_sharded_output(const std::string& output, size_t shards,
                          const std::vector<std::string>& inputs, bool force);

/** The index a search-like command (search, bench, info) runs on: one cagra::index, or a sharded
 *  index read from a manifest (load_sharded). */
struct any_index {
  index single;
  sharded_index sharded;
  bool is_sharded = false;

  int64_t size() const { return is_sharded ? sharded.size() : single.size(); }
  uint32_t dim() const { return is_sharded ? sharded.dim() : single.dim(); }
  uint32_t graph_degree() const {
    return is_sharded ? sharded.graph_degree() : single.graph_degree();
  }
  cagra::metric metric() const { return is_sharded ? sharded.metric() : single.metric(); }
  dtype storage_dtype() const {
    return is_sharded ? sharded.storage_dtype() : single.storage_dtype();
  }
  size_t shard_count() const { return is_sharded ? sharded.shard_count() : 1; }
  /** The index whose search plan stands for every search: the index, or shard 0 (the shards
   *  differ by at most one row). */
  const index& plan_index() const { return is_sharded ? sharded.shard(0) : single; }
  /** cagra::search of the index, or the sharded search (global row ids). */
  void search(const resources& res, const search_params& sp, dataset_view queries, uint32_t k,
              matrix_view<uint32_t> ids, matrix_view<float> dist,
              const row_filter& filter = {}) const;
};
/** Loads `path`: a sharded manifest (is_sharded_file) with load_sharded, else cagra::load. */
any_index load_any(const std::string& path);
/** The filter `f` (over all rows of a sharded index) cut to its first `rows` rows: the filter of
 *  shard 0, which plan_search takes with plan_index(). Written into `storage`. */
row_filter first_rows(const row_filter& f, int64_t rows, std::vector<uint32_t>& storage);
/** The plan of a search of `x` (plan_search on plan_index(), the filter cut to it). */
search_plan point_plan(const resources& res, const search_params& sp, const any_index& x,
                       uint32_t k, int64_t batch, const row_filter& filter);
/** Checks that the queries fit the index (same dim), with a message that names the file. */
void check_queries(const any_index& idx, const host_matrix& queries,
                   const std::string& queries_path);

/** Labels from a file (`extend --labels`, `remove IDS`; labels.cpp): .npy of any integer dtype
 *  (int8 .. int64, uint8 .. uint64 below 2^63) or .ibin (int32), any shape, in C order. Throws
 *  cagra::error naming the file for anything else, an empty file included. */
std::vector<int64_t> read_labels(const std::string& path);
/** Writes `rows x cols` labels as .npy of int64 (<i8), through a temporary file and rename. */
void write_labels_npy(const std::string& path, const int64_t* labels, int64_t rows, int64_t cols);

/** Seconds on a monotonic clock. */
double now_seconds();
/** "12.3 MiB". */
std::string human_bytes(uint64_t bytes);
/** Reads vectors (a dataset, queries, rows to insert) with io::read_matrix. When the reader
 *  converted the file's values (a float64 .npy or HDF5 dataset, read as float32: the rule of the
 *  Python package too), one line says so on stderr: "note: base.npy is float64, converted to
 *  float32". */
host_matrix read_vectors(const std::string& path);

/** A filter read from a file (`--filter`): the bitsets it holds and the library's view. */
struct filter_file {
  std::vector<uint32_t> words;
  row_filter view;
  int64_t allowed = 0;  ///< allowed rows (per-query: summed over the queries)
};
/** Reads a filter for an index of `rows` rows and `queries` queries: a mask of 0/1 bytes (.npy of
 *  bool or uint8, .u8bin) with one row (shared) or one row per query, each `rows` long; or
 *  integers (.ibin, .npy of int32/uint32, ...) listing the allowed ids, any shape (shared).
 *  Throws cagra::error naming the file for anything else (a wrong length, an id out of range). */
filter_file read_filter(const std::string& path, int64_t rows, int64_t queries);

}  // namespace cagra::cli
