// What every function of the C interface (include/cagra/c_api.h) shares: the handles behind
// cagra_index_t and cagra_sharded_index_t, the exception-to-status boundary (`guarded`), argument
// checks, and the conversion of the C parameter structs and enums into the C++ ones. Kept apart
// from the index functions (c_api/index.cpp) so that those read as plain calls into
// cagra/cagra.hpp.
#pragma once

#include <exception>
#include <mutex>
#include <new>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include <cagra/c_api.h>
#include <cagra/cagra.hpp>
#include <cagra/multi_gpu.hpp>

namespace cagra::c_api {

/** A reader-writer lock in which a waiting writer goes next: it holds `gate` while it waits and
 *  while it writes, and readers pass the gate to take their shared lock, so new readers queue
 *  behind it. (std::shared_mutex alone, glibc's rwlock, prefers readers: searches that overlap
 *  without a pause would keep an extend waiting forever.) */
class index_lock {
 public:
  struct write_guard {
    std::unique_lock<std::mutex> gate;
    std::unique_lock<std::shared_mutex> exclusive;
  };
  std::shared_lock<std::shared_mutex> read() const {
    std::lock_guard<std::mutex> pass(gate_);
    return std::shared_lock<std::shared_mutex>(mu_);
  }
  write_guard write() const {
    std::unique_lock<std::mutex> gate(gate_);
    return {std::move(gate), std::unique_lock<std::shared_mutex>(mu_)};
  }

 private:
  mutable std::mutex gate_;
  mutable std::shared_mutex mu_;
};

}  // namespace cagra::c_api

/** The object behind cagra_index_t: the index and the lock that lets searches run together
 *  while a change (extend, remove, compact, set_labels) runs alone. */
struct cagra_index {
  cagra::index idx;
  cagra::c_api::index_lock lock;
  explicit cagra_index(cagra::index i) : idx(std::move(i)) {}
};

/** The object behind cagra_sharded_index_t. No lock: nothing changes a sharded index once made,
 *  and concurrent searches of a cagra::sharded_index are safe as those of a cagra::index. */
struct cagra_sharded_index {
  cagra::sharded_index idx;
  explicit cagra_sharded_index(cagra::sharded_index i) : idx(std::move(i)) {}
};

namespace cagra::c_api {

/** A failure the C layer detects itself, with the status it maps to. */
class status_error : public std::runtime_error {
 public:
  status_error(cagra_status_t s, const std::string& what) : std::runtime_error(what), status(s) {}
  cagra_status_t status;
};

/** Throws status_error(CAGRA_ERROR_INVALID_ARGUMENT, "<function>: <what>") unless `cond`. */
inline void require(bool cond, const char* function, const char* what) {
  if (!cond) throw status_error(CAGRA_ERROR_INVALID_ARGUMENT, std::string(function) + ": " + what);
}

/** Device pointers need the CUDA backend and a GPU: else status_error(UNSUPPORTED) naming
 *  `function` and its host-memory counterpart `host_function`. */
void require_cuda_for_device(cagra::memory_space space, const char* function,
                             const char* host_function);

/** Records `message` as the calling thread's last error and returns `status`. Never throws. */
cagra_status_t fail(cagra_status_t status, const char* message) noexcept;

/** The status of a library error: CUDA failures, device memory exhaustion and a missing CUDA
 *  backend are told apart by the message the library gives them (src/cuda/check.hpp,
 *  src/core/cuda_stub.cpp); anything else is `fallback` (the call's usual kind of failure). */
cagra_status_t status_of(const cagra::error& e, cagra_status_t fallback) noexcept;

/** Runs `body` and turns every exception into a status and the thread's last error: no exception
 *  leaves this function. `fallback` is the status of a cagra::error the message does not place
 *  (CAGRA_ERROR_INVALID_ARGUMENT for most calls, CAGRA_ERROR_IO for save and load). */
template <typename F>
cagra_status_t guarded(cagra_status_t fallback, F&& body) noexcept {
  try {
    body();
    return CAGRA_OK;
  } catch (const status_error& e) {
    return fail(e.status, e.what());
  } catch (const cagra::error& e) {
    return fail(status_of(e, fallback), e.what());
  } catch (const std::bad_alloc&) {
    return fail(CAGRA_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(CAGRA_ERROR_UNKNOWN, e.what());
  } catch (...) {
    return fail(CAGRA_ERROR_UNKNOWN, "an unknown C++ exception");
  }
}

/** The element type of a C dtype; throws for a value outside cagra_dtype_t. */
dtype to_dtype(cagra_dtype_t t, const char* function);
/** The C++ resources of `r` (NULL = defaults), the device list copied and checked (count >= 0,
 *  no NULL list with a count, ordinals >= 0 and distinct); a CUDA backend on a machine without
 *  one is CAGRA_ERROR_UNSUPPORTED. */
resources to_resources(const cagra_resources_t* r, const char* function);
/** to_resources of a search's params->resources (NULL params = defaults), with the search's
 *  params->cuda_stream. */
resources to_search_resources(const cagra_search_params_t* p, const char* function);
/** The C++ parameters of the C structs (NULL = defaults); an enum value outside its C enum is an
 *  invalid argument. */
index_params to_index_params(const cagra_build_params_t* p);
search_params to_search_params(const cagra_search_params_t* p, const char* function);
extend_params to_extend_params(const cagra_extend_params_t* p);
/** The filter of `f` (NULL or no words: none), with the count and stamp of a registered shared
 *  bitset (cagra_filter_register; c_api/filter.cpp). */
row_filter to_row_filter(const cagra_filter_t* f, const char* function);

}  // namespace cagra::c_api
