// A sharded index on disk (docs/index_format.md, "Sharded index"): one cagra::save file per shard,
// PATH.shard-S-of-N, and the manifest PATH, a short text file written last:
//
//   CAGRASHD 1
//   shards N rows R dim D
//   shard S rows r bytes B checksum HHHHHHHHHHHHHHHH file NAME     (N lines, S = 0 .. N-1)
//   end
//
// B is the shard file's size and H its trailing 64-bit checksum (the index file's last 8 bytes,
// which cover all of it): load checks both before reading a shard, so a set mixed from two saves,
// or a shard replaced since, is refused. NAME is a file name in the manifest's folder (no '/').
#include <sys/stat.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <cagra/multi_gpu.hpp>

#include "core/multi_gpu/multi_gpu.hpp"
#include "core/text_words.hpp"

namespace cagra {
namespace {

constexpr char kShardMagic[] = "CAGRASHD";
constexpr uint32_t kShardFormat = 1;
constexpr size_t kMaxShards = 4096;
constexpr off_t kMaxManifestBytes = 1 << 20;

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}
std::string base_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

bool is_sharded_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[8] = {};
  in.read(head, 8);
  return in.gcount() == 8 && std::memcmp(head, kShardMagic, 8) == 0;
}

void save(const sharded_index& idx, const std::string& path) {
  CAGRA_EXPECTS(!path.empty(), "cagra::save: empty file name");
  CAGRA_EXPECTS(idx.shard_count() > 0, "cagra::save('%s'): the sharded index is empty",
                path.c_str());
  const size_t n = idx.shard_count();
  // Formatted with std::to_string, not a stream (core/text_words.hpp says why).
  std::string manifest = std::string(kShardMagic) + ' ' + std::to_string(kShardFormat) + '\n' +
                         "shards " + std::to_string(n) + " rows " + std::to_string(idx.size()) +
                         " dim " + std::to_string(idx.dim()) + '\n';
  for (size_t s = 0; s < n; ++s) {
    const std::string name =
        base_of(path) + ".shard-" + std::to_string(s) + "-of-" + std::to_string(n);
    const std::string file = folder_of(path) + name;
    save(idx.shard(s), file);
    uint64_t bytes = 0, sum = 0;
    core::index_file_identity(file, bytes, sum);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016" PRIx64, sum);
    manifest += "shard " + std::to_string(s) + " rows " + std::to_string(idx.shard(s).size()) +
                " bytes " + std::to_string(bytes) + " checksum " + hex + " file " + name + '\n';
  }
  manifest += "end\n";
  // The manifest last, through a temporary file: an existing set is replaced only by a complete
  // one (its shard files were each replaced by a complete file above).
  const std::string tmp = path + ".tmp-manifest";
  {
    std::FILE* out = std::fopen(tmp.c_str(), "wb");
    CAGRA_EXPECTS(out != nullptr, "cagra::save: cannot create '%s': %s", tmp.c_str(),
                  std::strerror(errno));
    const bool written = std::fwrite(manifest.data(), 1, manifest.size(), out) == manifest.size();
    const bool closed = std::fclose(out) == 0;
    if (!written || !closed) std::remove(tmp.c_str());
    CAGRA_EXPECTS(written && closed, "cagra::save: writing '%s' failed", tmp.c_str());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    CAGRA_FAIL("cagra::save: cannot replace '%s': %s", path.c_str(), std::strerror(e));
  }
}

sharded_index load_sharded(const std::string& path) {
  const char* f = path.c_str();
  struct stat st {};
  CAGRA_EXPECTS(::stat(f, &st) == 0, "cagra::load_sharded: cannot open '%s': %s", f,
                std::strerror(errno));
  CAGRA_EXPECTS(S_ISREG(st.st_mode), "cagra::load_sharded: '%s' is not a regular file", f);
  CAGRA_EXPECTS(is_sharded_file(path),
                "cagra::load_sharded: '%s' is not a sharded index manifest (it does not start "
                "with \"%s\"; a single index loads with cagra::load)",
                f, kShardMagic);
  CAGRA_EXPECTS(st.st_size <= kMaxManifestBytes,
                "cagra::load_sharded: '%s' is %lld bytes, too large for a manifest", f,
                (long long)st.st_size);
  // Parsed with core/text_words.hpp, not a stream (it says why).
  const std::vector<std::string> words =
      core::split_words(core::read_small_text(path, size_t(kMaxManifestBytes)));
  size_t at = 0;
  const auto word = [&]() -> std::string { return at < words.size() ? words[at++] : ""; };
  (void)word();  // the magic, checked by is_sharded_file
  uint32_t version = 0;
  CAGRA_EXPECTS(core::parse_decimal(word(), version) && version == kShardFormat,
                "cagra::load_sharded: '%s': manifest version %u (this library reads %u)", f,
                version, kShardFormat);
  // "KEY NUMBER": the next word is `key` and the one after it a decimal number (into `out`).
  const auto number = [&](const char* key, auto& out) {
    return word() == key && core::parse_decimal(word(), out);
  };
  size_t n = 0;
  long long rows = 0, dim = 0;
  const bool header = number("shards", n) && number("rows", rows) && number("dim", dim);
  CAGRA_EXPECTS(header && n >= 1 && n <= kMaxShards && rows >= 1 && rows <= kMaxRows && dim >= 1,
                "cagra::load_sharded: '%s': bad manifest header (expected \"shards N rows R dim "
                "D\" with 1 <= N <= %zu)",
                f, kMaxShards);
  std::vector<index> shards;
  long long total = 0;
  for (size_t s = 0; s < n; ++s) {
    size_t shard_number = 0;
    long long shard_rows = 0;
    unsigned long long bytes = 0;
    const bool counts = number("shard", shard_number) && number("rows", shard_rows) &&
                        number("bytes", bytes) && word() == "checksum";
    const std::string hex = word();
    const bool named = word() == "file";
    const std::string name = word();
    CAGRA_EXPECTS(counts && named && shard_number == s && shard_rows >= 1 && hex.size() == 16 &&
                      hex.find_first_not_of("0123456789abcdef") == std::string::npos &&
                      !name.empty() && name.find('/') == std::string::npos && name != "." &&
                      name != "..",
                  "cagra::load_sharded: '%s': bad line for shard %zu", f, s);
    const std::string file = folder_of(path) + name;
    uint64_t have_bytes = 0, have_sum = 0;
    try {
      core::index_file_identity(file, have_bytes, have_sum);
    } catch (const error& e) {
      CAGRA_FAIL("cagra::load_sharded: '%s': shard %zu: %s", f, s, e.what());
    }
    const uint64_t want_sum = std::stoull(hex, nullptr, 16);
    CAGRA_EXPECTS(have_bytes == bytes && have_sum == want_sum,
                  "cagra::load_sharded: '%s': shard file '%s' is not the one the manifest names "
                  "(%llu bytes, checksum %016llx; expected %llu bytes, %s): the set was mixed "
                  "from two saves or the file changed since",
                  f, file.c_str(), (unsigned long long)have_bytes, (unsigned long long)have_sum,
                  bytes, hex.c_str());
    index x = load(file);
    CAGRA_EXPECTS(x.size() == shard_rows && x.dim() == uint64_t(dim),
                  "cagra::load_sharded: '%s': shard %zu holds %lld x %u, the manifest says "
                  "%lld x %lld",
                  f, s, (long long)x.size(), x.dim(), shard_rows, dim);
    total += shard_rows;
    shards.push_back(std::move(x));
  }
  CAGRA_EXPECTS(word() == "end" && at == words.size(),
                "cagra::load_sharded: '%s': the manifest does not end with \"end\"", f);
  CAGRA_EXPECTS(total == rows,
                "cagra::load_sharded: '%s': the shards hold %lld rows, the manifest "
                "says %lld",
                f, total, rows);
  return sharded_index(std::move(shards));
}

}  // namespace cagra
