// Outputs that are not regular files (a FIFO, a device node, a symlink to one) are never replaced:
// the library's writers (cagra::save, io::write_matrix, io::write_neighbors) refuse them, and so
// does the CLI even with --force. Writing through a temporary file and rename() would otherwise
// swap the pipe or device for a plain file (as root, `-o /dev/null --force` replaced /dev/null).
// Issue 17, defect 4.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "test_data.hpp"

namespace fs = std::filesystem;

namespace cagra::test {
namespace {

// ---- small helpers (the CLI runner is test_cli.cpp's, reduced to what is needed here) ---------

struct cli_result {
  int status = -1;
  std::string err;
};

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

cli_result run_cli(const std::vector<std::string>& args) {
  if (std::string(CAGRA_CLI_PATH).empty()) {
    ADD_FAILURE() << "the cagra tool was not built (CAGRA_BUILD_CLI=OFF)";
    return {};
  }
  static int counter = 0;
  const std::string err = temp_path("special_err_" + std::to_string(counter++));
  std::string cmd = shell_quote(CAGRA_CLI_PATH);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >/dev/null 2>" + shell_quote(err) + " </dev/null";
  cli_result r;
  const int rc = std::system(cmd.c_str());
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
  std::ifstream f(err);
  std::stringstream ss;
  ss << f.rdbuf();
  r.err = ss.str();
  return r;
}

// Exit status 1 and one "error: ..." line that says what is wrong with the output.
void expect_refused(const std::vector<std::string>& args) {
  std::string text = "cagra";
  for (const auto& a : args) text += " " + a;
  SCOPED_TRACE(text);
  const cli_result r = run_cli(args);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
}

mode_t file_type(const std::string& path, bool follow = true) {
  struct stat st {};
  const int rc = follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st);
  return rc == 0 ? (st.st_mode & S_IFMT) : 0;
}

bool dev_null_intact() {
  struct stat st {};
  return ::lstat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 &&
         minor(st.st_rdev) == 3;
}

// A fresh folder for one test, so leftover temporaries can be counted.
std::string fresh_dir(const std::string& name) {
  const std::string dir = temp_path(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Entries of `dir` beyond the `made` ones the test created (leftover temporaries).
int extra_entries(const std::string& dir, int made) {
  int n = 0;
  for (auto it = fs::directory_iterator(dir); it != fs::directory_iterator(); ++it) ++n;
  return n - made;
}

index small_index() { return ring_index(); }

// Every library writer on `path`: each must throw a cagra::error naming the problem.
void expect_writers_refuse(const std::string& path, const std::string& ext_path) {
  const index idx = small_index();
  const auto expect_throw = [](const std::function<void()>& f, const std::string& what) {
    SCOPED_TRACE(what);
    try {
      f();
      ADD_FAILURE() << "no error";
    } catch (const cagra::error& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  };
  expect_throw([&] { save(idx, path); }, "save " + path);
  host_matrix ids(dtype::u32, 2, 2);
  std::fill_n(ids.as<uint32_t>().data, 4, 1u);
  expect_throw([&] { io::write_matrix(ext_path, ids.view()); }, "write_matrix");
  expect_throw([&] { io::write_neighbors(ext_path, ids.as<const uint32_t>()); }, "write_neighbors");
}

// ---- the library ------------------------------------------------------------------------------

TEST(SpecialOutputs, LibraryWritersRefuseAFifo) {
  const std::string dir = fresh_dir("special_fifo");
  const std::string fifo = dir + "/out.fifo", fifo_bin = dir + "/out.ibin";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(fifo_bin.c_str(), 0600), 0);
  expect_writers_refuse(fifo, fifo_bin);
  EXPECT_EQ(file_type(fifo), S_IFIFO) << "the FIFO was replaced";
  EXPECT_EQ(file_type(fifo_bin), S_IFIFO) << "the FIFO was replaced";
  EXPECT_EQ(extra_entries(dir, 2), 0) << "a temporary file was left behind";
}

TEST(SpecialOutputs, LibraryWritersRefuseSymlinksToSpecialFiles) {
  const std::string dir = fresh_dir("special_links");
  const std::string fifo = dir + "/real.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string to_fifo = dir + "/to_fifo.cagra", to_fifo_bin = dir + "/to_fifo.ibin";
  const std::string to_null = dir + "/to_null.cagra", to_null_bin = dir + "/to_null.ibin";
  fs::create_symlink(fifo, to_fifo);
  fs::create_symlink(fifo, to_fifo_bin);
  fs::create_symlink("/dev/null", to_null);
  fs::create_symlink("/dev/null", to_null_bin);
  expect_writers_refuse(to_fifo, to_fifo_bin);
  expect_writers_refuse(to_null, to_null_bin);
  for (const auto& link : {to_fifo, to_fifo_bin, to_null, to_null_bin})
    EXPECT_EQ(file_type(link, false), S_IFLNK) << link << " was replaced";
  EXPECT_EQ(file_type(fifo), S_IFIFO);
  EXPECT_TRUE(dev_null_intact());
  EXPECT_EQ(extra_entries(dir, 5), 0) << "a temporary file was left behind";
}

// A device node of our own (root only: mknod needs CAP_MKNOD), so a failure cannot harm /dev.
TEST(SpecialOutputs, LibraryWritersRefuseADeviceNode) {
  const std::string dir = fresh_dir("special_dev");
  const std::string node = dir + "/null.cagra", node_bin = dir + "/null.ibin";
  if (::mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0 ||
      ::mknod(node_bin.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
    GTEST_SKIP() << "mknod is not permitted here (needs root / CAP_MKNOD)";
  expect_writers_refuse(node, node_bin);
  EXPECT_EQ(file_type(node), S_IFCHR) << "the device node was replaced";
  EXPECT_EQ(file_type(node_bin), S_IFCHR) << "the device node was replaced";
  EXPECT_EQ(extra_entries(dir, 2), 0) << "a temporary file was left behind";
}

// A regular file is still replaced as before.
TEST(SpecialOutputs, RegularFilesAreStillReplaced) {
  const std::string dir = fresh_dir("special_regular");
  const std::string p = dir + "/x.cagra";
  write_bytes(p, {1, 2, 3});
  save(small_index(), p);
  EXPECT_EQ(load(p).size(), 20);
}

// ---- the CLI ----------------------------------------------------------------------------------

TEST(SpecialOutputs, CliRefusesSpecialOutputsEvenWithForce) {
  const std::string dir = fresh_dir("special_cli");
  const std::string idx = dir + "/small.cagra";
  save(small_index(), idx);
  host_matrix q(dtype::f32, 3, 8);
  std::fill_n(q.as<float>().data, 24, 0.5f);
  const std::string queries = dir + "/q.fbin";
  io::write_matrix(queries, q.view());
  host_matrix gt(dtype::u32, 3, 3);
  std::fill_n(gt.as<uint32_t>().data, 9, 1u);
  const std::string truth = dir + "/gt.ibin";
  io::write_neighbors(truth, gt.as<const uint32_t>());

  const std::string fifo = dir + "/nn.ibin", fifo_idx = dir + "/fifo.cagra";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(::mkfifo(fifo_idx.c_str(), 0600), 0);
  const std::string to_null = dir + "/to_null.ibin", to_null_json = dir + "/to_null.jsonl";
  fs::create_symlink("/dev/null", to_null);
  fs::create_symlink("/dev/null", to_null_json);

  expect_refused({"search", idx, queries, "-k", "3", "-o", fifo, "--force"});
  expect_refused({"search", idx, queries, "-k", "3", "-o", fifo});
  expect_refused({"search", idx, queries, "-k", "3", "-o", to_null, "--force"});
  expect_refused({"gt", queries, queries, "-k", "2", "-o", fifo, "--force"});
  expect_refused({"build", queries, "-o", fifo_idx, "--force", "--graph-degree", "1"});
  // --json appends: a symlink to a device is refused too (a FIFO would block the open).
  expect_refused({"bench", idx, queries, truth, "-k", "3", "--json", to_null_json});
  EXPECT_EQ(file_type(fifo), S_IFIFO);
  EXPECT_EQ(file_type(fifo_idx), S_IFIFO);
  EXPECT_EQ(file_type(to_null, false), S_IFLNK);
  EXPECT_EQ(file_type(to_null_json, false), S_IFLNK);
  ASSERT_TRUE(dev_null_intact());

  // /dev/null itself, only once the cases above have shown the check works: were it broken, a
  // root run would replace the machine's /dev/null.
  if (!HasFailure()) {
    expect_refused({"build", queries, "-o", "/dev/null", "--force", "--graph-degree", "1"});
    EXPECT_TRUE(dev_null_intact()) << "/dev/null was replaced";
  }
}

}  // namespace
}  // namespace cagra::test
