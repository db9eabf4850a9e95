// Shared helpers for the tests (see test_data.hpp).
#include "test_data.hpp"

#include <unistd.h>
#include <cstdlib>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

namespace fs = std::filesystem;

namespace cagra::test {

std::string shared_data_dir() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("CAGRA_DATA_DIR")) candidates.emplace_back(env);
  candidates.push_back(std::string(CAGRA_SOURCE_DIR) + "/data/shared");
  candidates.push_back(std::string(CAGRA_SOURCE_DIR) + "/../shared/data");
  for (const auto& c : candidates)
    if (fs::exists(c + "/bigann10k/base.u8bin")) return c;
  ADD_FAILURE() << "test data not found: set CAGRA_DATA_DIR to the folder holding bigann10k/";
  throw cagra::error("test data not found");
}

std::string fashion_dir() {
  std::string dir = "/usr/share/datasets/fashion-mnist";
  if (const char* env = std::getenv("CAGRA_FASHION_DIR")) dir = env;
  if (!fs::exists(dir + "/train-images-idx3-ubyte.gz")) {
    ADD_FAILURE() << "Fashion-MNIST not found in " << dir
                  << " (apt-get install dataset-fashion-mnist; scripts/setup.sh does it)";
    throw cagra::error("Fashion-MNIST not found");
  }
  return dir;
}

real_set bigann10k() {
  std::string d = shared_data_dir() + "/bigann10k";
  real_set s;
  s.base = io::read_matrix(d + "/base.u8bin");
  s.queries = io::read_matrix(d + "/query.u8bin");
  s.truth = io::read_neighbors(d + "/groundtruth.ibin").ids;
  return s;
}

row_bitset random_subset(int64_t rows, double share, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  row_bitset b(rows);
  for (int64_t i = 0; i < rows; ++i)
    if (u(rng) < share) b.set(i);
  if (share > 0 && b.count() == 0) b.set(static_cast<int64_t>(rng() % uint64_t(rows)));
  return b;
}

host_matrix head(const host_matrix& m, int64_t rows) {
  rows = std::min(rows, m.rows());
  host_matrix out(m.type(), rows, m.cols());
  std::memcpy(out.data(), m.data(), out.size_bytes());
  return out;
}

host_matrix slice(const host_matrix& m, int64_t first, int64_t rows) {
  host_matrix out(m.type(), rows, m.cols());
  std::memcpy(out.data(), m.row_bytes(first), out.size_bytes());
  return out;
}

resources cpu() {
  resources r;
  r.target = backend::cpu;
  return r;
}

index ring_index() {
  host_matrix v(dtype::f32, 20, 8);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0, 1);
  for (int64_t i = 0; i < v.rows() * v.cols(); ++i) v.as<float>().data[i] = u(rng);
  std::vector<uint32_t> graph;
  for (uint32_t i = 0; i < 20; ++i)
    for (uint32_t j = 1; j <= 4; ++j) graph.push_back((i + j) % 20);
  return index(metric::l2, std::move(v), std::move(graph), 4);
}

real_set fashion(int64_t n_base, int64_t n_queries) {
  std::string d = fashion_dir();
  real_set s;
  s.base = head(io::read_matrix(d + "/train-images-idx3-ubyte.gz"), n_base);
  s.queries = head(io::read_matrix(d + "/t10k-images-idx3-ubyte.gz"), n_queries);
  knn_graph gt = brute_force_knn({}, metric::l2, s.base, s.queries, 10);
  s.truth = host_matrix(dtype::u32, gt.rows, gt.k);
  std::memcpy(s.truth.data(), gt.ids.data(), s.truth.size_bytes());
  return s;
}

namespace {
struct temp_dir {
  fs::path path;
  temp_dir() {
    path = fs::temp_directory_path() / ("cagra_test_" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};
temp_dir& tmp() {
  static temp_dir t;
  return t;
}
}  // namespace

std::string temp_path(const std::string& name) { return (tmp().path / name).string(); }

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)),
                              std::istreambuf_iterator<char>());
}

}  // namespace cagra::test
