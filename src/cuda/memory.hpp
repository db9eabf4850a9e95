// RAII owners of device resources: the only place in the library that calls cudaMalloc /
// cudaFree / cudaStreamCreate (besides device_alloc/device_free in device.cu, the raw helpers
// that backend.hpp offers to code without CUDA headers). Owners are move-only; a moved-from owner
// holds nothing.
//  - device_buffer<T>: n elements of device memory (uninitialized); reserve() only grows.
//  - pinned_buffer<T>: n elements of page-locked host memory that kernels read and write in
//    place (mapped; with unified addressing the host pointer is the device pointer).
//  - host_pin: host memory the caller owns, page-locked in place and mapped for every device.
//  - cuda_stream: a non-blocking stream.
//  - cuda_event: an event without timing (orders one stream after another).
//  - device_guard: makes a device current for a scope and restores the previous one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include <cuda_runtime_api.h>

#include "cuda/check.hpp"

namespace cagra::cuda {

template <typename T>
class device_buffer {
 public:
  device_buffer() = default;
  explicit device_buffer(size_t n) { reserve(n); }
  ~device_buffer() { release(); }
  device_buffer(device_buffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      n_ = std::exchange(o.n_, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  /** Makes room for at least n elements; old contents are dropped when it reallocates. */
  void reserve(size_t n) {
    if (n <= n_) return;
    release();
    void* p = nullptr;
    CAGRA_CUDA_TRY(cudaMalloc(&p, n * sizeof(T)));
    ptr_ = static_cast<T*>(p);
    n_ = n;
  }
  T* data() const { return ptr_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }

 private:
  void release() noexcept {
    if (ptr_) CAGRA_CUDA_TRY_NO_THROW(cudaFree(ptr_));
    ptr_ = nullptr;
    n_ = 0;
  }
  T* ptr_ = nullptr;
  size_t n_ = 0;
};

template <typename T>
class pinned_buffer {
 public:
  pinned_buffer() = default;
  ~pinned_buffer() { release(); }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;

  /** Makes room for at least n elements; old contents are dropped when it reallocates. */
  void reserve(size_t n) {
    if (n <= n_) return;
    release();
    void* p = nullptr;
    CAGRA_CUDA_TRY(cudaHostAlloc(&p, n * sizeof(T), cudaHostAllocMapped | cudaHostAllocPortable));
    ptr_ = static_cast<T*>(p);
    n_ = n;
  }
  T* data() const { return ptr_; }
  size_t size() const { return n_; }

 private:
  void release() noexcept {
    if (ptr_) CAGRA_CUDA_TRY_NO_THROW(cudaFreeHost(ptr_));
    ptr_ = nullptr;
    n_ = 0;
  }
  T* ptr_ = nullptr;
  size_t n_ = 0;
};

class host_pin {
 public:
  /** Page-locks [p, p + bytes) in place and maps it for every device (read-only for the device
   *  where the platform allows). The memory must outlive the pin. */
  host_pin(const void* p, size_t bytes) {
    void* q = const_cast<void*>(p);
    const unsigned flags = cudaHostRegisterMapped | cudaHostRegisterPortable;
    if (cudaHostRegister(q, bytes, flags | cudaHostRegisterReadOnly) != cudaSuccess) {
      (void)cudaGetLastError();  // read-only mappings are not supported everywhere
      CAGRA_CUDA_TRY(cudaHostRegister(q, bytes, flags));
    }
    ptr_ = q;
    bytes_ = bytes;
  }
  ~host_pin() {
    if (ptr_) CAGRA_CUDA_TRY_NO_THROW(cudaHostUnregister(ptr_));
  }
  host_pin(const host_pin&) = delete;
  host_pin& operator=(const host_pin&) = delete;
  /** The address kernels on the current device read the memory at. */
  const uint8_t* device_pointer() const {
    void* d = nullptr;
    CAGRA_CUDA_TRY(cudaHostGetDevicePointer(&d, ptr_, 0));
    return static_cast<const uint8_t*>(d);
  }
  /** Whether the pin covers exactly [p, p + bytes). */
  bool covers(const void* p, size_t bytes) const { return ptr_ == p && bytes_ == bytes; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class cuda_stream {
 public:
  cuda_stream() { CAGRA_CUDA_TRY(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~cuda_stream() {
    if (s_) CAGRA_CUDA_TRY_NO_THROW(cudaStreamDestroy(s_));
  }
  cuda_stream(const cuda_stream&) = delete;
  cuda_stream& operator=(const cuda_stream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { CAGRA_CUDA_TRY(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class cuda_event {
 public:
  cuda_event() { CAGRA_CUDA_TRY(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
  ~cuda_event() {
    if (e_) CAGRA_CUDA_TRY_NO_THROW(cudaEventDestroy(e_));
  }
  cuda_event(const cuda_event&) = delete;
  cuda_event& operator=(const cuda_event&) = delete;
  cudaEvent_t get() const { return e_; }
  /** Work queued on `stream` from now on waits for what `before` holds now. */
  void order(cudaStream_t before, cudaStream_t stream) const {
    CAGRA_CUDA_TRY(cudaEventRecord(e_, before));
    CAGRA_CUDA_TRY(cudaStreamWaitEvent(stream, e_, 0));
  }

 private:
  cudaEvent_t e_ = nullptr;
};

/** The stream a call on the caller's device memory orders itself after: `stream`
 *  (resources::cuda_stream, checked to be a stream of `device`; cudaStreamLegacy and
 *  cudaStreamPerThread are taken as they are), or the legacy default stream when it is null.
 *  Throws cagra::error for a stream of another device or a handle CUDA does not know. */
cudaStream_t caller_stream(void* stream, int device);

/** Throws unless `p` is device memory that CUDA device `device` can use in a kernel; `what` names
 *  it in the message. */
void expect_device_memory(const void* p, int device, const char* what);

class device_guard {
 public:
  explicit device_guard(int device) {
    CAGRA_CUDA_TRY(cudaGetDevice(&prev_));
    switched_ = prev_ != device;
    if (switched_) CAGRA_CUDA_TRY(cudaSetDevice(device));
  }
  ~device_guard() {
    if (switched_) CAGRA_CUDA_TRY_NO_THROW(cudaSetDevice(prev_));
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int prev_ = 0;
  bool switched_ = false;
};

}  // namespace cagra::cuda
