// Does the persistent batch-1 call's time move in steps of one PCIe poll? A ping-pong in
// isolation (docs/cuda.md, "Shapes, polls and the host merge"): one warp polls a job of 34 LL
// words in mapped host memory as the persistent kernel's CTA 0 does (all the words' reads in
// flight, then a vote), spins `work` ns (the search) and writes a tagged reply word; the host
// posts job after job, each once it has the last reply and has spun `host` ns (its merge, the
// caller's loop, the next call's set-up). If a poll samples host memory once a round trip, the
// call grows with the work not smoothly but in steps of a round trip, and where a step falls
// depends on the work and the host's time (the groups of processes seen on one machine).
// Modes: 0 = one poll in flight (the kernel's way), 1 = the poller pauses `pause` ns after its
// reply before it polls again, 2 = a second warp polls a second copy of the job, started half a
// round trip after the first; one warp with several polls in flight, issued at least `pause` ns
// apart, each checked (waited for) in turn and issued again: 3 = four polls of one copy, 4 = two
// polls, one a copy, 5 = two polls of one copy (does a read of a line already in flight return
// that read's data?), 6 = two polls of one copy by cp.async into shared memory (no register
// waits for a poll still in flight once the job is found). Prints, per work, the call's
// percentiles and the polls a job.
// On the GPU machine:
//
//   nvcc -O2 -arch=sm_90 -o /tmp/poll-phase scripts/dev/poll-phase.cu
//   /tmp/poll-phase MODE [PAUSE_NS] [HOST_NS]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
using C = std::chrono::steady_clock;

constexpr int kWords = 34;  // a 128-byte query and its seed state, as LL words

__device__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

__device__ void spin_ns(uint64_t ns) {
  const uint64_t end = now_ns() + ns;
  while (now_ns() < end) {
  }
}

/** Mode 3-5's poll: N polls of the job's words in flight in one warp (slot k reads copy k % 2
 *  where `two`), issued at least `gap` ns apart; slot k is waited for and checked, then issued
 *  again. Returns the polls it checked once one sees every word tagged seq; *data: word 33's. */
template <int N>
__device__ uint32_t pipelined_poll(const volatile uint64_t* job, const volatile uint64_t* job2,
                                   bool two, uint64_t gap, uint32_t seq, uint32_t* data) {
  const uint32_t lane = threadIdx.x & 31u;
  uint64_t a[N], b[N];
  uint64_t last = 0;
  const auto issue = [&](int k) {
    while (now_ns() < last + gap) {
    }
    const volatile uint64_t* w = two && (k & 1) ? job2 : job;
    a[k] = w[lane];
    b[k] = lane < kWords - 32 ? w[32 + lane] : 0ull;
    last = now_ns();
  };
#pragma unroll
  for (int k = 0; k < N; ++k) issue(k);
  for (uint32_t polls = 1;;) {
#pragma unroll
    for (int k = 0; k < N; ++k, ++polls) {
      const bool ok =
          uint32_t(a[k] >> 32) == seq && (lane >= kWords - 32 || uint32_t(b[k] >> 32) == seq);
      if (__all_sync(0xFFFFFFFFu, ok)) {
        *data = uint32_t(__shfl_sync(0xFFFFFFFFu, b[k], 1));
        return polls;
      }
      issue(k);
    }
  }
}

/** Mode 6's poll: two polls of the job's words in flight as cp.async copies (16 bytes a lane,
 *  lanes 0-16) into two shared buffers, issued at least `gap` ns apart; the older waited for
 *  (cp.async.wait_group 1) and checked, then issued again. */
__device__ uint32_t async_poll(const volatile uint64_t* job, uint64_t gap, uint32_t seq,
                               uint32_t* data, uint64_t (*buf)[kWords]) {
  const uint32_t lane = threadIdx.x & 31u;
  uint64_t last = 0;
  const auto issue = [&](int k) {
    while (now_ns() < last + gap) {
    }
    if (2 * lane < kWords) {
      const uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(&buf[k][2 * lane]));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst),
                   "l"(const_cast<const uint64_t*>(job) + 2 * lane));
    }
    asm volatile("cp.async.commit_group;\n" ::);
    last = now_ns();
  };
  issue(0);
  issue(1);
  for (uint32_t polls = 1;;) {
    for (int k = 0; k < 2; ++k, ++polls) {
      asm volatile("cp.async.wait_group 1;\n" ::: "memory");
      __syncwarp();
      const volatile uint64_t* w = buf[k];
      const bool ok = uint32_t(w[lane] >> 32) == seq &&
                      (lane >= kWords - 32 || uint32_t(w[32 + lane] >> 32) == seq);
      if (__all_sync(0xFFFFFFFFu, ok)) {
        *data = uint32_t(w[33]);
        return polls;
      }
      __syncwarp();
      issue(k);
    }
  }
}

/** Polls by one warp, all of the job's words in flight (lane i reads word i, lanes 0-1 also
 *  words 32-33), until a warp sees every word tagged seq or another warp claimed the job. */
__global__ void responder(const volatile uint64_t* job, const volatile uint64_t* job2,
                          volatile uint64_t* reply, int mode, uint64_t pause_ns) {
  __shared__ uint32_t s_found, s_exit;
  __shared__ __align__(16) uint64_t s_buf[2][kWords];
  const uint32_t warp = threadIdx.x >> 5, lane = threadIdx.x & 31u;
  if (threadIdx.x == 0) s_found = s_exit = 0;
  __syncthreads();
  for (uint32_t seq = 1;; ++seq) {
    if (mode >= 3) {
      if (warp == 0) {
        uint32_t work = 0;
        const uint32_t polls =
            mode == 6   ? async_poll(job, pause_ns, seq, &work, s_buf)
            : mode == 3 ? pipelined_poll<4>(job, job2, false, pause_ns, seq, &work)
                        : pipelined_poll<2>(job, job2, mode == 4, pause_ns, seq, &work);
        if (lane == 0) {
          if (work == 0xFFFFFFFFu) {
            s_exit = 1;
          } else {
            spin_ns(work);
            *reply = uint64_t(seq) << 32 | polls;
            __threadfence_system();
          }
        }
      }
      __syncthreads();
      if (s_exit) return;
      continue;
    }
    if (mode == 1 && seq > 1) spin_ns(pause_ns);
    if (warp == 0 || (mode == 2 && warp == 1)) {
      const volatile uint64_t* w = warp == 0 ? job : job2;
      if (warp == 1) spin_ns(750);  // half a round trip after warp 0
      for (uint32_t polls = 1;; ++polls) {
        if (*reinterpret_cast<volatile uint32_t*>(&s_found) == seq) break;
        const uint64_t a = w[lane], b = lane < kWords - 32 ? w[32 + lane] : a;
        const bool ok = uint32_t(a >> 32) == seq && uint32_t(b >> 32) == seq;
        if (!__all_sync(0xFFFFFFFFu, ok)) continue;
        const uint32_t work = uint32_t(__shfl_sync(0xFFFFFFFFu, b, 1));  // word 33's data
        if (lane == 0 && atomicCAS(&s_found, seq - 1, seq) == seq - 1) {
          if (work == 0xFFFFFFFFu) {
            s_exit = 1;
          } else {
            spin_ns(work);
            *reply = uint64_t(seq) << 32 | polls | warp << 16;
            __threadfence_system();
          }
        }
        break;
      }
    }
    __syncthreads();
    if (s_exit) return;
  }
}

int main(int argc, char** argv) {
  const int mode = argc > 1 ? std::atoi(argv[1]) : 0;
  const uint64_t pause_ns = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 0;
  const double host_ns = argc > 3 ? std::atof(argv[3]) : 700;
  const int calls = 3000;
  uint64_t *job, *job2, *reply;
  cudaHostAlloc(&job, 4096, cudaHostAllocMapped);
  cudaHostAlloc(&job2, 4096, cudaHostAllocMapped);
  cudaHostAlloc(&reply, 64, cudaHostAllocMapped);
  std::fill(job, job + 512, 0ull);
  std::fill(job2, job2 + 512, 0ull);
  *reply = 0;
  responder<<<1, 128>>>(job, job2, reply, mode, pause_ns);
  std::printf("mode %d pause %llu ns, host %.0f ns between a reply and the next post\n", mode,
              (unsigned long long)pause_ns, host_ns);
  std::printf("%8s %8s %8s %8s %8s %8s\n", "work ns", "p10 us", "p50 us", "p90 us", "mean", "polls");
  uint32_t seq = 0;
  // Posts job seq (its last word's data: the work, ns) to both copies.
  const auto post = [&](uint32_t work) {
    ++seq;
    const uint64_t tag = uint64_t(seq) << 32;
    volatile uint64_t* w = job;
    volatile uint64_t* w2 = job2;
    for (int j = 0; j < kWords; ++j) {
      const uint64_t v = tag | (j == kWords - 1 ? work : uint32_t(j));
      w[j] = v;
      if (mode == 2 || mode == 4) w2[j] = v;
    }
  };
  for (uint32_t work = 4000; work <= 8000; work += 200) {
    std::vector<double> t;
    double polls = 0;
    for (int i = 0; i < calls; ++i) {
      const auto spin_end = C::now() + std::chrono::nanoseconds(int64_t(host_ns));
      while (C::now() < spin_end) {
      }
      const auto t0 = C::now();
      post(work);
      const volatile uint64_t* r = reply;
      uint64_t v;
      while (uint32_t((v = *r) >> 32) != seq) {
        if (C::now() - t0 > std::chrono::seconds(2)) {
          std::printf("no reply in 2 s (job %u): the poll never saw it\n", seq);
          std::exit(1);
        }
      }
      const auto t1 = C::now();
      if (i >= calls / 10) {
        t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        polls += double(v & 0xFFFFu);
      }
    }
    std::sort(t.begin(), t.end());
    double mean = 0;
    for (double x : t) mean += x;
    mean /= double(t.size());
    std::printf("%8u %8.2f %8.2f %8.2f %8.2f %8.2f\n", work, t[t.size() / 10], t[t.size() / 2],
                t[t.size() * 9 / 10], mean, polls / double(t.size()));
  }
  post(0xFFFFFFFFu);  // the kernel's exit
  cudaDeviceSynchronize();
  return 0;
}
