// The reader process's side of run_isolated (isolate_child.hpp): the context the work writes its
// result through, and the set-up around it.
//
// The child bounds its address space with RLIMIT_AS, relative to the size it inherited (a CUDA
// or Python parent can have tens of GB of address space reserved): `setup_bytes` more until it
// begins its result, then what it is already using plus the ring and its stated working memory.
// So a corrupt file that makes the library allocate gigabytes fails inside the child.
#include "core/io/isolate_child.hpp"

#ifdef CAGRA_ISOLATE_FORK
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include <cagra/error.hpp>

namespace cagra::io::detail::isolate_impl {

namespace {

// Address space allowed above the ring and the stated working memory: the library's own small
// allocations after the result begins (type conversion buffers, caches).
constexpr uint64_t kSlackBytes = uint64_t{64} << 20;

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

}  // namespace

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
  child_context ctx(h, mem_fd, sock, ring_offset());
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

}  // namespace cagra::io::detail::isolate_impl

#endif  // CAGRA_ISOLATE_FORK
