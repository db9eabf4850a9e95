// The host's costs around a persistent batch-1 call, in isolation (docs/cuda.md, "The default
// itopk from the pool"): cudaGetDevice, an uncontended mutex, a dynamic_pointer_cast, and the
// post of a job's 34 LL words (a 128-byte query and its seed state) to mapped host memory, with
// and without a GPU kernel polling those words as the persistent kernel's CTA 0 does, with plain
// stores, plain stores and a fence, or non-temporal stores. Each post is followed by a 10 us
// spin (the search). On the GPU machine:
//
//   nvcc -O2 -arch=sm_90 -o /tmp/host-costs scripts/dev/host-costs.cu && /tmp/host-costs
#include <emmintrin.h>
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
using C = std::chrono::steady_clock;
struct B {
  virtual ~B() = default;
};
struct D : B {
  int x = 1;
};
__global__ void poll(const volatile unsigned long long* w, int n, volatile int* stop, int* out) {
  unsigned long long s = 0;
  for (;;) {  // as CTA 0 polls: the job's words, one a thread, and the stop flag, all in flight
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += w[i];
    const int st = threadIdx.x == 0 ? *stop : 0;
    if (__syncthreads_or(st)) break;
  }
  if (s == 7) *out = 1;
}
double ns(C::time_point a, C::time_point b) {
  return std::chrono::duration<double, std::nano>(b - a).count();
}
int main() {
  const int R = 200000;
  int dev;
  cudaFree(0);
  auto t0 = C::now();
  for (int i = 0; i < R; ++i) cudaGetDevice(&dev);
  auto t1 = C::now();
  std::mutex m;
  for (int i = 0; i < R; ++i) {
    std::lock_guard<std::mutex> l(m);
  }
  auto t2 = C::now();
  std::shared_ptr<B> b = std::make_shared<D>();
  long long acc = 0;
  for (int i = 0; i < R; ++i) {
    auto d = std::dynamic_pointer_cast<D>(b);
    acc += d->x;
  }
  auto t3 = C::now();
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  std::printf(
      "cudaGetDevice %.1f ns, mutex lock+unlock %.1f ns, dynamic_pointer_cast %.1f ns (%lld)\n",
      ns(t0, t1) / R, ns(t1, t2) / R, ns(t2, t3) / R, acc);
  unsigned long long* h;
  int* hstop;
  int* dout;
  cudaHostAlloc((void**)&h, 4096, cudaHostAllocMapped | cudaHostAllocPortable);
  cudaHostAlloc((void**)&hstop, 64, cudaHostAllocMapped | cudaHostAllocPortable);
  cudaMalloc(&dout, 4);
  memset(h, 0, 4096);
  const int n = 34;
  unsigned char q[136];
  for (int i = 0; i < 136; ++i) q[i] = i;
  for (int polling = 0; polling < 2; ++polling) {
    *hstop = 0;
    if (polling) {
      poll<<<1, 256>>>(h, n, hstop, dout);
      auto w0 = C::now();
      while (ns(w0, C::now()) < 2e6) {
      }  // let it start
    }
    for (int mode = 0; mode < 4; ++mode) {
      double tot = 0;
      for (int r = 0; r < 20000; ++r) {
        const unsigned seq = r + 1 + mode * 100000;
        auto a = C::now();
        volatile unsigned long long* w = h;
        if (mode == 0 || mode == 1) {
          for (int i = 0; i < n; ++i) {
            unsigned v;
            memcpy(&v, q + 4 * i, 4);
            w[i] = v | (unsigned long long)seq << 32;
          }
          if (mode == 1) _mm_sfence();
        } else if (mode == 2) {
          for (int i = 0; i < n; ++i) {
            unsigned v;
            memcpy(&v, q + 4 * i, 4);
            _mm_stream_si64((long long*)h + i, (long long)(v | (unsigned long long)seq << 32));
          }
          _mm_sfence();
        } else {
          for (int i = 0; i < n; ++i) {
            unsigned v;
            memcpy(&v, q + 4 * i, 4);
            w[i] = v | (unsigned long long)seq << 32;
          }
          _mm_mfence();
        }
        auto c = C::now();
        tot += ns(a, c);
        auto e = C::now();
        while (ns(e, C::now()) < 10000) {
        }  // the search
      }
      const char* names[] = {"plain stores", "stores+sfence", "NT stores+sfence", "stores+mfence"};
      std::printf("%s: %-18s %.1f ns a post (34 words)\n", polling ? "GPU polling" : "no GPU poll ",
                  names[mode], tot / 20000);
      std::fflush(stdout);
    }
    if (polling) {
      *(volatile int*)hstop = 1;
      std::printf("kernel stopped: %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
    }
  }
}
