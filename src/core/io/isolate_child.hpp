// The reader process's side of run_isolated (isolate.cpp): what runs between fork() and _exit().
// Apart from the caller's side (isolate_parent.hpp) because nothing here may touch the caller's
// state: after fork() only the work and plain system calls run.
#pragma once

#include "core/io/isolate_channel.hpp"

#ifdef CAGRA_ISOLATE_FORK
#include <sys/types.h>

#include <functional>
#include <string>

#include "core/io/isolate.hpp"

namespace cagra::io::detail::isolate_impl {

/** The child's whole life after fork(): ties itself to `parent` (dies with it), sends its
 *  output to `output`, resets the signal handlers, turns core files off, bounds its address
 *  space (limits.setup_bytes, then the work's stated needs), runs `work` with a context that
 *  stages the result into the shared ring of `mem_fd` and announces pieces on `sock`, and
 *  leaves the outcome (kDone, or kFailed and a message) in `h`. Never returns. */
[[noreturn]] void child_main(shared_header* h, int mem_fd, int sock, int output, pid_t parent,
                             const std::string& file, const char* library,
                             const isolate_limits& limits,
                             const std::function<void(isolate_context&)>& work);

}  // namespace cagra::io::detail::isolate_impl

#endif  // CAGRA_ISOLATE_FORK
