// The persistent batch-1 search kernel (search_params::persistent): the multi-CTA search body
// (multi_cta.cuh) in a loop that takes one query after another from mapped host memory. Its
// host side is persistent.cu.
#pragma once

#include <cstdint>

#include "cuda/launch.hpp"
#include "cuda/search/multi_cta.cuh"

namespace cagra::cuda {
namespace dev {

/** Persistent mode (search_params::persistent, batch 1): the kernel stays resident and takes one
 *  query after another from mapped host memory, so a query costs no launch and no synchronize,
 *  and runs on SMs whose instruction caches already hold the kernel (a fresh launch of this
 *  kernel on a 1M-row set spends microseconds refetching code that the data evicted from L2).
 *
 *  The host posts job `seq` by writing the query and its seed state (query_seed_state) as LL
 *  words (4 data bytes | seq << 32, as in NCCL's low-latency protocol: each 8-byte word arrives
 *  whole, so a word with the new seq holds new data and no flag or fence is needed). CTA 0 alone
 *  polls the host (every CTA polling made PCIe the bottleneck: 70 us a query at 16 CTAs, 400 us
 *  at 64), all the job's words at once, one word a thread, so a poll that sees the job has it
 *  whole (one PCIe round trip); it copies the words, still LL, to device memory, where the other
 *  CTAs poll them the same way in L2. Job seq uses hash half seq & 1 (and empties the other)
 *  and writes its lists tagged with seq (the host merges them). The host posts a job only after
 *  it has all the last one's lists, so no CTA ever runs ahead into a job whose state the
 *  previous one still uses.
 *
 *  Exit: the host raises *h_stop (then synchronizes the stream), or CTA 0 finds no job for
 *  lifetime_ns; either way it publishes "leave" and every CTA returns. A job posted as the
 *  kernel leaves finds no kernel: the host sees the stream finish without results and launches
 *  again, starting at that job. */
struct persistent_args {
  const uint64_t* h_words;      // [n_words] the job as LL words: the query, then the state (lo, hi)
  const uint32_t* h_stop;       // raised by the host: leave
  uint32_t* d_hash;             // 2 halves of 2^hash_bits slots
  unsigned long long* d_leave;  // set by CTA 0: leave
  uint64_t* d_words;            // [n_words] the job's words, copied by CTA 0 (LL words too)
  uint32_t n_words;             // query words + 2
  uint32_t first_seq;
  uint64_t lifetime_ns;
};

/** The whole CTA, one poll of job seq's n words (LL words | seq << 32) at `words` (host or
 *  device memory, read uncached): each thread reads its words, all in flight together, and
 *  stores their data in raw[] (the query) and state[] (the last two). True when every word
 *  carries seq (then raw and state hold the job). */
__device__ __forceinline__ bool poll_job(const uint64_t* words, uint32_t n, uint32_t seq,
                                         uint32_t* raw, uint32_t* state) {
  bool ok = true;
  for (uint32_t w = threadIdx.x; w < n; w += blockDim.x) {
    const uint64_t v = reinterpret_cast<const volatile uint64_t*>(words)[w];
    ok &= uint32_t(v >> 32) == seq;
    if (w < n - 2)
      raw[w] = uint32_t(v);
    else
      state[w - (n - 2)] = uint32_t(v);
  }
  return __syncthreads_and(ok);
}

template <typename T, uint32_t kTeam>
__global__ void __launch_bounds__(kMultiCtaMaxBlock, 4)
    multi_cta_persistent(const multi_cta_args a, const persistent_args p) {
  extern __shared__ __align__(16) uint8_t smem[];
  uint32_t* raw = reinterpret_cast<uint32_t*>(smem + a.smem_raw);
  __shared__ uint32_t s_state[2];
  const uint32_t tid = threadIdx.x;
  const size_t half = size_t{1} << a.hash_bits;
  uint64_t idle_since = global_ns();
  for (uint32_t seq = p.first_seq;; seq = seq + 1 == 0 ? 1 : seq + 1) {
    for (;;) {  // wait for job seq
      bool leave = false;
      if (blockIdx.x == 0) {
        // The stop flag's read flies with the words' reads.
        const uint32_t stop = tid == 0 ? *reinterpret_cast<const volatile uint32_t*>(p.h_stop) : 0u;
        // Relay the words only once they all carry seq (a partial copy would be harmless, as the
        // other CTAs check every word, but costs device writes on every poll).
        if (poll_job(p.h_words, p.n_words, seq, raw, s_state)) {
          for (uint32_t w = tid; w < p.n_words; w += blockDim.x)
            p.d_words[w] =
                (w < p.n_words - 2 ? raw[w] : s_state[w - (p.n_words - 2)]) | uint64_t{seq} << 32;
          break;
        }
        leave = tid == 0 && (stop != 0 || global_ns() - idle_since > p.lifetime_ns);
        if (leave) atomicExch(p.d_leave, 1ull);
      } else {
        if (poll_job(p.d_words, p.n_words, seq, raw, s_state)) break;
        leave = tid == 0 && *reinterpret_cast<volatile unsigned long long*>(p.d_leave) != 0;
      }
      if (__syncthreads_or(leave)) return;
    }
    multi_cta_args job = a;
    job.d_hash = p.d_hash + (seq & 1) * half;
    job.d_clear = reinterpret_cast<uint4*>(p.d_hash + ((seq + 1) & 1) * half);
    job.clear_vec4 = half / 4;
    job.tag = seq;
    job.query_state = s_state[0] | uint64_t{s_state[1]} << 32;
    job.has_query_state = 1;
    multi_cta_body<T, kTeam>(job, nullptr);
    __syncthreads();
    idle_since = global_ns();
  }
}

}  // namespace dev

template <typename T>
void launch_multi_cta_persistent(const multi_cta_args& args, const persistent_launch& pl,
                                 uint32_t team, uint32_t block, size_t smem, cudaStream_t stream) {
  const dev::persistent_args p{pl.h_words, pl.h_stop,  pl.d_hash,    pl.d_leave,
                               pl.d_words, pl.n_words, pl.first_seq, pl.lifetime_ns};
  with_team(team, [&](auto t) {
    launch_with_smem(dev::multi_cta_persistent<T, decltype(t)::value>, dim3(args.n_ctas, 1), block,
                     smem, stream, args, p);
  });
}

}  // namespace cagra::cuda
