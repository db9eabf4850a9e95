// Runs a reader that calls into a library we cannot trust with a corrupt file (libhdf5) in a
// forked child process, so that a crash, a hang or a runaway allocation inside that library ends
// the child, never the caller's process. The child passes the data through a small ring of
// shared memory that the caller copies straight into its own buffer; errors come back as the
// child's cagra::error message.
//
// Linux only (fork, memfd_create, pidfd, RLIMIT_AS); elsewhere, or when asked, the work runs in
// the calling process with the same interface (and no containment), writing straight into the
// caller's buffer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace cagra::io::detail {

/** How the isolated work is bounded. */
struct isolate_limits {
  /** Address space the work may use, beyond what the process already had when it forked, until
   *  it begins its result (opening and validating a file). */
  uint64_t setup_bytes = uint64_t{512} << 20;
  /** The child is killed when it shows no progress for this long. */
  double stall_seconds = 60;
  /** Run the work in this process instead (no containment). */
  bool in_process = false;
};

/** The work's side of the channel. In the child every call talks to the caller's process; in
 *  process the same calls write to the caller's buffer directly. */
class isolate_context {
 public:
  virtual ~isolate_context() = default;
  /** Announces the result, at most once per run: `bytes` in all (the caller's sink is called
   *  with `meta` and `bytes` now, so set `meta` first), delivered in pieces of at most
   *  `max_piece` bytes. `working_bytes` is the most the rest of the work may allocate; in the
   *  child the memory limit becomes that plus the staging buffers. */
  virtual void begin_result(uint64_t bytes, uint64_t max_piece, uint64_t working_bytes) = 0;
  /** Where to write result bytes [offset, offset + n), n <= max_piece; call commit(offset, n)
   *  once they are written, before the next stage(). Every result byte is staged exactly once. */
  virtual void* stage(uint64_t offset, uint64_t n) = 0;
  virtual void commit(uint64_t offset, uint64_t n) = 0;
  /** Says the work is advancing: restarts the stall clock. commit() and phase() do too. */
  virtual void progress() = 0;
  /** What the work does now ("opening the file"), named if the child crashes or hangs. */
  virtual void phase(const char* what) = 0;
  /** The child's address-space allowance beyond the process's own size (0 in-process), for
   *  "ran out of memory" messages. */
  virtual uint64_t memory_budget() const = 0;
  /** A few numbers handed back to the caller (the shape and type of what is read). */
  uint64_t meta[8] = {};
};

/** Runs in the caller's process when the work begins its result: returns where the `bytes`
 *  result bytes go (it must stay valid until run_isolated returns). It may throw. */
using isolate_sink = std::function<void*(const uint64_t* meta, uint64_t bytes)>;

/** What the work left: its meta values, and whether it delivered a result through the sink. */
struct isolate_outcome {
  uint64_t meta[8] = {};
  bool has_result = false;
};

/**
 * Runs `work` in a child process (or in-process, see isolate_limits::in_process and the platform
 * note above); the result bytes it stages land in the buffer that `sink` returns.
 *
 * A cagra::error thrown by `work` is rethrown here with the same message. A crash (a signal), a
 * stall longer than `limits.stall_seconds`, an exit for any other reason, or an allocation
 * failure beyond the limits becomes a cagra::error that starts with `file` and names `library`
 * ("libhdf5 crashed reading this file (the file is corrupt): SIGSEGV while ...").
 *
 * The child calls only `work` and then _exit(): no atexit handlers, no stdio flushing, no
 * OpenMP; its signal handlers are reset to the defaults and it writes no core file. `work` must
 * not start threads.
 */
isolate_outcome run_isolated(const std::string& file, const char* library,
                             const isolate_limits& limits,
                             const std::function<void(isolate_context&)>& work,
                             const isolate_sink& sink);

}  // namespace cagra::io::detail
