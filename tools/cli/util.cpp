// Helpers shared by the subcommands of the `cagra` tool: the output-path checks that keep the tool
// from destroying user data (an output that names an input, or an existing file without
// --force, is refused before any work starts), the progress display for long builds, and the
// resources built from the common --backend/--threads options.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <cagra/plan.hpp>

#include "cli.hpp"

namespace fs = std::filesystem;

namespace cagra::cli {

bool has_extension(const std::string& path, const std::string& ext) {
  if (path.size() < ext.size()) return false;
  std::string tail = path.substr(path.size() - ext.size());
  std::transform(tail.begin(), tail.end(), tail.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return tail == ext;
}

namespace {

// HDF5 inputs may carry a dataset name ("file.hdf5:test"); the file is the part before it.
std::string file_part(const std::string& path) {
  std::error_code ec;
  if (fs::exists(path, ec)) return path;
  size_t colon = path.rfind(':');
  if (colon == std::string::npos) return path;
  std::string before = path.substr(0, colon);
  return has_extension(before, ".hdf5") || has_extension(before, ".h5") ? before : path;
}

// What `path` is when it exists and is neither a regular file nor a folder (symlinks followed),
// else nullptr.
const char* special_kind(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) return nullptr;
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "a special file";
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    bool eq = fs::equivalent(a, b, ec);
    if (!ec) return eq;
  }
  fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  fs::path cb = fs::weakly_canonical(fs::absolute(b, ec), ec);
  return ca == cb;
}

}  // namespace

void check_input(const std::string& path) {
  std::error_code ec;
  std::string file = file_part(path);
  if (!fs::exists(file, ec)) throw cagra::error("cannot read '" + path + "': no such file");
  if (fs::is_directory(file, ec)) throw cagra::error("cannot read '" + path + "': a folder");
}

void check_output(const std::string& output, const std::vector<std::string>& inputs, bool force) {
  for (const auto& in : inputs) {
    if (same_file(output, file_part(in))) {
      throw cagra::error("output '" + output + "' is also an input; choose another output name");
    }
  }
  std::error_code ec;
  if (fs::is_directory(output, ec)) {
    throw cagra::error("output '" + output + "' is a folder; give a file name");
  }
  // Never replaced, even with --force: writing through a temporary file and rename() would put a
  // plain file in place of a FIFO or device node (as root, `-o /dev/null --force` would replace
  // /dev/null), and appending (--json) to a device writes into it.
  if (const char* kind = special_kind(output)) {
    throw cagra::error("output '" + output + "' is " + kind +
                       ", not a regular file; cagra writes only regular files, even with --force");
  }
  if (fs::exists(output, ec) && !force) {
    throw cagra::error("output '" + output + "' exists; add --force to replace it");
  }
  fs::path parent = fs::absolute(output, ec).parent_path();
  if (!fs::is_directory(parent, ec)) {
    throw cagra::error("cannot write '" + output + "': folder '" + parent.string() +
                       "' does not exist");
  }
}

resources make_resources(const args& a) {
  resources res;
  try {
    res.target = parse_backend(a.str("--backend", "auto"));
  } catch (const cagra::error&) {
    throw usage_error("--backend: expected auto, cpu or cuda, got '" + a.str("--backend") + "'");
  }
  res.num_threads = static_cast<int>(a.uint("--threads", 0, 0, 65536));
  // The library clamps the count and checks that the system can start that many threads; doing
  // it here reports a count it cannot start before any input is read.
  (void)resolve_threads(res.num_threads);
  res.devices = devices_option(a);
  if (res.target == backend::cuda && !cuda_available()) {
    throw cagra::error("--backend cuda: this build has no CUDA backend or no GPU is visible");
  }
  return res;
}

std::vector<int> devices_option(const args& a) {
  if (!a.has("--devices")) return {};
  std::vector<uint32_t> list;
  try {
    list = a.uint_list("--devices", {}, 0, INT32_MAX);
  } catch (const usage_error&) {
    throw usage_error(
        "--devices: expected CUDA device ordinals separated by commas (0,1,...: "
        "non-negative integers), got '" +
        a.str("--devices") + "'");
  }
  std::vector<int> out;
  for (uint32_t d : list) {
    if (std::find(out.begin(), out.end(), int(d)) != out.end()) {
      throw usage_error("--devices: device " + std::to_string(d) + " is listed twice in '" +
                        a.str("--devices") + "' (each device once; shards share devices " +
                        "when there are more shards than devices)");
    }
    out.push_back(int(d));
  }
  return out;
}

std::string devices_text(const std::vector<int>& devices) {
  std::string s;
  for (int d : devices) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

int effective_threads(int requested) { return resolve_threads(requested); }

const char* backend_name(const resources& res) {
  return search_backend(res) == backend::cuda ? "cuda" : "cpu";
}

void print_index_line(const index& idx, const std::string& path) {
  std::printf("index     %s: %lld x %u %s, degree %u, metric %s", path.c_str(),
              static_cast<long long>(idx.size()), idx.dim(), to_string(idx.storage_dtype()),
              idx.graph_degree(), to_string(idx.metric()));
  if (idx.has_labels()) std::printf(", labels");
  if (idx.deleted_count() > 0)
    std::printf(", %lld deleted", static_cast<long long>(idx.deleted_count()));
  std::printf("\n");
  std::fflush(stdout);
}

void save_index(const index& idx, const std::string& path) {
  const double t0 = now_seconds();
  save(idx, path);
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  std::printf("saved     %s (%s, %.2f s)\n", path.c_str(),
              ec ? "size unknown" : human_bytes(size).c_str(), now_seconds() - t0);
}

// ---- sharded indexes -----------------------------------------------------------------------

size_t manifest_shard_count(const std::string& path) {
  if (!is_sharded_file(path)) return 0;
  std::ifstream in(path);
  std::string magic, version, word;
  size_t n = 0;
  in >> magic >> version >> word >> n;
  return in && word == "shards" ? n : 0;
}

std::string shard_file(const std::string& path, size_t s, size_t n) {
  return path + ".shard-" + std::to_string(s) + "-of-" + std::to_string(n);
}

std::vector<std::string> input_files(const std::string& path) {
  std::vector<std::string> files = {path};
  const size_t n = manifest_shard_count(path);
  for (size_t s = 0; s < n && s < 4096; ++s) files.push_back(shard_file(path, s, n));
  return files;
}

void refuse_sharded(const std::string& path, const char* command) {
  if (!is_sharded_file(path)) return;
  const size_t n = manifest_shard_count(path);
  throw cagra::error("'" + path + "' is a sharded index (" +
                     (n ? std::to_string(n) : std::string("?")) + (n == 1 ? " shard" : " shards") +
                     "): " + command + " works on a single index");
}

void check_sharded_output(const std::string& output, size_t shards,
                          const std::vector<std::string>& inputs, bool force) {
  check_output(output, inputs, force);
  for (size_t s = 0; s < shards; ++s) check_output(shard_file(output, s, shards), inputs, force);
}

void save_sharded(const sharded_index& idx, const std::string& path) {
  const double t0 = now_seconds();
  save(idx, path);
  const size_t n = idx.shard_count();
  std::error_code ec;
  uint64_t total = fs::file_size(path, ec);
  for (size_t s = 0; s < n && !ec; ++s) total += fs::file_size(shard_file(path, s, n), ec);
  std::printf("saved     %s and %s .. %s (%s in all, %.2f s)\n", path.c_str(),
              fs::path(shard_file(path, 0, n)).filename().c_str(),
              fs::path(shard_file(path, n - 1, n)).filename().c_str(),
              ec ? "size unknown" : human_bytes(total).c_str(), now_seconds() - t0);
}

void any_index::search(const resources& res, const search_params& sp, dataset_view queries,
                       uint32_t k, matrix_view<uint32_t> ids, matrix_view<float> dist,
                       const row_filter& filter) const {
  if (is_sharded)
    cagra::search(res, sp, sharded, queries, k, ids, dist, filter);
  else
    cagra::search(res, sp, single, queries, k, ids, dist, filter);
}

any_index load_any(const std::string& path) {
  any_index x;
  if (is_sharded_file(path)) {
    x.sharded = load_sharded(path);
    x.is_sharded = true;
  } else {
    x.single = load(path);
  }
  return x;
}

row_filter first_rows(const row_filter& f, int64_t rows, std::vector<uint32_t>& storage) {
  if (f.empty() || rows >= f.rows) return f;
  const int64_t in_words = row_filter::words_for(f.rows), out_words = row_filter::words_for(rows);
  const int64_t sets = f.queries ? f.queries : 1;
  storage.assign(static_cast<size_t>(sets * out_words), 0u);
  for (int64_t q = 0; q < sets; ++q) {
    std::copy(f.words + q * in_words, f.words + q * in_words + out_words,
              storage.begin() + q * out_words);
    if (rows & 31)
      storage[static_cast<size_t>((q + 1) * out_words - 1)] &= (1u << (rows & 31)) - 1u;
  }
  return f.queries ? row_filter::per_query(storage.data(), f.queries, rows)
                   : row_filter::shared(storage.data(), rows);
}

search_plan point_plan(const resources& res, const search_params& sp, const any_index& x,
                       uint32_t k, int64_t batch, const row_filter& filter) {
  std::vector<uint32_t> storage;
  const index& idx = x.plan_index();
  // A shard smaller than k is searched for all its rows, and without the resident batch-1
  // kernel (the sharded search's rules).
  search_params p = sp;
  if (x.is_sharded) p.persistent = false;
  return plan_search(res, p, idx, std::min<uint32_t>(k, static_cast<uint32_t>(idx.size())), batch,
                     memory_space::host, first_rows(filter, idx.size(), storage));
}

host_matrix read_vectors(const std::string& path) {
  io::read_notes notes;
  host_matrix m = io::read_matrix(path, notes);
  if (!notes.converted_from.empty())
    std::fprintf(stderr, "note: %s is %s, converted to %s\n", path.c_str(),
                 notes.converted_from.c_str(),
                 m.type() == dtype::f32 ? "float32" : to_string(m.type()));
  return m;
}

void check_queries(const any_index& idx, const host_matrix& queries, const std::string& path) {
  if (queries.cols() != static_cast<int64_t>(idx.dim())) {
    throw cagra::error("queries '" + path + "' have dim " + std::to_string(queries.cols()) +
                       " but the index has dim " + std::to_string(idx.dim()));
  }
  if (queries.rows() == 0) throw cagra::error("queries '" + path + "' hold no rows");
}

filter_file read_filter(const std::string& path, int64_t rows, int64_t queries) {
  const host_matrix m = io::read_matrix(path);
  filter_file f;
  const int64_t words = row_filter::words_for(rows);
  if (m.type() == dtype::u8) {  // a mask
    if (m.cols() != rows || (m.rows() != 1 && m.rows() != queries)) {
      throw cagra::error("filter '" + path + "' is a mask of " + std::to_string(m.rows()) + " x " +
                         std::to_string(m.cols()) + " bytes; expected 1 x " + std::to_string(rows) +
                         " (one for every query) or " + std::to_string(queries) + " x " +
                         std::to_string(rows) + " (one per query): one byte per index row");
    }
    const auto* b = static_cast<const uint8_t*>(m.data());
    f.words.assign(static_cast<size_t>(m.rows() * words), 0u);
    for (int64_t q = 0; q < m.rows(); ++q) {
      for (int64_t i = 0; i < rows; ++i) {
        const uint8_t v = b[q * rows + i];
        if (v > 1) {
          throw cagra::error("filter '" + path + "' row " + std::to_string(q) + ", column " +
                             std::to_string(i) + " holds " + std::to_string(v) +
                             ": a mask holds 0 (skip) or 1 (allowed)");
        }
        if (v) f.words[size_t(q * words + (i >> 5))] |= 1u << (i & 31);
      }
    }
    f.view = m.rows() == 1 ? row_filter::shared(f.words.data(), rows)
                           : row_filter::per_query(f.words.data(), m.rows(), rows);
  } else if (m.type() == dtype::i32 || m.type() == dtype::u32) {  // ids
    const int64_t n = m.rows() * m.cols();
    row_bitset b(rows);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t id = m.type() == dtype::i32
                             ? int64_t{static_cast<const int32_t*>(m.data())[i]}
                             : int64_t{static_cast<const uint32_t*>(m.data())[i]};
      if (id < 0 || id >= rows) {
        throw cagra::error("filter '" + path + "' lists id " + std::to_string(id) + " (position " +
                           std::to_string(i) + "), outside the index's rows [0, " +
                           std::to_string(rows) + ")");
      }
      b.set(id);
    }
    f.words = b.words();
    f.view = row_filter::shared(f.words.data(), rows);
  } else {
    throw cagra::error("filter '" + path + "' holds " + std::string(to_string(m.type())) +
                       " values; a filter is a mask (bool or uint8 0/1, one byte per index row) "
                       "or a list of allowed ids (int32/uint32)");
  }
  for (int64_t q = 0; q < (f.view.queries ? f.view.queries : 1); ++q)
    for (int64_t w = 0; w < words; ++w)
      f.allowed += __builtin_popcount(f.words[size_t(q * words + w)]);
  return f;
}

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return buf;
}

// ---- progress -------------------------------------------------------------------------------

struct progress_display::state {
  std::mutex mu;
  std::string what;
  std::string stage;
  bool tty = false;
  bool line_open = false;  // a \r line is on screen and must be erased before other output
  bool finished = false;
  int last_step = -1;  // last percent (tty) or decile (log) shown for `stage`
  size_t last_width = 0;
  double start = 0;
};

progress_display::progress_display(const char* what) : state_(std::make_shared<state>()) {
  state_->what = what;
  state_->tty = ::isatty(STDERR_FILENO) == 1;
  state_->start = now_seconds();
}

progress_display::~progress_display() { finish(); }

std::function<void(const char*, double)> progress_display::callback() {
  std::shared_ptr<state> s = state_;
  return [s](const char* stage, double fraction) {
    std::lock_guard<std::mutex> lock(s->mu);
    if (s->finished) return;
    fraction = std::min(1.0, std::max(0.0, fraction));
    if (stage == nullptr) stage = "";
    if (s->stage != stage) {
      s->stage = stage;
      s->last_step = -1;
    }
    // A terminal gets every percent on one rewritten line; a log file gets ~10 lines per stage.
    const int step = s->tty ? static_cast<int>(fraction * 100) : static_cast<int>(fraction * 10);
    if (step <= s->last_step) return;
    s->last_step = step;
    char line[256];
    // "build: optimize 40%", but "analyze 40%" when the stage repeats the label.
    const bool same = s->what == stage;
    int n = std::snprintf(line, sizeof line, "%s%s%s %3d%% (%.1f s)", s->what.c_str(),
                          same ? "" : ": ", same ? "" : stage, static_cast<int>(fraction * 100),
                          now_seconds() - s->start);
    size_t width = n > 0 ? std::min(static_cast<size_t>(n), sizeof line - 1) : 0;
    if (s->tty) {
      // Pad with spaces so a shorter line fully covers the previous one.
      std::fprintf(stderr, "\r%s%*s", line,
                   static_cast<int>(s->last_width > width ? s->last_width - width : 0), "");
      s->last_width = width;
      s->line_open = true;
    } else {
      std::fprintf(stderr, "%s\n", line);
    }
    std::fflush(stderr);
  };
}

void progress_display::finish() {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->finished) return;
  state_->finished = true;
  if (state_->line_open) {
    std::fprintf(stderr, "\r%*s\r", static_cast<int>(state_->last_width), "");
    std::fflush(stderr);
  }
}

}  // namespace cagra::cli
