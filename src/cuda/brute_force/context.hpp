// What a GPU brute-force call needs on one device, kept between calls (brute_force.cu): a
// stream, a cuBLAS handle and grow-only buffers, lent to one caller at a time.
#pragma once

#include <map>
#include <memory>
#include <mutex>

#include <cublas_v2.h>

#include <cagra/error.hpp>

#include "cuda/memory.hpp"

#define CAGRA_CUBLAS_TRY(call)                                                                     \
  do {                                                                                             \
    const cublasStatus_t cagra_cublas_st_ = (call);                                                \
    if (cagra_cublas_st_ != CUBLAS_STATUS_SUCCESS)                                                 \
      ::cagra::detail::throw_error(                                                                \
          __FILE__, __LINE__,                                                                      \
          ::cagra::detail::format("cuBLAS error in %s: status %d", #call, int(cagra_cublas_st_))); \
  } while (0)

namespace cagra::cuda::brute_force_detail {

struct cublas_handle {
  cublasHandle_t h = nullptr;
  cublas_handle() { CAGRA_CUBLAS_TRY(cublasCreate(&h)); }
  ~cublas_handle() {
    if (h) cublasDestroy(h);
  }
  cublas_handle(const cublas_handle&) = delete;
  cublas_handle& operator=(const cublas_handle&) = delete;
};

/** What a brute-force call needs on one device: a stream, a cuBLAS handle and grow-only
 *  buffers. Creating the handle and allocating the tiles cost milliseconds, more than the whole
 *  search of a small call (extend's in-chunk kNN, a filtered search's exact path), so one
 *  context per device is kept between calls and lent to one caller at a time; a caller that
 *  finds it busy makes its own. Buffers above kKeepBytes are freed when the call ends. */
struct context {
  explicit context(int dev) : device(dev) {}
  int device;
  cuda_stream stream;
  cublas_handle blas;
  device_buffer<float> xs, qs, xnorm, qnorm, dots, d_dist;
  device_buffer<uint8_t> staging;
  device_buffer<uint32_t> mask, d_ids, row_ids;
  device_buffer<unsigned long long> state;
  /** Mapped pinned memory of the exact path's few-query kernel (exact_rows.cu). */
  pinned_buffer<uint8_t> host_io;

  static constexpr size_t kKeepBytes = size_t{512} << 20;
  size_t bytes() const {
    return xs.bytes() + qs.bytes() + xnorm.bytes() + qnorm.bytes() + dots.bytes() + d_dist.bytes() +
           staging.bytes() + mask.bytes() + d_ids.bytes() + state.bytes() + row_ids.bytes();
  }
  void trim() {
    if (bytes() <= kKeepBytes) return;
    xs = {}, qs = {}, xnorm = {}, qnorm = {}, dots = {}, d_dist = {};
    staging = {}, mask = {}, d_ids = {}, state = {}, row_ids = {};
  }
};

/** A context for `device` for the duration of one call: the kept one when it is free. Kept
 *  contexts are never destroyed (the driver reclaims them when the process ends), so no
 *  destructor runs after the CUDA runtime has shut down. */
class context_lease {
 public:
  explicit context_lease(int device) {
    {
      std::lock_guard<std::mutex> lock(registry_mutex());
      slot& s = slots()[device];
      if (!s.busy) {
        s.busy = true;
        slot_ = &s;
      }
    }
    if (!slot_) {
      own_ = std::make_unique<context>(device);
      ctx_ = own_.get();
      return;
    }
    try {
      if (!slot_->ctx) slot_->ctx = new context(device);
    } catch (...) {
      give_back();
      throw;
    }
    ctx_ = slot_->ctx;
  }
  ~context_lease() {
    if (!slot_) return;
    ctx_->trim();
    give_back();
  }
  context_lease(const context_lease&) = delete;
  context_lease& operator=(const context_lease&) = delete;
  context& get() { return *ctx_; }

 private:
  struct slot {
    context* ctx = nullptr;
    bool busy = false;
  };
  static std::mutex& registry_mutex() {
    static std::mutex* m = new std::mutex();
    return *m;
  }
  static std::map<int, slot>& slots() {
    static std::map<int, slot>* m = new std::map<int, slot>();
    return *m;
  }
  void give_back() noexcept {
    std::lock_guard<std::mutex> lock(registry_mutex());
    slot_->busy = false;
  }
  std::unique_ptr<context> own_;
  context* ctx_ = nullptr;
  slot* slot_ = nullptr;
};

}  // namespace cagra::cuda::brute_force_detail
