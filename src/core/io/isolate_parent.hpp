// The caller's side of run_isolated (isolate.cpp), in three pieces: the child's lifetime
// (child_process: kill, reap, wait for events), what it printed (output_capture), and the
// result transfer (receiver: the child's pieces copied into the sink's buffer). isolate.cpp's
// watchdog loop drives them and turns the child's end into one cagra::error.
#pragma once

#include "core/io/isolate_channel.hpp"

#ifdef CAGRA_ISOLATE_FORK
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/io/isolate.hpp"

namespace cagra::io::detail::isolate_impl {

/** "SIGSEGV", "SIGKILL", ...; "a signal" for the others. */
const char* signal_name(int sig);
/** Whether `sig` ending the child means the library crashed (SIGSEGV, SIGBUS, SIGABRT, ...). */
bool is_crash(int sig);

/** The child, seen from the caller: waits for events and owns the child until it is reaped (an
 *  exception from the sink must not leave it running). */
class child_process {
 public:
  explicit child_process(pid_t pid);
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  void kill_now();
  /** Reaps the child if it has ended: 1 when reaped (status() is set), 0 while it runs, -1 when
   *  its status is lost (someone else reaped it: SIGCHLD ignored in this process, or a wait(-1)
   *  elsewhere). */
  int try_reap();
  /** Sleeps until `sock` or `output` is readable, the child ends, or `ms` milliseconds pass. */
  void wait_event(int sock, int output, int ms);
  /** try_reap() until it is not 0 or `seconds` pass. */
  int reap_within(double seconds);
  int status() const { return status_; }

 private:
  pid_t pid_;
  fd_owner pidfd_;
  int status_ = 0;
  bool reaped_ = false;
  bool lost_ = false;
};

/** What the child printed (stdout and stderr): the first 8 KiB are kept for error messages. */
class output_capture {
 public:
  explicit output_capture(int fd) : fd_(fd) {}
  int fd() const { return fd_.get(); }
  /** Reads what is there now (the fd is non-blocking). */
  void drain();
  /** " (it printed: <the first telling line>)", or "" when it printed nothing: the sanitizer's
   *  or the library's own words about a crash, sanitized for a one-line message. */
  std::string quote() const;

 private:
  static constexpr size_t kKeep = 8192;
  fd_owner fd_;
  std::string text_;
};

/** The caller's half of the transfer: applies the child's messages to the sink's buffer. */
class receiver {
 public:
  receiver(const std::string& file, const char* library, shared_header* h, int mem_fd, int sock,
           const isolate_sink& sink)
      : file_(file), library_(library), h_(h), mem_fd_(mem_fd), sock_(sock), sink_(sink) {}

  /** Handles every message waiting on the socket; returns whether there was any. */
  bool drain();

  bool begun() const { return begun_; }
  bool complete() const { return received_ == bytes_; }
  uint64_t received() const { return received_; }
  uint64_t bytes() const { return bytes_; }

 private:
  void begin(uint64_t bytes);
  void piece(const message& m);

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

}  // namespace cagra::io::detail::isolate_impl

#endif  // CAGRA_ISOLATE_FORK
