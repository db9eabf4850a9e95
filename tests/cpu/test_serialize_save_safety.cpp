// Tests of cagra::save when saving cannot finish: a missing folder or an empty index (nothing
// written), a write error halfway (the old file kept byte-identical, no temporary left), and the
// temporaries of writers that were killed mid-write (removed by the next save to the same path;
// live processes' and other paths' left alone).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>

#include "serialize_test_helpers.hpp"
#include "test_data.hpp"

namespace fs = std::filesystem;
using cagra::test::read_bytes;
using cagra::test::temp_path;
using cagra::test::write_bytes;
using cagra::test::serialize::count_temp_files;
using cagra::test::serialize::random_index;

TEST(Serialize, SaveIntoMissingFolderThrows) {
  std::string dir = temp_path("no_such_folder");
  std::string p = dir + "/index.cagra";
  EXPECT_THROW(cagra::save(random_index(cagra::dtype::u8, cagra::metric::l2, 20, 4, 3, 1), p),
               cagra::error);
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_FALSE(fs::exists(p));
  EXPECT_THROW(cagra::save(cagra::index(), temp_path("empty_index.cagra")), cagra::error);
  EXPECT_FALSE(fs::exists(temp_path("empty_index.cagra")));
}

// A write error in the middle of the payload (here: the file-size limit, which also applies to
// root, standing in for a full disk) must leave the old file byte-identical and no temporary.
TEST(Serialize, FailedSaveKeepsExistingFile) {
  std::string dir = temp_path("failed_save");
  fs::create_directories(dir);
  std::string p = dir + "/index.cagra";
  cagra::save(random_index(cagra::dtype::u8, cagra::metric::l2, 30, 4, 3, 5), p);
  const std::vector<uint8_t> before = read_bytes(p);
  cagra::index big = random_index(cagra::dtype::f32, cagra::metric::l2, 2000, 32, 8, 6);

  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 4096;
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of being killed
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  try {
    cagra::save(big, p);
  } catch (const cagra::error& e) {
    threw = true;
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);

  EXPECT_TRUE(threw);
  EXPECT_EQ(read_bytes(p), before);
  EXPECT_EQ(count_temp_files(dir), 0);
  EXPECT_EQ(cagra::load(p).size(), 30);
}

// Issue 17, defect 8a: a writer killed mid-write (kill -9, a crash) leaves its temporary file; the
// next save to the same path removes it when its process is gone and it has not been touched for
// a minute. Live processes' temporaries, recent ones and other paths' are left alone.
TEST(Serialize, StaleTemporariesOfThePathAreRemoved) {
  const std::string dir = temp_path("stale_temps");
  fs::remove_all(dir);
  fs::create_directories(dir);
  // A pid that is certainly not running: a child that has exited and been reaped.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  ASSERT_NE(kill(child, 0), 0);
  const std::string dead = std::to_string(child), self = std::to_string(getpid());

  const auto make = [&](const std::string& name, bool old) {
    write_bytes(dir + "/" + name, std::vector<uint8_t>(4096, 0xAB));
    if (old) {  // last written an hour ago
      const auto t = fs::last_write_time(dir + "/" + name) - std::chrono::hours(1);
      fs::last_write_time(dir + "/" + name, t);
    }
  };
  // save's temporaries: <path>.tmp.<pid>.<n>
  make("index.cagra.tmp." + dead + ".0", true);    // stale: removed
  make("index.cagra.tmp." + dead + ".17", true);   // stale: removed
  make("index.cagra.tmp." + dead + ".1", false);   // dead writer, but written just now: kept
  make("index.cagra.tmp." + self + ".3", true);    // a live process (this one): kept
  make("index.cagra.tmp.1.0", true);               // pid 1 is alive: kept
  make("other.cagra.tmp." + dead + ".0", true);    // another path's: kept
  make("index.cagra.tmp." + dead + ".0.x", true);  // not a temporary's name: kept
  make("index.cagra.tmp.x" + dead + ".0", true);   // not a temporary's name: kept
  // the dataset writers' temporaries: .<name>.tmp-<pid>-<n>
  make(".base.fbin.tmp-" + dead + "-2", true);   // stale: removed
  make(".base.fbin.tmp-" + self + "-2", true);   // live: kept
  make(".other.fbin.tmp-" + dead + "-2", true);  // another path's: kept

  cagra::save(random_index(cagra::dtype::f32, cagra::metric::l2, 30, 4, 3, 9),
              dir + "/index.cagra");
  cagra::host_matrix m(cagra::dtype::f32, 2, 2);
  cagra::io::write_matrix(dir + "/base.fbin", m.view());

  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  std::vector<std::string> want = {".base.fbin.tmp-" + self + "-2",
                                   ".other.fbin.tmp-" + dead + "-2",
                                   "base.fbin",
                                   "index.cagra",
                                   "index.cagra.tmp." + dead + ".0.x",
                                   "index.cagra.tmp." + dead + ".1",
                                   "index.cagra.tmp." + self + ".3",
                                   "index.cagra.tmp.1.0",
                                   "index.cagra.tmp.x" + dead + ".0",
                                   "other.cagra.tmp." + dead + ".0"};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(left, want);
  EXPECT_EQ(cagra::load(dir + "/index.cagra").size(), 30);
}
