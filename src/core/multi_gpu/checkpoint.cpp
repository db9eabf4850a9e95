// Checkpoints of a sharded build (docs/multi_gpu.md, "Checkpoints"): each finished shard is saved
// as DIR/shard-S-of-N.cagra (an ordinary cagra::save file, written to a temporary file and renamed)
// beside DIR/shard-S-of-N.fingerprint, a short text file naming what the shard was built from:
//
//   CAGRACKP 1
//   shard S
//   shards N
//   rows R                       (of the whole dataset)
//   first_row F
//   shard_rows r
//   dim D
//   dtype u8
//   metric l2                    (then every index_params field that changes the graph)
//   ...
//   data_xxh64 HHHHHHHHHHHHHHHH  (XXH64 of the shard's rows, as stored in the dataset)
//   index_bytes B                (the shard file's size and trailing checksum)
//   index_checksum HHHHHHHHHHHHHHHH
//   end
//
// A build saving a shard removes its fingerprint first and writes the new one (temporary file,
// rename) only after the shard file is complete, so a fingerprint always describes the shard file
// beside it; a process killed in between leaves a shard file without fingerprint, which is built
// again. max_device_memory and the backend are not inputs: they do not change what is built
// (the GPU NN-descent is not bit-deterministic anyway; either backend's graph is a valid one).
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/multi_gpu/multi_gpu.hpp"
#include "core/text_words.hpp"
#include "core/xxh64.hpp"

namespace cagra::core {
namespace {

constexpr char kMagic[] = "CAGRACKP";
constexpr int kVersion = 1;
constexpr off_t kMaxFingerprintBytes = 64 << 10;

const char* storage_name(storage_type t) {
  switch (t) {
    case storage_type::same_as_input: return "input";
    case storage_type::f32: return "f32";
    case storage_type::f16: return "f16";
  }
  return "unknown";
}

std::string hex64(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016" PRIx64, v);
  return b;
}

std::string float_text(float v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", double(v));  // 9 digits: a float reads back exactly
  return b;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/** 0 when `path` is a regular file, ENOENT when it does not exist; throws otherwise. */
int regular_or_missing(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT) return ENOENT;
    CAGRA_FAIL("checkpoint: cannot read '%s': %s", path.c_str(), std::strerror(e));
  }
  CAGRA_EXPECTS(S_ISREG(st.st_mode),
                "checkpoint: '%s' is not a regular file; remove it, or use another checkpoint "
                "folder",
                path.c_str());
  return 0;
}

[[noreturn]] void garbled(const std::string& path, const std::string& what) {
  CAGRA_FAIL(
      "checkpoint: '%s' is not a readable shard fingerprint (%s): it was not written by this "
      "library's sharded build, or is damaged; delete it (and the shard file beside it) to build "
      "that shard again, or use another checkpoint folder",
      path.c_str(), what.c_str());
}

}  // namespace

void index_file_identity(const std::string& path, uint64_t& bytes, uint64_t& sum) {
  std::ifstream in(path, std::ios::binary);
  CAGRA_EXPECTS(in.good(), "cannot open '%s': %s", path.c_str(), std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  CAGRA_EXPECTS(size >= 8, "'%s' is too short to be a CAGRA index file", path.c_str());
  in.seekg(size - 8);
  uint8_t b[8] = {};
  in.read(reinterpret_cast<char*>(b), 8);
  CAGRA_EXPECTS(in.good(), "cannot read '%s'", path.c_str());
  sum = 0;
  for (int i = 7; i >= 0; --i) sum = (sum << 8) | b[i];
  bytes = uint64_t(size);
}

void prepare_checkpoint_dir(const std::string& dir) {
  CAGRA_EXPECTS(!dir.empty(), "checkpoint: empty folder name");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  CAGRA_EXPECTS(std::filesystem::is_directory(dir),
                "checkpoint: '%s' is not a folder and cannot be made one%s%s", dir.c_str(),
                ec ? ": " : "", ec ? ec.message().c_str() : "");
  CAGRA_EXPECTS(::access(dir.c_str(), W_OK | X_OK) == 0,
                "checkpoint: cannot write into the folder '%s': %s", dir.c_str(),
                std::strerror(errno));
}

shard_checkpoint make_shard_checkpoint(const std::string& dir, const index_params& params,
                                       dataset_view dataset, size_t s, size_t n, int64_t first,
                                       int64_t rows) {
  shard_checkpoint c;
  const std::string stem = dir + (dir.back() == '/' ? "" : "/") + "shard-" + std::to_string(s) +
                           "-of-" + std::to_string(n);
  c.index_path = stem + ".cagra";
  c.fingerprint_path = stem + ".fingerprint";
  checksum h;
  h.update(static_cast<const uint8_t*>(dataset.data) + size_t(first) * dataset.row_bytes(),
           size_t(rows) * dataset.row_bytes());
  c.inputs = {
      {"shard", std::to_string(s)},
      {"shards", std::to_string(n)},
      {"rows", std::to_string(dataset.rows)},
      {"first_row", std::to_string(first)},
      {"shard_rows", std::to_string(rows)},
      {"dim", std::to_string(dataset.cols)},
      {"dtype", to_string(dataset.type)},
      {"metric", to_string(params.metric)},
      {"graph_degree", std::to_string(params.graph_degree)},
      {"intermediate_graph_degree", std::to_string(params.intermediate_graph_degree)},
      {"knn_algo", to_string(params.knn.algo)},
      {"knn_max_iterations", std::to_string(params.knn.max_iterations)},
      {"knn_termination_threshold", float_text(params.knn.termination_threshold)},
      {"knn_sample_rate", float_text(params.knn.sample_rate)},
      {"reorder", to_string(params.reorder)},
      {"storage", storage_name(params.storage)},
      {"seed", std::to_string(params.seed)},
      {"data_xxh64", hex64(h.finish())},
  };
  return c;
}

bool resume_shard(const shard_checkpoint& c, index& out, std::string& reason) {
  reason.clear();
  const bool have_index = regular_or_missing(c.index_path) == 0;
  if (regular_or_missing(c.fingerprint_path) == ENOENT) {
    if (have_index)
      reason = base_name(c.index_path) + " has no fingerprint (a build stopped while saving it)";
    return false;
  }
  // Read and parse the fingerprint: any flaw is an error, not a rebuild.
  struct stat st {};
  CAGRA_EXPECTS(::stat(c.fingerprint_path.c_str(), &st) == 0, "checkpoint: cannot read '%s': %s",
                c.fingerprint_path.c_str(), std::strerror(errno));
  if (st.st_size > kMaxFingerprintBytes) garbled(c.fingerprint_path, "too large");
  // Parsed with core/text_words.hpp, not a stream (it says why).
  const std::vector<std::string> lines =
      split_lines(read_small_text(c.fingerprint_path, size_t(kMaxFingerprintBytes)));
  if (lines.empty()) garbled(c.fingerprint_path, "empty");
  {
    const std::vector<std::string> head = split_words(lines[0]);
    int version = 0;
    if (head.size() != 2 || head[0] != kMagic || !parse_decimal(head[1], version))
      garbled(c.fingerprint_path, std::string("it does not start with \"") + kMagic + "\"");
    if (version != kVersion)
      garbled(c.fingerprint_path, "format version " + std::to_string(version) +
                                      ", this library reads " + std::to_string(kVersion));
  }
  std::vector<std::pair<std::string, std::string>> have;
  size_t end_line = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    if (lines[i] == "end") {
      end_line = i;
      break;
    }
    const std::vector<std::string> words = split_words(lines[i]);
    if (words.size() != 2) garbled(c.fingerprint_path, "bad line \"" + lines[i] + "\"");
    have.emplace_back(words[0], words[1]);
  }
  if (end_line == 0) garbled(c.fingerprint_path, "no \"end\" line: truncated");
  for (size_t i = end_line + 1; i < lines.size(); ++i)
    if (!lines[i].empty()) garbled(c.fingerprint_path, "text after the \"end\" line");
  // Its keys, in order: the inputs, then the shard file's size and checksum.
  if (have.size() != c.inputs.size() + 2)
    garbled(c.fingerprint_path, std::to_string(have.size()) + " fields, expected " +
                                    std::to_string(c.inputs.size() + 2));
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (have[i].first != c.inputs[i].first)
      garbled(c.fingerprint_path,
              "field \"" + have[i].first + "\" where \"" + c.inputs[i].first + "\" belongs");
  const auto& bytes_kv = have[c.inputs.size()];
  const auto& sum_kv = have[c.inputs.size() + 1];
  if (bytes_kv.first != "index_bytes" || sum_kv.first != "index_checksum" ||
      bytes_kv.second.find_first_not_of("0123456789") != std::string::npos ||
      sum_kv.second.size() != 16 ||
      sum_kv.second.find_first_not_of("0123456789abcdef") != std::string::npos)
    garbled(c.fingerprint_path, "bad index_bytes or index_checksum");
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (have[i].second != c.inputs[i].second) {
      reason = c.inputs[i].first + ": " + have[i].second + " in the checkpoint, " +
               c.inputs[i].second + " now";
      return false;
    }
  if (!have_index) {
    reason = base_name(c.index_path) + " is missing";
    return false;
  }
  uint64_t bytes = 0, sum = 0;
  try {
    index_file_identity(c.index_path, bytes, sum);
  } catch (const error& e) {
    CAGRA_FAIL("checkpoint: %s; delete it to build that shard again", e.what());
  }
  if (std::to_string(bytes) != bytes_kv.second || hex64(sum) != sum_kv.second) {
    reason = base_name(c.index_path) + " is not the file its fingerprint names (" +
             std::to_string(bytes) + " bytes, checksum " + hex64(sum) + "; the fingerprint says " +
             bytes_kv.second + " bytes, " + sum_kv.second + ")";
    return false;
  }
  index x;
  try {
    x = cagra::load(c.index_path);
  } catch (const error& e) {
    CAGRA_FAIL(
        "checkpoint: shard file '%s' cannot be read (%s); delete it to build that shard "
        "again",
        c.index_path.c_str(), e.what());
  }
  const auto value = [&](const char* key) {
    for (const auto& kv : c.inputs)
      if (kv.first == key) return kv.second;
    return std::string();
  };
  CAGRA_EXPECTS(
      std::to_string(x.size()) == value("shard_rows") && std::to_string(x.dim()) == value("dim") &&
          std::to_string(x.graph_degree()) == value("graph_degree") &&
          to_string(x.metric()) == value("metric") && !x.has_labels() && x.deleted_count() == 0,
      "checkpoint: shard file '%s' (%lld x %u, degree %u, %s) does not hold what its "
      "fingerprint says; delete it to build that shard again",
      c.index_path.c_str(), (long long)x.size(), x.dim(), x.graph_degree(), to_string(x.metric()));
  out = std::move(x);
  return true;
}

void save_shard_checkpoint(const shard_checkpoint& c, const index& shard) {
  if (std::remove(c.fingerprint_path.c_str()) != 0 && errno != ENOENT)
    CAGRA_FAIL("checkpoint: cannot remove '%s': %s", c.fingerprint_path.c_str(),
               std::strerror(errno));
  cagra::save(shard, c.index_path);
  uint64_t bytes = 0, sum = 0;
  index_file_identity(c.index_path, bytes, sum);
  // Formatted with std::to_string, not a stream (core/text_words.hpp says why).
  std::string s = std::string(kMagic) + ' ' + std::to_string(kVersion) + '\n';
  for (const auto& kv : c.inputs) s += kv.first + ' ' + kv.second + '\n';
  s += "index_bytes " + std::to_string(bytes) + "\nindex_checksum " + hex64(sum) + "\nend\n";
  const std::string tmp = c.fingerprint_path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  CAGRA_EXPECTS(f != nullptr, "checkpoint: cannot create '%s': %s", tmp.c_str(),
                std::strerror(errno));
  const bool ok = std::fwrite(s.data(), 1, s.size(), f) == s.size() && std::fflush(f) == 0 &&
                  ::fsync(::fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed || std::rename(tmp.c_str(), c.fingerprint_path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    CAGRA_FAIL("checkpoint: cannot write '%s': %s", c.fingerprint_path.c_str(), std::strerror(e));
  }
}

}  // namespace cagra::core
