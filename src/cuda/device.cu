// Device discovery for the rest of the library: how many GPUs, and a one-line description of
// one (name, SMs, memory) for benchmark logs. device_count() never throws: "no driver" and "no
// device" both mean 0, so a CPU-only machine with a CUDA build still works. The count and the
// attributes a search asks for on every call are read once.
#include <cuda_runtime_api.h>

#include <atomic>

#include "cuda/backend.hpp"
#include "cuda/check.hpp"
#include "cuda/memory.hpp"
#include "cuda/testing.hpp"

namespace cagra::cuda {

namespace {

/** Attributes read once per device: a batch-1 search asks for them on every call, and each
 *  runtime query costs tens to hundreds of nanoseconds against a call of ~14 us. */
constexpr int kCachedDevices = 64;
std::atomic<int> cached_sms[kCachedDevices];
std::atomic<int> cached_smem_optin[kCachedDevices];

int cached_attribute(std::atomic<int>* cache, cudaDeviceAttr attr, int device) {
  const bool cacheable = device >= 0 && device < kCachedDevices;
  if (cacheable) {
    const int v = cache[device].load(std::memory_order_relaxed);
    if (v > 0) return v;
  }
  int v = 0;
  CAGRA_CUDA_TRY(cudaDeviceGetAttribute(&v, attr, device));
  if (cacheable && v > 0) cache[device].store(v, std::memory_order_relaxed);
  return v;
}

}  // namespace

int device_count() {
  // The devices a process sees are fixed when CUDA initializes: asked once.
  static const int n = [] {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
      (void)cudaGetLastError();
      return 0;
    }
    return count;
  }();
  return n;
}

int sm_count(int device) {
  return cached_attribute(cached_sms, cudaDevAttrMultiProcessorCount, device);
}

int smem_per_block_optin(int device) {
  return cached_attribute(cached_smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
}

size_t free_memory(int device) {
  const int n = device_count();
  CAGRA_EXPECTS(device >= 0 && device < n, "CUDA device %d does not exist (%d visible)", device, n);
  device_guard guard(device);
  size_t free_b = 0, total_b = 0;
  CAGRA_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  return free_b;
}

cudaStream_t caller_stream(void* stream, int device) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (s == nullptr) return cudaStreamLegacy;
  if (s == cudaStreamLegacy || s == cudaStreamPerThread) return s;  // the current device's
  int of = -1;
  const cudaError_t e = cudaStreamGetDevice(s, &of);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    CAGRA_FAIL("resources::cuda_stream is not a CUDA stream CUDA knows (%s)",
               cudaGetErrorString(e));
  }
  CAGRA_EXPECTS(of == device,
                "resources::cuda_stream is a stream of CUDA device %d, but the search runs on "
                "device %d (resources::device, where the queries are)",
                of, device);
  return s;
}

void expect_device_memory(const void* p, int device, const char* what) {
  cudaPointerAttributes at{};
  const cudaError_t e = cudaPointerGetAttributes(&at, p);
  if (e != cudaSuccess) (void)cudaGetLastError();
  CAGRA_EXPECTS(
      e == cudaSuccess && (at.type == cudaMemoryTypeDevice || at.type == cudaMemoryTypeManaged),
      "%s is a device view, but %p is not CUDA device memory (allocate it with cudaMalloc, "
      "cupy or torch .cuda(), or pass a host view)",
      what, p);
  CAGRA_EXPECTS(at.type != cudaMemoryTypeDevice || at.device == device,
                "%s lives on CUDA device %d, but the search runs on device %d (resources::device)",
                what, at.device, device);
}

device_info cuda_info(int device) {
  const int n = device_count();
  CAGRA_EXPECTS(device >= 0 && device < n, "CUDA device %d does not exist (%d visible)", device, n);
  cudaDeviceProp p{};
  CAGRA_CUDA_TRY(cudaGetDeviceProperties(&p, device));
  device_info info;
  info.name = p.name;
  info.sm_count = p.multiProcessorCount;
  info.cc_major = p.major;
  info.cc_minor = p.minor;
  info.global_mem_bytes = p.totalGlobalMem;
  info.l2_bytes = static_cast<size_t>(p.l2CacheSize);
  info.smem_per_block_optin = static_cast<size_t>(p.sharedMemPerBlockOptin);
  CAGRA_CUDA_TRY(cudaDriverGetVersion(&info.driver_version));
  CAGRA_CUDA_TRY(cudaRuntimeGetVersion(&info.runtime_version));
  return info;
}

std::string describe(const device_info& d) {
  return d.name + " (sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + ", " +
         std::to_string(d.sm_count) + " SMs, " + std::to_string(d.global_mem_bytes >> 20) +
         " MiB, driver " + std::to_string(d.driver_version) + ", runtime " +
         std::to_string(d.runtime_version) + ")";
}

void* testing::device_alloc(size_t bytes, int device) {
  device_guard guard(device);
  void* p = nullptr;
  CAGRA_CUDA_TRY(cudaMalloc(&p, bytes ? bytes : 1));
  return p;
}

void testing::device_free(void* p) noexcept {
  if (p) CAGRA_CUDA_TRY_NO_THROW(cudaFree(p));
}

void testing::copy_memory(void* dst, const void* src, size_t bytes) {
  if (!bytes) return;
  CAGRA_CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
  // From pageable memory cudaMemcpy may return before the DMA lands; the library's kernels run
  // on non-blocking streams, which do not wait for the legacy stream.
  CAGRA_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy));
}

}  // namespace cagra::cuda
