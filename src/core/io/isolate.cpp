// run_isolated (isolate.hpp): the work runs in a forked child; the caller's process streams the
// result into its own buffer and turns every way the child can end into one cagra::error.
//
// Shared state is a memfd created before fork(). Its first page(s) are a header that both
// processes map: state, a progress counter, the current phase, the error message and the meta
// values. When the work begins its result, the child grows the memfd by a ring of two staging
// slots (each the work's largest piece) and maps it; the parent maps the same ring. A
// SOCK_SEQPACKET socketpair carries the flow control: the child sends "piece in slot s goes to
// [offset, offset + n)", the parent copies it into the caller's buffer and sends the slot back.
// So the data is copied once, into memory the caller allocated anyway, and the staging pages
// are touched once per slot, not once per byte of the result (fresh pages cost far more than a
// copy). send() with MSG_NOSIGNAL means a dead child can never raise SIGPIPE in the caller.
//
// The child bounds its address space with RLIMIT_AS, relative to the size it inherited (a CUDA
// or Python parent can have tens of GB of address space reserved): `setup_bytes` more until it
// begins its result, then what it is already using plus the ring and its stated working memory.
// So a corrupt file that makes the library allocate gigabytes fails inside the child.
#include "core/io/isolate.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include <cagra/error.hpp>

#if defined(__linux__)
#define CAGRA_ISOLATE_FORK 1
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
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

namespace {

// Header states, written by the child; 0 (the zero-filled header) while it runs.
constexpr uint32_t kDone = 1;
constexpr uint32_t kFailed = 2;
constexpr int kExitFailed = 3;  // the child's exit status when the header holds an error message
constexpr uint64_t kSlots = 2;  // the ring: the child fills one slot while the parent copies one
// Address space allowed above the ring and the stated working memory: the library's own small
// allocations after the result begins (type conversion buffers, caches).
constexpr uint64_t kSlackBytes = uint64_t{64} << 20;

struct shared_header {
  uint32_t state;
  uint32_t reserved;
  uint64_t progress;    // bumped by the child; the parent's stall clock watches it
  uint64_t bytes;       // the result's size, once begun
  uint64_t slot_bytes;  // the size of each ring slot, once begun
  uint64_t meta[8];
  char phase[128];
  char message[4096];
};

// Messages on the socketpair.
enum : uint32_t { kMsgBegin = 1, kMsgPiece = 2 };
struct message {
  uint32_t type;
  uint32_t slot;
  uint64_t offset;
  uint64_t n;
};

uint64_t page_bytes() {
  const long p = ::sysconf(_SC_PAGESIZE);
  return p > 0 ? static_cast<uint64_t>(p) : 4096;
}

uint64_t round_to_page(uint64_t n) {
  const uint64_t p = page_bytes();
  return (n + p - 1) / p * p;
}

// Copies a NUL-terminated string into a fixed buffer, always terminating it.
void put_text(char* dst, size_t cap, const char* src) {
  size_t n = 0;
  for (; src[n] != '\0' && n + 1 < cap; ++n) dst[n] = src[n];
  dst[n] = '\0';
}

// The current address-space size (VmSize), from /proc/self/statm; 0 when unknown. Plain system
// calls only: it runs in a child forked from a possibly multi-threaded process.
uint64_t address_space_now() {
  const int fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[64];
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  uint64_t pages = 0;
  for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; ++i)
    pages = pages * 10 + static_cast<uint64_t>(buf[i] - '0');
  return pages * page_bytes();
}

class child_context final : public isolate_context {
 public:
  child_context(shared_header* h, int mem_fd, int sock, uint64_t ring_offset)
      : h_(h), mem_fd_(mem_fd), sock_(sock), ring_offset_(ring_offset) {
    struct rlimit rl {};
    if (::getrlimit(RLIMIT_AS, &rl) == 0) {
      cap_ = rl.rlim_cur;  // never above what the caller's process was already allowed
      hard_ = rl.rlim_max;
    }
    base_ = address_space_now();
  }

  // Sets the address-space limit to base + `extra` (bounded by the inherited limits).
  void limit_to(uint64_t extra) {
    if (base_ == 0) return;  // no /proc: leave the inherited limit
    struct rlimit rl {};
    rl.rlim_cur = std::min<rlim_t>({static_cast<rlim_t>(base_ + extra), cap_, hard_});
    rl.rlim_max = hard_;
    if (::setrlimit(RLIMIT_AS, &rl) == 0) budget_ = extra;
  }

  void begin_result(uint64_t bytes, uint64_t max_piece, uint64_t working_bytes) override {
    CAGRA_EXPECTS(!begun_, "isolate_context::begin_result called twice");
    begun_ = true;
    slot_bytes_ = round_to_page(std::max<uint64_t>(1, std::min(max_piece, bytes)));
    const uint64_t ring = kSlots * slot_bytes_;
    // Raise the limit first (the ring's mapping counts), from what setup already uses.
    const uint64_t now = address_space_now();
    limit_to((now > base_ ? now - base_ : 0) + ring + working_bytes + kSlackBytes);
    CAGRA_EXPECTS(::ftruncate(mem_fd_, static_cast<off_t>(ring_offset_ + ring)) == 0,
                  "cannot create the %llu-byte shared staging buffer: %s", (unsigned long long)ring,
                  std::strerror(errno));
    void* p = ::mmap(nullptr, static_cast<size_t>(ring), PROT_READ | PROT_WRITE, MAP_SHARED,
                     mem_fd_, static_cast<off_t>(ring_offset_));
    CAGRA_EXPECTS(p != MAP_FAILED, "cannot map the %llu-byte shared staging buffer: %s",
                  (unsigned long long)ring, std::strerror(errno));
    ring_ = static_cast<uint8_t*>(p);
    h_->bytes = bytes;
    h_->slot_bytes = slot_bytes_;
    std::copy(meta, meta + 8, h_->meta);
    send_message({kMsgBegin, 0, 0, bytes});
  }

  void* stage(uint64_t offset, uint64_t n) override {
    CAGRA_EXPECTS(begun_ && n <= slot_bytes_ && offset <= h_->bytes && n <= h_->bytes - offset,
                  "isolate_context::stage: %llu bytes at %llu do not fit a %llu-byte slot or "
                  "the %llu-byte result",
                  (unsigned long long)n, (unsigned long long)offset,
                  (unsigned long long)slot_bytes_, (unsigned long long)h_->bytes);
    if (free_ == 0) {  // both slots are with the parent: wait until it hands one back
      uint8_t token = 0;
      ssize_t r;
      do {
        r = ::recv(sock_, &token, 1, 0);
      } while (r < 0 && errno == EINTR);
      CAGRA_EXPECTS(r == 1, "the reading process stopped taking data");
      ++free_;
    }
    return ring_ + next_ * slot_bytes_;
  }

  void commit(uint64_t offset, uint64_t n) override {
    send_message({kMsgPiece, static_cast<uint32_t>(next_), offset, n});
    --free_;
    next_ = (next_ + 1) % kSlots;
    progress();
  }

  void progress() override { __atomic_add_fetch(&h_->progress, 1, __ATOMIC_RELAXED); }
  void phase(const char* what) override {
    put_text(h_->phase, sizeof(h_->phase), what);
    progress();
  }
  uint64_t memory_budget() const override { return budget_; }

 private:
  void send_message(const message& m) {
    ssize_t r;
    do {
      r = ::send(sock_, &m, sizeof(m), MSG_NOSIGNAL);
    } while (r < 0 && errno == EINTR);
    CAGRA_EXPECTS(r == static_cast<ssize_t>(sizeof(m)), "the reading process stopped taking data");
  }

  shared_header* h_;
  int mem_fd_;
  int sock_;
  uint64_t ring_offset_;
  uint8_t* ring_ = nullptr;
  uint64_t slot_bytes_ = 0;
  uint64_t free_ = kSlots;
  uint64_t next_ = 0;
  uint64_t base_ = 0;
  rlim_t cap_ = RLIM_INFINITY;
  rlim_t hard_ = RLIM_INFINITY;
  uint64_t budget_ = 0;
  bool begun_ = false;
};

[[noreturn]] void child_main(shared_header* h, int mem_fd, int sock, int output, pid_t parent,
                             const std::string& file, const char* library,
                             const isolate_limits& limits,
                             const std::function<void(isolate_context&)>& work) {
  // Die with the caller: if it is killed while we run, nobody would wait for us.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
  // Whatever the library (or a sanitizer, or abort()) prints goes to the parent, which quotes
  // it in its error message, never to the caller's stdout or stderr.
  ::dup2(output, STDOUT_FILENO);
  ::dup2(output, STDERR_FILENO);
  if (output > STDERR_FILENO) ::close(output);
  // The caller's handlers (Python's, a crash reporter's) must not run here: a crash has to end
  // this process with the signal so that the parent sees it.
  for (int s = 1; s < NSIG; ++s) {
    if (s != SIGKILL && s != SIGSTOP) ::signal(s, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct rlimit no_core {};
  if (::getrlimit(RLIMIT_CORE, &no_core) == 0) {
    no_core.rlim_cur = 0;  // a core of the caller's whole address space helps nobody
    ::setrlimit(RLIMIT_CORE, &no_core);
  }
  child_context ctx(h, mem_fd, sock, round_to_page(sizeof(shared_header)));
  ctx.limit_to(limits.setup_bytes);
  char text[512];
  try {
    work(ctx);
    std::copy(ctx.meta, ctx.meta + 8, h->meta);
    __atomic_store_n(&h->state, kDone, __ATOMIC_RELEASE);
    ::_exit(0);
  } catch (const cagra::error& e) {
    put_text(h->message, sizeof(h->message), e.what());
  } catch (const std::bad_alloc&) {
    std::snprintf(text, sizeof(text),
                  "%s: %s ran out of memory while %s: it needed more than the %llu MiB that "
                  "reading this file can justify (the file is corrupt)",
                  file.c_str(), library, h->phase, (unsigned long long)(ctx.memory_budget() >> 20));
    put_text(h->message, sizeof(h->message), text);
  } catch (const std::exception& e) {
    std::snprintf(text, sizeof(text), "%s: the %s reader failed while %s: %s", file.c_str(),
                  library, h->phase, e.what());
    put_text(h->message, sizeof(h->message), text);
  } catch (...) {
    std::snprintf(text, sizeof(text), "%s: the %s reader failed while %s (unknown exception)",
                  file.c_str(), library, h->phase);
    put_text(h->message, sizeof(h->message), text);
  }
  __atomic_store_n(&h->state, kFailed, __ATOMIC_RELEASE);
  ::_exit(kExitFailed);
}

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGABRT: return "SIGABRT";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGSYS: return "SIGSYS";
    case SIGTRAP: return "SIGTRAP";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    default: return "a signal";
  }
}

bool is_crash(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT || sig == SIGFPE || sig == SIGILL ||
         sig == SIGSYS || sig == SIGTRAP;
}

class fd_owner {
 public:
  explicit fd_owner(int fd = -1) : fd_(fd) {}
  ~fd_owner() { reset(); }
  fd_owner(const fd_owner&) = delete;
  fd_owner& operator=(const fd_owner&) = delete;
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

class mapping {
 public:
  mapping() = default;
  ~mapping() { reset(); }
  mapping(const mapping&) = delete;
  mapping& operator=(const mapping&) = delete;
  bool map(int fd, uint64_t offset, uint64_t n, int prot) {
    reset();
    void* p =
        ::mmap(nullptr, static_cast<size_t>(n), prot, MAP_SHARED, fd, static_cast<off_t>(offset));
    if (p == MAP_FAILED) return false;
    p_ = static_cast<uint8_t*>(p);
    n_ = n;
    return true;
  }
  void reset() {
    if (p_ != nullptr) ::munmap(p_, static_cast<size_t>(n_));
    p_ = nullptr;
  }
  uint8_t* get() const { return p_; }

 private:
  uint8_t* p_ = nullptr;
  uint64_t n_ = 0;
};

// The child, seen from the caller: waits for events and owns the child until it is reaped (an
// exception from the sink must not leave it running).
class child_process {
 public:
  explicit child_process(pid_t pid) : pid_(pid) {
#ifdef SYS_pidfd_open
    // A pidfd turns "the child ended" into a poll()able event, and a signal sent through it
    // cannot hit a recycled pid. Without one (Linux < 5.3) the wait polls on a short timer.
    pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
#endif
  }
  ~child_process() {
    if (!reaped_) {
      kill_now();
      reap_within(5.0);
    }
  }
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  void kill_now() {
#ifdef SYS_pidfd_send_signal
    if (pidfd_.get() >= 0 &&
        ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0) == 0)
      return;
#endif
    if (!reaped_) ::kill(pid_, SIGKILL);
  }

  // Reaps the child if it has ended: 1 when reaped (status() is set), 0 while it runs, -1 when
  // its status is lost (someone else reaped it: SIGCHLD ignored in this process, or a wait(-1)
  // elsewhere).
  int try_reap() {
    if (reaped_) return lost_ ? -1 : 1;
    for (;;) {
      const pid_t w = ::waitpid(pid_, &status_, WNOHANG);
      if (w == pid_) {
        reaped_ = true;
        return 1;
      }
      if (w == 0) return 0;
      if (errno == EINTR) continue;
      reaped_ = lost_ = true;  // ECHILD: nothing left for us to reap
      return -1;
    }
  }

  // Sleeps until `sock` or `output` is readable, the child ends, or `ms` milliseconds pass.
  void wait_event(int sock, int output, int ms) {
    struct pollfd p[3] = {};
    p[0].fd = sock;
    p[0].events = POLLIN;
    p[1].fd = output;
    p[1].events = POLLIN;
    p[2].fd = pidfd_.get();
    p[2].events = POLLIN;
    // Without a pidfd a child's end is noticed by try_reap() after a short sleep.
    ::poll(p, 3, pidfd_.get() >= 0 ? ms : std::min(ms, 5));
  }

  int reap_within(double seconds) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      const int r = try_reap();
      if (r != 0 || std::chrono::steady_clock::now() >= end) return r;
      wait_event(-1, -1, 20);
    }
  }

  int status() const { return status_; }

 private:
  pid_t pid_;
  fd_owner pidfd_;
  int status_ = 0;
  bool reaped_ = false;
  bool lost_ = false;
};

// What the child printed (stdout and stderr): the first 8 KiB are kept for error messages.
class output_capture {
 public:
  explicit output_capture(int fd) : fd_(fd) {}
  int fd() const { return fd_.get(); }
  void drain() {
    char buf[4096];
    for (;;) {
      const ssize_t r = ::read(fd_.get(), buf, sizeof(buf));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return;  // EAGAIN, or the end
      const size_t keep = std::min(static_cast<size_t>(r), kKeep - std::min(kKeep, text_.size()));
      text_.append(buf, keep);
    }
  }
  // " (it printed: <the first telling line>)", or "" when it printed nothing: the sanitizer's
  // or the library's own words about a crash, sanitized for a one-line message.
  std::string quote() const {
    size_t start = 0;
    while (start < text_.size()) {
      size_t end = text_.find('\n', start);
      if (end == std::string::npos) end = text_.size();
      const std::string line = text_.substr(start, end - start);
      start = end + 1;
      // Skip blank lines and rulers ("=====..." before a sanitizer report).
      if (line.find_first_not_of("= \t\r") == std::string::npos) continue;
      std::string out;
      for (char c : line) {
        if (out.size() >= 300) {
          out += "...";
          break;
        }
        out += (c >= 0x20 && c < 0x7F) ? c : '?';
      }
      return " (it printed: " + out + ")";
    }
    return "";
  }

 private:
  static constexpr size_t kKeep = 8192;
  fd_owner fd_;
  std::string text_;
};

// The caller's half of the transfer: applies the child's messages to the sink's buffer.
class receiver {
 public:
  receiver(const std::string& file, const char* library, shared_header* h, int mem_fd, int sock,
           const isolate_sink& sink)
      : file_(file), library_(library), h_(h), mem_fd_(mem_fd), sock_(sock), sink_(sink) {}

  // Handles every message waiting on the socket; returns whether there was any.
  bool drain() {
    bool any = false;
    for (;;) {
      message m{};
      const ssize_t r = ::recv(sock_, &m, sizeof(m), MSG_DONTWAIT);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return any;  // EAGAIN: nothing more for now
      any = true;
      CAGRA_EXPECTS(r == static_cast<ssize_t>(sizeof(m)),
                    "%s: the %s reader process sent a malformed message", file_.c_str(), library_);
      if (m.type == kMsgBegin) {
        begin(m.n);
      } else {
        piece(m);
      }
    }
  }

  bool begun() const { return begun_; }
  bool complete() const { return received_ == bytes_; }
  uint64_t received() const { return received_; }
  uint64_t bytes() const { return bytes_; }

 private:
  void begin(uint64_t bytes) {
    CAGRA_EXPECTS(!begun_ && bytes == h_->bytes, "%s: the %s reader process began twice",
                  file_.c_str(), library_);
    begun_ = true;
    bytes_ = bytes;
    slot_bytes_ = h_->slot_bytes;
    uint64_t meta[8];
    std::copy(h_->meta, h_->meta + 8, meta);
    dest_ = static_cast<uint8_t*>(sink_(meta, bytes));
    const uint64_t ring_offset = round_to_page(sizeof(shared_header));
    struct stat st {};
    CAGRA_EXPECTS(slot_bytes_ > 0 && ::fstat(mem_fd_, &st) == 0 &&
                      static_cast<uint64_t>(st.st_size) >= ring_offset + kSlots * slot_bytes_ &&
                      ring_.map(mem_fd_, ring_offset, kSlots * slot_bytes_, PROT_READ),
                  "%s: cannot map the %s reader process's staging buffer: %s", file_.c_str(),
                  library_, std::strerror(errno));
  }

  void piece(const message& m) {
    CAGRA_EXPECTS(m.type == kMsgPiece && begun_ && m.slot < kSlots && m.n <= slot_bytes_ &&
                      m.offset <= bytes_ && m.n <= bytes_ - m.offset && m.n <= bytes_ - received_,
                  "%s: the %s reader process sent a malformed piece", file_.c_str(), library_);
    std::memcpy(dest_ + m.offset, ring_.get() + m.slot * slot_bytes_, static_cast<size_t>(m.n));
    received_ += m.n;
    const uint8_t token = static_cast<uint8_t>(m.slot);
    ssize_t r;
    do {
      r = ::send(sock_, &token, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    } while (r < 0 && errno == EINTR);
    // A failed send means the child is gone: how it ended is reported from its exit status.
  }

  const std::string& file_;
  const char* library_;
  shared_header* h_;
  int mem_fd_;
  int sock_;
  const isolate_sink& sink_;
  mapping ring_;
  uint8_t* dest_ = nullptr;
  uint64_t bytes_ = 0;
  uint64_t slot_bytes_ = 0;
  uint64_t received_ = 0;
  bool begun_ = false;
};

}  // namespace

isolate_outcome run_isolated(const std::string& file, const char* library,
                             const isolate_limits& limits,
                             const std::function<void(isolate_context&)>& work,
                             const isolate_sink& sink) {
  if (limits.in_process) return run_local(work, sink);
  const char* f = file.c_str();
  const uint64_t hbytes = round_to_page(sizeof(shared_header));
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
