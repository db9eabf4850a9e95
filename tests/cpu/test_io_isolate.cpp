// The reader process that keeps bad input from hurting the caller (src/core/io/isolate.hpp; the
// HDF5 reader runs libhdf5 in it, test_io_hdf5*.cpp): results and meta values come back in both
// modes (reader process and in-process), errors keep their message, crashes (also with SIGCHLD
// ignored), stalls and the memory limit are errors naming the file, and what the child prints is
// quoted in the message, never printed.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/error.hpp>

#include "core/io/isolate.hpp"
#include "io_hdf5_test_helpers.hpp"
#include "test_data.hpp"

using namespace cagra;
using cagra::test::temp_path;
using cagra::test::io_hdf5::expect_error;
using cagra::test::io_hdf5::kSanitized;
using cagra::test::io_hdf5::peak_rss;

namespace {
using io::detail::isolate_context;
using io::detail::isolate_limits;
using io::detail::isolate_outcome;

isolate_limits limits(bool in_process, double stall = 60) {
  isolate_limits l;
  l.in_process = in_process;
  l.stall_seconds = stall;
  return l;
}

// run_isolated with a sink that fills `out` (and records the meta values it was given).
isolate_outcome run_isolated(const char* file, const isolate_limits& l,
                             const std::function<void(isolate_context&)>& work,
                             std::vector<uint8_t>* out = nullptr, uint64_t* sink_meta = nullptr) {
  return io::detail::run_isolated(file, "libfoo", l, work, [&](const uint64_t* meta, uint64_t n) {
    if (sink_meta != nullptr) std::copy(meta, meta + 8, sink_meta);
    if (out == nullptr) CAGRA_FAIL("no result expected");
    out->assign(n, 0);
    return static_cast<void*>(out->data());
  });
}
}  // namespace

TEST(IoIsolate, ResultAndMetaComeBackInBothModes) {
  for (bool in_process : {false, true}) {
    SCOPED_TRACE(in_process ? "in-process" : "reader process");
    const uint64_t n = (uint64_t{3} << 20) + 123;  // not a multiple of a page or of a piece
    const uint64_t piece = (uint64_t{64} << 10) + 7;
    std::vector<uint8_t> out;
    uint64_t sink_meta[8] = {};
    const isolate_outcome r = run_isolated(
        "f.h5", limits(in_process),
        [&](isolate_context& ctx) {
          ctx.meta[0] = 42;
          ctx.begin_result(n, piece, 0);
          // Pieces in reverse order: only the offsets say where they go.
          for (uint64_t end = n; end > 0;) {
            const uint64_t len = std::min(piece, end);
            const uint64_t at = end - len;
            auto* p = static_cast<uint8_t*>(ctx.stage(at, len));
            for (uint64_t i = 0; i < len; ++i) p[i] = static_cast<uint8_t>((at + i) * 7 + 1);
            ctx.commit(at, len);
            end = at;
          }
          ctx.meta[7] = ~uint64_t{0};
        },
        &out, sink_meta);
    EXPECT_TRUE(r.has_result);
    EXPECT_EQ(sink_meta[0], 42u);  // the meta values set before begin_result reach the sink
    EXPECT_EQ(r.meta[0], 42u);
    EXPECT_EQ(r.meta[7], ~uint64_t{0});
    ASSERT_EQ(out.size(), n);
    for (uint64_t i = 0; i < n; ++i) ASSERT_EQ(out[i], static_cast<uint8_t>(i * 7 + 1)) << i;
    // No result at all (an optional dataset that is absent) is fine too: the sink is not called.
    const isolate_outcome none =
        run_isolated("f.h5", limits(in_process), [](isolate_context& ctx) { ctx.meta[1] = 9; });
    EXPECT_FALSE(none.has_result);
    EXPECT_EQ(none.meta[1], 9u);
  }
}

TEST(IoIsolate, ErrorsKeepTheirMessage) {
  for (bool in_process : {false, true}) {
    expect_error(
        [&] {
          run_isolated("x.h5", limits(in_process),
                       [](isolate_context&) { CAGRA_FAIL("x.h5: the dataset is %d-D", 3); });
        },
        {"x.h5: the dataset is 3-D"});
    // An error from the caller's sink (say, no memory for the matrix) stops the child too.
    expect_error(
        [&] {
          run_isolated("y.h5", limits(in_process), [](isolate_context& ctx) {
            ctx.begin_result(1 << 20, 4096, 0);
            for (uint64_t at = 0; at < (1 << 20); at += 4096) {
              ctx.stage(at, 4096);
              ctx.commit(at, 4096);
            }
          });
        },
        {"no result expected"});
  }
}

#ifdef __linux__
TEST(IoIsolate, CrashInTheChildIsAnError) {
  expect_error(
      [] {
        run_isolated("bad.h5", limits(false), [](isolate_context& ctx) {
          ctx.phase("parsing the superblock");
          ::raise(SIGSEGV);
        });
      },
      {"bad.h5", "libfoo crashed reading this file (the file is corrupt)", "SIGSEGV",
       "parsing the superblock"});
  // abort() inside the library (a failed assertion) is a crash too.
  expect_error([] { run_isolated("a.h5", limits(false), [](isolate_context&) { abort(); }); },
               {"a.h5", "crashed", "SIGABRT"});
  expect_error([] { run_isolated("e.h5", limits(false), [](isolate_context&) { ::_exit(7); }); },
               {"e.h5", "exited with status 7"});
  // A crash halfway through the data.
  std::vector<uint8_t> out;
  expect_error(
      [&] {
        run_isolated(
            "half.h5", limits(false),
            [](isolate_context& ctx) {
              ctx.begin_result(1 << 20, 4096, 0);
              ctx.phase("reading the dataset");
              ctx.stage(0, 4096);
              ctx.commit(0, 4096);
              ::raise(SIGBUS);
            },
            &out);
      },
      {"half.h5", "crashed", "SIGBUS while reading the dataset"});
}

// A process that ignores SIGCHLD has its children reaped by the kernel, so the exit status is
// lost: the shared header still says whether the work finished.
TEST(IoIsolate, IgnoredSigchldStillWorks) {
  struct sigaction old {};
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGCHLD, &ignore, &old), 0);
  std::vector<uint8_t> out;
  const isolate_outcome r = run_isolated(
      "ok.h5", limits(false),
      [](isolate_context& ctx) {
        ctx.meta[0] = 3;
        ctx.begin_result(100, 64, 0);
        std::memset(ctx.stage(0, 64), 7, 64);
        ctx.commit(0, 64);
        ::usleep(50 * 1000);  // still running when the parent first looks
        std::memset(ctx.stage(64, 36), 8, 36);
        ctx.commit(64, 36);
      },
      &out);
  EXPECT_EQ(r.meta[0], 3u);
  ASSERT_EQ(out.size(), 100u);
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(out[99], 8);
  expect_error(
      [] { run_isolated("bad.h5", limits(false), [](isolate_context&) { ::raise(SIGSEGV); }); },
      {"bad.h5", "probably a crash", "exit status is lost"});
  expect_error(
      [] {
        run_isolated("x.h5", limits(false), [](isolate_context&) { CAGRA_FAIL("x.h5: bad"); });
      },
      {"x.h5: bad"});
  sigaction(SIGCHLD, &old, nullptr);
}

// What the child prints never reaches the caller's stdout or stderr; after a crash, its first
// line is quoted in the message (libhdf5's assertion text, a sanitizer's report).
TEST(IoIsolate, ChildOutputIsQuotedNotPrinted) {
  const std::string log = temp_path("stderr.txt");
  fflush(stdout);
  fflush(stderr);
  const int saved_out = ::dup(STDOUT_FILENO);
  const int saved_err = ::dup(STDERR_FILENO);
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ::dup2(fd, STDOUT_FILENO);
  ::dup2(fd, STDERR_FILENO);
  ::close(fd);
  std::string msg;
  try {
    run_isolated("a.h5", limits(false), [](isolate_context&) {
      std::printf("\n=======\n");
      std::fprintf(stderr, "H5C.c:42: H5C_protect: Assertion `entry' failed.\n\x1b[0m more\n");
      std::fflush(stderr);
      abort();
    });
  } catch (const cagra::error& e) {
    msg = e.what();
  }
  ::dup2(saved_out, STDOUT_FILENO);
  ::dup2(saved_err, STDERR_FILENO);
  ::close(saved_out);
  ::close(saved_err);
  EXPECT_NE(msg.find("a.h5: libfoo crashed reading this file (the file is corrupt): SIGABRT"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("(it printed: H5C.c:42: H5C_protect: Assertion `entry' failed.)"),
            std::string::npos)
      << msg;
  EXPECT_TRUE(cagra::test::read_bytes(log).empty()) << "the child printed to the caller";
}

TEST(IoIsolate, StalledChildIsKilled) {
  const auto t0 = std::chrono::steady_clock::now();
  expect_error(
      [] {
        run_isolated("slow.h5", limits(false, 0.5), [](isolate_context& ctx) {
          ctx.phase("reading the dataset");
          ::sleep(60);
        });
      },
      {"slow.h5", "made no progress for 0.5 s while reading the dataset"});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  // Slow but advancing work is not a stall: 1.2 s in all, never 0.4 s without progress.
  const isolate_outcome r = run_isolated("ok.h5", limits(false, 0.4), [](isolate_context& ctx) {
    for (int i = 0; i < 12; ++i) {
      ::usleep(100 * 1000);
      ctx.progress();
    }
    ctx.meta[1] = 5;
  });
  EXPECT_EQ(r.meta[1], 5u);
}

TEST(IoIsolate, MemoryIsLimitedInTheChildOnly) {
  // A sanitizer's allocator reports the failed allocation itself (into its log file when
  // scripts/sanitize.sh sets log_path, which fails the job): the limit is tested without one.
  if (kSanitized) GTEST_SKIP() << "a sanitizer's allocator reports the child's failed allocation";
  const uint64_t before = peak_rss();
  isolate_limits l = limits(false);
  l.setup_bytes = uint64_t{64} << 20;
  // 1 GiB before the result begins: beyond the 64 MiB setup allowance.
  expect_error(
      [&] {
        run_isolated("big.h5", l, [](isolate_context& ctx) {
          ctx.phase("opening the file");
          std::vector<uint8_t> v(uint64_t{1} << 30, 1);
          ctx.meta[0] = v[12345];
        });
      },
      {"big.h5", "out of memory", "while opening the file", "64 MiB"});
  // The stated working memory raises the limit once the result begins.
  std::vector<uint8_t> out;
  const isolate_outcome r = run_isolated(
      "ok.h5", l,
      [](isolate_context& ctx) {
        ctx.begin_result(4096, 4096, uint64_t{256} << 20);
        std::vector<uint8_t> work(uint64_t{200} << 20, 1);
        std::memset(ctx.stage(0, 4096), work[99], 4096);
        ctx.commit(0, 4096);
      },
      &out);
  EXPECT_TRUE(r.has_result);
  ASSERT_EQ(out.size(), 4096u);
  EXPECT_EQ(out[4095], 1);
  // None of the child's allocations reached this process.
  EXPECT_LT(peak_rss() - before, uint64_t{64} << 20);
}
#endif
