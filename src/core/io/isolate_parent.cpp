// The caller's side of run_isolated (isolate_parent.hpp): reaping and killing the child through a
// pidfd where there is one (a signal sent through it cannot hit a recycled pid), capturing what
// it printed, and copying the result pieces it stages into the caller's buffer.
#include "core/io/isolate_parent.hpp"

#ifdef CAGRA_ISOLATE_FORK
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <cagra/error.hpp>

namespace cagra::io::detail::isolate_impl {

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

// ---- child_process ----------------------------------------------------------------------------

child_process::child_process(pid_t pid) : pid_(pid) {
#ifdef SYS_pidfd_open
  // A pidfd turns "the child ended" into a poll()able event, and a signal sent through it
  // cannot hit a recycled pid. Without one (Linux < 5.3) the wait polls on a short timer.
  pidfd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
#endif
}

child_process::~child_process() {
  if (!reaped_) {
    kill_now();
    reap_within(5.0);
  }
}

void child_process::kill_now() {
#ifdef SYS_pidfd_send_signal
  if (pidfd_.get() >= 0 && ::syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0) == 0)
    return;
#endif
  if (!reaped_) ::kill(pid_, SIGKILL);
}

int child_process::try_reap() {
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

void child_process::wait_event(int sock, int output, int ms) {
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

int child_process::reap_within(double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    const int r = try_reap();
    if (r != 0 || std::chrono::steady_clock::now() >= end) return r;
    wait_event(-1, -1, 20);
  }
}

// ---- output_capture ---------------------------------------------------------------------------

void output_capture::drain() {
  char buf[4096];
  for (;;) {
    const ssize_t r = ::read(fd_.get(), buf, sizeof(buf));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;  // EAGAIN, or the end
    const size_t keep = std::min(static_cast<size_t>(r), kKeep - std::min(kKeep, text_.size()));
    text_.append(buf, keep);
  }
}

std::string output_capture::quote() const {
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

// ---- receiver ---------------------------------------------------------------------------------

bool receiver::drain() {
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

void receiver::begin(uint64_t bytes) {
  CAGRA_EXPECTS(!begun_ && bytes == h_->bytes, "%s: the %s reader process began twice",
                file_.c_str(), library_);
  begun_ = true;
  bytes_ = bytes;
  slot_bytes_ = h_->slot_bytes;
  uint64_t meta[8];
  std::copy(h_->meta, h_->meta + 8, meta);
  dest_ = static_cast<uint8_t*>(sink_(meta, bytes));
  const uint64_t offset = ring_offset();
  struct stat st {};
  CAGRA_EXPECTS(slot_bytes_ > 0 && ::fstat(mem_fd_, &st) == 0 &&
                    static_cast<uint64_t>(st.st_size) >= offset + kSlots * slot_bytes_ &&
                    ring_.map(mem_fd_, offset, kSlots * slot_bytes_, PROT_READ),
                "%s: cannot map the %s reader process's staging buffer: %s", file_.c_str(),
                library_, std::strerror(errno));
}

void receiver::piece(const message& m) {
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

}  // namespace cagra::io::detail::isolate_impl

#endif  // CAGRA_ISOLATE_FORK
