// run_isolated (isolate.hpp): the work runs in a forked child; the caller's process streams the
// result into its own buffer and turns every way the child can end into one cagra::error.
//
// This file is the conductor: the in-process mode, the channel's set-up (memfd, socketpair,
// output pipe), fork(), and the watchdog loop that feeds the receiver, watches the progress
// counter for stalls and reads the child's end. The protocol is in isolate_channel.hpp, the
// child's side in isolate_child.cpp, the caller's helpers in isolate_parent.cpp.
#include "core/io/isolate.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include <cagra/error.hpp>

#include "core/io/isolate_channel.hpp"

#ifdef CAGRA_ISOLATE_FORK
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/io/isolate_child.hpp"
#include "core/io/isolate_parent.hpp"
#endif

namespace cagra::io::detail {

namespace {

// The work writes straight into the caller's buffer.
class local_context final : public isolate_context {
 public:
  explicit local_context(const isolate_sink& sink) : sink_(sink) {}
  void begin_result(uint64_t bytes, uint64_t, uint64_t) override {
    CAGRA_EXPECTS(!begun_, "isolate_context::begin_result called twice");
    dest_ = static_cast<uint8_t*>(sink_(meta, bytes));
    bytes_ = bytes;
    begun_ = true;
  }
  void* stage(uint64_t offset, uint64_t n) override {
    CAGRA_EXPECTS(begun_ && offset <= bytes_ && n <= bytes_ - offset,
                  "isolate_context::stage out of the result's bounds");
    return dest_ + offset;
  }
  void commit(uint64_t, uint64_t) override {}
  void progress() override {}
  void phase(const char*) override {}
  uint64_t memory_budget() const override { return 0; }
  bool begun() const { return begun_; }

 private:
  const isolate_sink& sink_;
  uint8_t* dest_ = nullptr;
  uint64_t bytes_ = 0;
  bool begun_ = false;
};

isolate_outcome run_local(const std::function<void(isolate_context&)>& work,
                          const isolate_sink& sink) {
  local_context ctx(sink);
  work(ctx);
  isolate_outcome out;
  std::copy(ctx.meta, ctx.meta + 8, out.meta);
  out.has_result = ctx.begun();
  return out;
}

}  // namespace

#ifndef CAGRA_ISOLATE_FORK

isolate_outcome run_isolated(const std::string&, const char*, const isolate_limits&,
                             const std::function<void(isolate_context&)>& work,
                             const isolate_sink& sink) {
  return run_local(work, sink);
}

#else  // CAGRA_ISOLATE_FORK

isolate_outcome run_isolated(const std::string& file, const char* library,
                             const isolate_limits& limits,
                             const std::function<void(isolate_context&)>& work,
                             const isolate_sink& sink) {
  using namespace isolate_impl;
  if (limits.in_process) return run_local(work, sink);
  const char* f = file.c_str();
  const uint64_t hbytes = ring_offset();  // the header's pages
  fd_owner mem(::memfd_create("cagra-reader", MFD_CLOEXEC));
  CAGRA_EXPECTS(mem.get() >= 0, "%s: cannot start the %s reader process: memfd_create: %s", f,
                library, std::strerror(errno));
  CAGRA_EXPECTS(::ftruncate(mem.get(), static_cast<off_t>(hbytes)) == 0,
                "%s: cannot start the %s reader process: ftruncate: %s", f, library,
                std::strerror(errno));
  mapping hmap;
  CAGRA_EXPECTS(hmap.map(mem.get(), 0, hbytes, PROT_READ | PROT_WRITE),
                "%s: cannot start the %s reader process: mmap: %s", f, library,
                std::strerror(errno));
  auto* h = reinterpret_cast<shared_header*>(hmap.get());
  put_text(h->phase, sizeof(h->phase), "starting");
  int sv[2] = {-1, -1};
  CAGRA_EXPECTS(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0,
                "%s: cannot start the %s reader process: socketpair: %s", f, library,
                std::strerror(errno));
  fd_owner ours(sv[0]);
  fd_owner theirs(sv[1]);
  int op[2] = {-1, -1};
  CAGRA_EXPECTS(::pipe2(op, O_CLOEXEC) == 0, "%s: cannot start the %s reader process: pipe: %s", f,
                library, std::strerror(errno));
  output_capture output(op[0]);
  fd_owner output_end(op[1]);
  ::fcntl(op[0], F_SETFL, ::fcntl(op[0], F_GETFL) | O_NONBLOCK);

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  CAGRA_EXPECTS(pid >= 0, "%s: cannot start the %s reader process: fork: %s", f, library,
                std::strerror(errno));
  if (pid == 0) {
    ::close(sv[0]);
    ::close(op[0]);
    child_main(h, mem.get(), sv[1], op[1], parent, file, library, limits, work);
  }
  theirs.reset();
  output_end.reset();

  child_process child(pid);
  receiver rx(file, library, h, mem.get(), ours.get(), sink);
  uint64_t seen = __atomic_load_n(&h->progress, __ATOMIC_RELAXED);
  auto last_change = std::chrono::steady_clock::now();
  bool stalled = false;
  int how = 0;
  for (;;) {
    const bool got = rx.drain();
    output.drain();
    how = child.try_reap();
    if (how != 0) {
      rx.drain();  // what the child sent and printed before it ended
      output.drain();
      break;
    }
    const uint64_t p = __atomic_load_n(&h->progress, __ATOMIC_RELAXED);
    const auto now = std::chrono::steady_clock::now();
    if (got || p != seen) {
      seen = p;
      last_change = now;
    } else if (std::chrono::duration<double>(now - last_change).count() >= limits.stall_seconds) {
      stalled = true;
      child.kill_now();
      how = child.reap_within(10.0);
      break;
    }
    child.wait_event(ours.get(), output.fd(), 200);
  }

  char phase[sizeof(h->phase)];
  put_text(phase, sizeof(phase), h->phase);
  const uint32_t state = __atomic_load_n(&h->state, __ATOMIC_ACQUIRE);
  const int status = child.status();
  const std::string said = output.quote();
  if (stalled) {
    CAGRA_FAIL(
        "%s: %s made no progress for %g s while %s and was stopped: the file is corrupt (or "
        "its storage does not respond)",
        f, library, limits.stall_seconds, phase);
  }
  const bool exited_ok = how == 1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  const bool exited_failed = how == 1 && WIFEXITED(status) && WEXITSTATUS(status) == kExitFailed;
  if (state == kFailed && (exited_failed || how == -1)) {
    h->message[sizeof(h->message) - 1] = '\0';
    throw cagra::error(h->message);  // the child's own message, location included
  }
  if (state == kDone && (exited_ok || how == -1)) {
    CAGRA_EXPECTS(rx.complete(),
                  "%s: the %s reader process ended after %llu of %llu bytes of the data", f,
                  library, (unsigned long long)rx.received(), (unsigned long long)rx.bytes());
    isolate_outcome out;
    std::copy(h->meta, h->meta + 8, out.meta);
    out.has_result = rx.begun();
    return out;
  }
  if (how == 1 && WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    if (is_crash(sig)) {
      CAGRA_FAIL("%s: %s crashed reading this file (the file is corrupt): %s while %s%s", f,
                 library, signal_name(sig), phase, said.c_str());
    }
    if (sig == SIGKILL) {
      CAGRA_FAIL(
          "%s: the %s reader process was killed (SIGKILL, perhaps by the out-of-memory "
          "killer) while %s%s",
          f, library, phase, said.c_str());
    }
    CAGRA_FAIL("%s: the %s reader process was stopped by %s (signal %d) while %s%s", f, library,
               signal_name(sig), sig, phase, said.c_str());
  }
  if (how == 1 && WIFEXITED(status)) {
    CAGRA_FAIL("%s: the %s reader process exited with status %d while %s%s", f, library,
               WEXITSTATUS(status), phase, said.c_str());
  }
  CAGRA_FAIL(
      "%s: the %s reader process ended while %s without a result, probably a crash (its exit "
      "status is lost: this process ignores SIGCHLD or reaps every child)%s",
      f, library, phase, said.c_str());
}

#endif  // CAGRA_ISOLATE_FORK

}  // namespace cagra::io::detail
