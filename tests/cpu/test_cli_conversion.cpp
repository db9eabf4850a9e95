// The CLI's one input conversion, run as a user runs the tool: a float64 vector file (.npy here)
// is read as float32 with one note line on stderr per file, the rule of the Python package
// (docs/vector_formats.md, docs/python.md "Arrays"); the results equal those of the float32 file.
#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>

#include "cli_run.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

/** `values` ([rows, cols]) as a float64 .npy file, numpy's version 1.0 layout. */
void write_f64_npy(const std::string& path, const std::vector<double>& values, int64_t rows,
                   int64_t cols) {
  std::string header = "{'descr': '<f8', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  const auto len = static_cast<uint16_t>(header.size());
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  f.write(reinterpret_cast<const char*>(&len), 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(reinterpret_cast<const char*>(values.data()),
          static_cast<std::streamsize>(values.size() * sizeof(double)));
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

TEST(CliConversion, Float64NpyIsReadAsFloat32WithANote) {
  const int64_t rows = 300, cols = 8, nq = 4;
  host_matrix data(dtype::f32, rows, cols);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(0, 1);
  for (int64_t i = 0; i < rows * cols; ++i) data.as<float>().data[i] = u(rng);
  const float* x = data.as<const float>().data;
  const std::vector<double> wide(x, x + rows * cols);  // exactly the float32 values
  host_matrix q(dtype::f32, nq, cols);
  std::copy(x, x + nq * cols, q.as<float>().data);
  const std::string base32 = temp_path("f64_base32.npy"), base64 = temp_path("f64_base64.npy");
  const std::string q32 = temp_path("f64_q32.npy"), q64 = temp_path("f64_q64.npy");
  io::write_matrix(base32, data.view());
  io::write_matrix(q32, q.view());
  write_f64_npy(base64, wide, rows, cols);
  write_f64_npy(q64, std::vector<double>(x, x + nq * cols), nq, cols);
  const std::string note = " is float64, converted to float32\n";

  const std::string idx32 = temp_path("f64_32.cagra"), idx64 = temp_path("f64_64.cagra");
  cli_result r = run_cli(
      {"build", base32, "-o", idx32, "--force", "--backend", "cpu", "--graph-degree", "16"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_of(r.err, "note: "), 0u) << r.err;
  r = run_cli(
      {"build", base64, "-o", idx64, "--force", "--backend", "cpu", "--graph-degree", "16"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_of(r.err, "note: "), 1u) << r.err;
  EXPECT_EQ(count_of(r.err, "note: " + base64 + note), 1u) << r.err;
  EXPECT_NE(r.out.find("x 8 f32"), std::string::npos) << r.out;
  EXPECT_EQ(file_bytes(idx32), file_bytes(idx64));  // the CPU build is deterministic

  const std::string nn32 = temp_path("f64_nn32.ibin"), nn64 = temp_path("f64_nn64.ibin");
  r = run_cli({"search", idx32, q32, "-k", "5", "-o", nn32, "--force", "--backend", "cpu"});
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_cli({"search", idx32, q64, "-k", "5", "-o", nn64, "--force", "--backend", "cpu"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_of(r.err, "note: " + q64 + note), 1u) << r.err;
  EXPECT_EQ(file_bytes(nn32), file_bytes(nn64));

  const std::string gt32 = temp_path("f64_gt32.ibin"), gt64 = temp_path("f64_gt64.ibin");
  r = run_cli({"gt", base32, q32, "-k", "5", "-o", gt32, "--force"});
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_cli({"gt", base64, q64, "-k", "5", "-o", gt64, "--force"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(count_of(r.err, "note: "), 2u) << r.err;
  EXPECT_EQ(file_bytes(gt32), file_bytes(gt64));

  // A float64 value beyond float32's range is an error naming the file, as in Python.
  std::vector<double> huge = wide;
  huge[3 * cols + 2] = 1e300;
  const std::string bad = temp_path("f64_huge.npy");
  write_f64_npy(bad, huge, rows, cols);
  r = run_cli({"build", bad, "-o", temp_path("f64_huge.cagra"), "--force", "--backend", "cpu"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("does not fit in float32"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace cagra::test
