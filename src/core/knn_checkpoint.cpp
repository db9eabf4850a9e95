// Checkpoints of the kNN stage's partitions (core/knn_checkpoint.hpp).
#include "core/knn_checkpoint.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/xxh64.hpp"

namespace cagra::core {
namespace {

constexpr char kMagic[8] = {'C', 'A', 'G', 'R', 'A', 'K', 'N', 'P'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 4 + 4;

template <typename T>
void put(std::string& s, T v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}

template <typename T>
T get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

}  // namespace

uint64_t knn_part_fingerprint(const host_matrix& sub, const std::vector<uint32_t>& rows,
                              int64_t all_rows, metric m, uint32_t k, knn_algo algo,
                              const knn_graph_params& params, uint64_t seed, size_t part,
                              size_t parts) {
  std::string head;
  head.append(kMagic, 8);
  put(head, kVersion);
  put(head, all_rows);
  put(head, sub.rows());
  put(head, sub.cols());
  put(head, uint32_t(sub.type()));
  put(head, uint32_t(m));
  put(head, k);
  put(head, uint32_t(algo));
  put(head, params.max_iterations);
  put(head, params.termination_threshold);
  put(head, params.sample_rate);
  put(head, seed);
  put(head, uint64_t(part));
  put(head, uint64_t(parts));
  checksum h;
  h.update(head.data(), head.size());
  h.update(rows.data(), rows.size() * sizeof(uint32_t));
  h.update(sub.data(), sub.size_bytes());
  return h.finish();
}

std::string knn_part_path(const std::string& dir, size_t part, size_t parts) {
  return dir + "/knn-part-" + std::to_string(part) + "-of-" + std::to_string(parts) + ".bin";
}

bool load_knn_part(const std::string& path, uint64_t fingerprint, int64_t rows, uint32_t k,
                   knn_graph& out, std::string& why) {
  why.clear();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return false;
  const size_t entries = size_t(rows) * k;
  const size_t expected = kHeaderBytes + entries * 8 + 8;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size != expected) {
    why = "size " + std::to_string(ec ? 0 : size) + " bytes, expected " + std::to_string(expected);
    return false;
  }
  std::ifstream f(path, std::ios::binary);
  std::string bytes(expected, '\0');
  if (!f.read(bytes.data(), std::streamsize(expected))) {
    why = "cannot read it";
    return false;
  }
  const char* p = bytes.data();
  checksum h;
  h.update(p, expected - 8);
  if (std::memcmp(p, kMagic, 8) != 0 || get<uint32_t>(p + 8) != kVersion) {
    why = "not a kNN checkpoint of this version";
  } else if (get<uint64_t>(p + expected - 8) != h.finish()) {
    why = "checksum mismatch (a damaged file)";
  } else if (get<uint64_t>(p + 16) != fingerprint || get<int64_t>(p + 24) != rows ||
             get<uint32_t>(p + 32) != k) {
    why = "made from other data or settings";
  }
  if (!why.empty()) return false;
  out.rows = rows;
  out.k = k;
  out.ids.resize(entries);
  out.distances.resize(entries);
  std::memcpy(out.ids.data(), p + kHeaderBytes, entries * 4);
  std::memcpy(out.distances.data(), p + kHeaderBytes + entries * 4, entries * 4);
  return true;
}

void save_knn_part(const std::string& path, uint64_t fingerprint, const knn_graph& g) {
  std::string head;
  head.append(kMagic, 8);
  put(head, kVersion);
  put(head, uint32_t{0});
  put(head, fingerprint);
  put(head, g.rows);
  put(head, g.k);
  put(head, uint32_t{0});
  checksum h;
  h.update(head.data(), head.size());
  h.update(g.ids.data(), g.ids.size() * 4);
  h.update(g.distances.data(), g.distances.size() * 4);
  const uint64_t sum = h.finish();
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(head.data(), std::streamsize(head.size()));
    f.write(reinterpret_cast<const char*>(g.ids.data()), std::streamsize(g.ids.size() * 4));
    f.write(reinterpret_cast<const char*>(g.distances.data()),
            std::streamsize(g.distances.size() * 4));
    f.write(reinterpret_cast<const char*>(&sum), sizeof sum);
    f.flush();
    CAGRA_EXPECTS(f.good(), "checkpoint: cannot write '%s': %s", tmp.c_str(), std::strerror(errno));
  }
  CAGRA_EXPECTS(std::rename(tmp.c_str(), path.c_str()) == 0,
                "checkpoint: cannot rename '%s' to '%s': %s", tmp.c_str(), path.c_str(),
                std::strerror(errno));
}

}  // namespace cagra::core
