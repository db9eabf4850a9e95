// Running the `cagra` command-line tool from the tests (test_cli*.cpp): as a separate process
// (CAGRA_CLI_PATH), exactly as a user or script runs it, with its status, stdout and stderr, and
// the failure contract every error must keep.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_data.hpp"

namespace cagra::test {

struct cli_result {
  int status = -1;
  std::string out, err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline cli_result run_cli(const std::vector<std::string>& args) {
  if (std::string(CAGRA_CLI_PATH).empty()) {
    ADD_FAILURE() << "the cagra tool was not built (CAGRA_BUILD_CLI=OFF)";
    return {};
  }
  static int counter = 0;
  const std::string tag = std::to_string(counter++);
  const std::string out = temp_path("cli_out_" + tag), err = temp_path("cli_err_" + tag);
  std::string cmd = shell_quote(CAGRA_CLI_PATH);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote(out) + " 2>" + shell_quote(err) + " </dev/null";
  cli_result r;
  int rc = std::system(cmd.c_str());
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

inline std::string cmd_text(const std::vector<std::string>& args) {
  std::string s = "cagra";
  for (const auto& a : args) s += " " + a;
  return s;
}

/** The failure contract: non-zero status (or exactly `status`), one "error: " line on stderr.
 *  Returns that line. */
inline std::string expect_error(const std::vector<std::string>& args, int status = 0) {
  SCOPED_TRACE(cmd_text(args));
  cli_result r = run_cli(args);
  if (status != 0) {
    EXPECT_EQ(r.status, status) << r.err;
  } else {
    EXPECT_NE(r.status, 0);
    EXPECT_LT(r.status, 128) << "killed by a signal: " << r.err;
  }
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_FALSE(r.err.empty());
  if (r.err.empty()) return r.err;
  EXPECT_EQ(r.err.back(), '\n');
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  return r.err;
}

/** The value of eval's one line "recall@K=0.xxxx". */
inline double parse_recall(const std::string& out, uint32_t k) {
  const std::string prefix = "recall@" + std::to_string(k) + "=";
  EXPECT_EQ(out.rfind(prefix, 0), 0u) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.size(), prefix.size() + 7) << "4 decimals expected: " << out;
  return std::atof(out.c_str() + prefix.size());
}

/** A file of bigann10k (shared_data_dir()). */
inline std::string bigann(const std::string& file) {
  return shared_data_dir() + "/bigann10k/" + file;
}

}  // namespace cagra::test
