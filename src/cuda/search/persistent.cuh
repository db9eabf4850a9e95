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
 *  at 64), all the job's words at once, so a poll that sees the job has it whole (one PCIe
 *  round trip), two such polls in flight (kAsyncPollWords); it copies the words, still LL, to
 *  device memory, where the other CTAs poll them, one word a thread, in L2. The launch's job
 *  j (j = 0, 1, ...) searches with hash region j % 3 and writes its lists tagged with seq (the
 *  host merges them); then each CTA empties its share of job j - 1's region (which job j + 2
 *  uses) and fences, before it looks for job j + 1: the emptying is off the query's path (at
 *  the start of a job it cost each CTA ~0.5 us; with two regions a fast CTA of job j + 1 could
 *  insert into the region a slow CTA still empties), and the host posts job j + 2 only after
 *  every CTA's list of job j + 1, which each CTA writes after its fence. The host posts a job
 *  only after it has all the last one's lists, so no CTA ever runs ahead into a job whose state
 *  the previous one still uses.
 *
 *  Exit: the host raises *h_stop (only between jobs, once it has every list of the last one;
 *  then it synchronizes the stream), or CTA 0 finds no job for lifetime_ns. CTA 0 then writes
 *  the launch's generation (first_seq) to *d_leave, with kLeaveStop on a stop, and every CTA
 *  returns once it sees that value (looking once more for a job first: a job relayed before the
 *  leave word is run, whichever word a CTA sees first). A job posted as the kernel leaves finds
 *  no kernel: the host sees the stream finish without results and launches again, with a new
 *  seq.
 *
 *  What a launch needs, the kernel leaves behind, so that a relaunch costs no memset: all three
 *  hash regions empty (on the way out the last job's region is emptied: on a stop by every CTA,
 *  its share, as no CTA searches any more; on an idle exit by the last CTA to leave, since the
 *  host may still be waiting for a late CTA's list of the last job), the exit count 0 (reset
 *  by that last CTA), and in d_words and *d_leave only seqs of this launch's jobs. Seqs are the
 *  host's call tags (search_workspace::next_tag: increasing, never 0), so the jobs and the
 *  generation of a later launch never match them; the host zeroes these words when it
 *  allocates them, after an error, and before the tags could come round again (persistent.cu). */
struct persistent_args {
  const uint64_t* h_words;      // [n_words] the job as LL words: the query, then the state (lo,
                                // hi) and |q|^2 (kJobTailWords)
  const uint32_t* h_stop;       // raised by the host: leave
  uint32_t* d_hash;             // 3 regions of 2^hash_bits slots, all empty at launch and at exit
  unsigned long long* d_leave;  // the leave word: CTA 0 writes first_seq (| kLeaveStop) there
  unsigned long long* d_exits;  // CTAs gone after an idle exit: 0 at launch, the last resets it
  uint64_t* d_words;            // [n_words] the job's words, copied by CTA 0 (LL words too)
  uint32_t n_words;             // query words + kJobTailWords
  uint32_t first_seq;           // the first job's seq, also the launch's generation (never 0)
  uint64_t lifetime_ns;
};

/** In the leave word: the host stopped the kernel (else it left idle). */
constexpr unsigned long long kLeaveStop = 1ull << 32;

/** Words of a job after the query's: its seed state (two) and |q|^2 (multi_cta_args::
 *  query_norm; 0 where the kernel converts the query itself). */
constexpr uint32_t kJobTailWords = 3;

/** The whole CTA: job seq's n words (LL words | seq << 32), word w as read(w), each thread
 *  its words: their data into raw[] (the query) and state[] (the last kJobTailWords). True when
 *  every word carries seq (then raw and state hold the job). */
template <typename Read>
__device__ __forceinline__ bool take_job(Read read, uint32_t n, uint32_t seq, uint32_t* raw,
                                         uint32_t* state) {
  bool ok = true;
  for (uint32_t w = threadIdx.x; w < n; w += blockDim.x) {
    const uint64_t v = read(w);
    ok &= uint32_t(v >> 32) == seq;
    if (w < n - kJobTailWords)
      raw[w] = uint32_t(v);
    else
      state[w - (n - kJobTailWords)] = uint32_t(v);
  }
  return __syncthreads_and(ok);
}

/** The whole CTA, one poll of job seq's n words at `words` (host or device memory, read
 *  uncached, all of a thread's words in flight together): take_job. */
__device__ __forceinline__ bool poll_job(const uint64_t* words, uint32_t n, uint32_t seq,
                                         uint32_t* raw, uint32_t* state) {
  return take_job([&](uint32_t w) { return reinterpret_cast<const volatile uint64_t*>(words)[w]; },
                  n, seq, raw, state);
}

/** CTA 0 polls the host with two polls in flight, issued kAsyncPollGapNs apart, where the job
 *  has at most kAsyncPollWords words (else one poll at a time, poll_job). A poll samples host
 *  memory once a PCIe round trip (~1.6 us): with one in flight a post waited for the next
 *  sample, up to a round trip, by the phase of the host's post against the polls. Two in
 *  flight sample twice as often. The polls are
 *  cp.async copies into shared memory, not loads into registers: a register load still in
 *  flight when the other one finds the job would hold back the first instruction that reuses
 *  its register, up to half a round trip into the search. In isolation (scripts/dev/poll-phase.cu,
 *  H200) a reply came 1.9-2.5 us after the post plus the work, against 2.9-5.0 us with one
 *  register poll, by the host's time between reply and post; in the kernel, at the defaults on
 *  SIFT-wall-1M, medians by round 1.02-1.05x on three H200 machines (docs/cuda.md, "Two polls
 *  of the host in flight"). .cg copies read the host's memory each time (never a stale line:
 *  the poll would not end). */
constexpr uint32_t kAsyncPollWords = 64;
constexpr uint64_t kAsyncPollGapNs = 750;

/** Where a poll's copy of the stop flag lies in its buffer (after the words). */
constexpr uint32_t kAsyncPollStop = kAsyncPollWords;

/** A poll buffer's 8-byte words: the job's, then 16 bytes of the stop flag. */
constexpr uint32_t kAsyncPollBufWords = kAsyncPollWords + 2;

/** The whole CTA: one asynchronous poll of the job's n words and the stop flag into `buf`
 *  (shared memory, kAsyncPollBufWords): thread t copies words 2t and 2t + 1 (the host's buffer
 *  holds an even count), the last thread the stop flag's 16 bytes; one commit group. */
__device__ __forceinline__ void poll_issue_async(const uint64_t* words, uint32_t n,
                                                 const uint32_t* stop, uint64_t* buf) {
  const uint32_t t = threadIdx.x;
  const void* src = nullptr;
  uint64_t* dst = nullptr;
  if (2 * t < n) {
    src = words + 2 * t;
    dst = buf + 2 * t;
  } else if (t == blockDim.x - 1) {
    src = stop;
    dst = buf + kAsyncPollStop;
  }
  if (src) {
    const uint32_t d = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
  }
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/** The calling thread: its copies but the last group landed (the older poll). */
__device__ __forceinline__ void poll_wait_older() {
  asm volatile("cp.async.wait_group 1;\n" ::: "memory");
}

/** The calling thread: all its copies landed. */
__device__ __forceinline__ void poll_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

/** The whole CTA, a poll landed in `buf`: take_job. */
__device__ __forceinline__ bool polled_job(const uint64_t* buf, uint32_t n, uint32_t seq,
                                           uint32_t* raw, uint32_t* state) {
  return take_job([&](uint32_t w) { return buf[w]; }, n, seq, raw, state);
}

/** The whole CTA: slots [first, last) of `v` (4 hash slots each) made empty. */
__device__ __forceinline__ void empty_slots(uint4* v, uint64_t first, uint64_t last) {
  const uint4 empty = make_uint4(kEmptySlot, kEmptySlot, kEmptySlot, kEmptySlot);
  for (uint64_t w = first + threadIdx.x; w < last; w += blockDim.x) v[w] = empty;
}

/** Hash region r (of 3) of the persistent kernel, 2^hash_bits slots as groups of 4. */
__device__ __forceinline__ uint4* hash_region(const persistent_args& p, uint32_t hash_bits,
                                              uint32_t r) {
  return reinterpret_cast<uint4*>(p.d_hash + uint64_t{r} * (uint64_t{1} << hash_bits));
}

/** The whole CTA: its share of the n4 groups at `v` made empty. */
__device__ __forceinline__ void empty_share(uint4* v, uint64_t n4) {
  const uint64_t per = (n4 + gridDim.x - 1) / gridDim.x, first = blockIdx.x * per;
  empty_slots(v, min(n4, first), min(n4, first + per));
}

/** The whole CTA, leaving (`leave`: the leave word) after `jobs` jobs of this launch: the last
 *  job's hash region emptied (the others are empty: the jobs after theirs emptied them), as the
 *  protocol above says. */
__device__ __forceinline__ void persistent_exit(const persistent_args& p, uint32_t hash_bits,
                                                uint32_t jobs, unsigned long long leave) {
  const uint64_t n4 = (uint64_t{1} << hash_bits) / 4;
  uint4* dirty = hash_region(p, hash_bits, (jobs + 2) % 3);  // job jobs - 1's
  if (leave & kLeaveStop) {  // no CTA searches: each empties its share
    if (jobs > 0) empty_share(dirty, n4);
    return;
  }
  // Idle: a CTA may still search (the host waits for its list), so the last CTA to leave, which
  // every other CTA's count orders after its last job, empties the whole half.
  __shared__ bool s_last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    s_last = atomicAdd(p.d_exits, 1ull) == gridDim.x - 1;
  }
  __syncthreads();
  if (!s_last) return;
  __threadfence();
  if (threadIdx.x == 0) *p.d_exits = 0;  // for the next launch
  if (jobs > 0) empty_slots(dirty, 0, n4);
}

/** CTA 0's thread 0, its poll found no job (`stop`: the host's stop flag as polled): whether the
 *  kernel leaves, the stop flag raised or no job for lifetime_ns. If so, the leave word
 *  (first_seq, | kLeaveStop on a stop) is published after the words of every job relayed before
 *  it and kept in `leave_word`. The other threads: false. */
__device__ __forceinline__ bool announce_leave(const persistent_args& p, uint32_t stop,
                                               uint64_t idle_since,
                                               unsigned long long& leave_word) {
  if (threadIdx.x != 0 || (stop == 0 && global_ns() - idle_since <= p.lifetime_ns)) return false;
  leave_word = p.first_seq | (stop != 0 ? kLeaveStop : 0ull);
  __threadfence();  // the words of every job relayed before it, then the leave word
  atomicExch(p.d_leave, leave_word);
  return true;
}

// At most two CTAs an SM (a pool slice takes up to 108 KiB of shared memory): registers for two,
// so that the pool scan (a row's loads in flight, and the byte query held in registers) and the
// loop do not spill (with the launch kernels' bound of four, 64 registers, they spilled ~500
// bytes a thread).
template <typename T, uint32_t kTeam>
__global__ void __launch_bounds__(kMultiCtaMaxBlock, 2)
    multi_cta_persistent(const multi_cta_args a, const persistent_args p) {
  extern __shared__ __align__(16) uint8_t smem[];
  uint32_t* raw = reinterpret_cast<uint32_t*>(smem + a.smem_raw);
  __shared__ uint32_t s_state[kJobTailWords];
  __shared__ unsigned long long s_leave;
  const uint32_t tid = threadIdx.x;
  const uint64_t region = uint64_t{1} << a.hash_bits;
  // The CTA's slice of the initial-node pool, once for all the launch's jobs.
  if (a.pool_rows_per_cta) {
    pool_copy_issue(a, smem + a.smem_pool);
    __pipeline_wait_prior(0);
    __syncthreads();
    pool_norms<T>(a, smem + a.smem_pool);
    __syncthreads();
  }
  __shared__ __align__(16) uint64_t s_poll[2][kAsyncPollBufWords];
  // (The last thread copies the stop flag: it must have no words of its own.)
  const bool async_poll =
      blockIdx.x == 0 && p.n_words <= kAsyncPollWords && 2 * (blockDim.x - 1) >= p.n_words;
  uint64_t idle_since = global_ns();
  uint32_t jobs = 0;  // run by this launch
  for (uint32_t seq = p.first_seq;; seq = seq + 1 == 0 ? 1 : seq + 1) {
#if CAGRA_MCTA_TRACE
    uint64_t poll_issued = 0;
#endif
    // CTA 0's two polls in flight: the older one (slot k) is waited for and checked, then
    // issued again, at least the gap after the other one (checked next).
    uint32_t k = 0;
    uint64_t issued_k = 0, issued_other = 0;  // when slot k and the other slot were issued
    if (async_poll) {
      poll_wait_all();  // the last job's poll still in flight (long landed)
      poll_issue_async(p.h_words, p.n_words, p.h_stop, s_poll[0]);
      issued_k = global_ns();
      while (global_ns() < issued_k + kAsyncPollGapNs) {
      }
      poll_issue_async(p.h_words, p.n_words, p.h_stop, s_poll[1]);
      issued_other = global_ns();
    }
    for (;;) {  // wait for job seq
      bool leave = false;
#if CAGRA_MCTA_TRACE
      poll_issued = global_ns();  // stamped below if this poll finds the job
#endif
      if (async_poll) {
        poll_wait_older();
        __syncthreads();  // every thread's copies of slot k landed
#if CAGRA_MCTA_TRACE
        poll_issued = issued_k;
#endif
        if (polled_job(s_poll[k], p.n_words, seq, raw, s_state)) {
          for (uint32_t w = tid; w < p.n_words; w += blockDim.x) p.d_words[w] = s_poll[k][w];
          break;
        }
        leave = announce_leave(p, static_cast<uint32_t>(s_poll[k][kAsyncPollStop]), idle_since,
                               s_leave);
        if (!__syncthreads_or(leave)) {
          while (global_ns() < issued_other + kAsyncPollGapNs) {
          }
          poll_issue_async(p.h_words, p.n_words, p.h_stop, s_poll[k]);
          issued_k = issued_other;
          issued_other = global_ns();
          k ^= 1;
          continue;
        }
      } else if (blockIdx.x == 0) {
        // The stop flag's read flies with the words' reads.
        const uint32_t stop = tid == 0 ? *reinterpret_cast<const volatile uint32_t*>(p.h_stop) : 0u;
        // Relay the words only once they all carry seq (a partial copy would be harmless, as the
        // other CTAs check every word, but costs device writes on every poll).
        if (poll_job(p.h_words, p.n_words, seq, raw, s_state)) {
          for (uint32_t w = tid; w < p.n_words; w += blockDim.x)
            p.d_words[w] =
                (w < p.n_words - kJobTailWords ? raw[w]
                                               : s_state[w - (p.n_words - kJobTailWords)]) |
                uint64_t{seq} << 32;
          break;
        }
        leave = announce_leave(p, stop, idle_since, s_leave);
      } else {
        // The leave word's read flies with the words' reads (read first: a job relayed before
        // it is looked for again below).
        const unsigned long long v =
            tid == 0 ? *reinterpret_cast<volatile unsigned long long*>(p.d_leave) : 0ull;
        if (poll_job(p.d_words, p.n_words, seq, raw, s_state)) break;
        if (tid == 0) {
          leave = uint32_t(v) == p.first_seq;
          if (leave) s_leave = v;
        }
      }
      if (__syncthreads_or(leave)) {
        // The leave word seen, the words of a job relayed before it are visible too.
        __threadfence();
        if (blockIdx.x != 0 && poll_job(p.d_words, p.n_words, seq, raw, s_state)) break;
        poll_wait_all();
        persistent_exit(p, a.hash_bits, jobs, s_leave);
        return;
      }
    }
#if CAGRA_MCTA_TRACE
    if (a.d_trace && tid == 0)
      a.d_trace[blockIdx.x * kMultiCtaTraceSlots + kTracePollIssued] = poll_issued;
#endif
    multi_cta_args job = a;
    job.d_hash = p.d_hash + (jobs % 3) * region;
    job.d_clear = nullptr;  // emptied below, after the list
    job.clear_vec4 = 0;
    job.tag = seq;
    job.query_state = s_state[0] | uint64_t{s_state[1]} << 32;
    job.has_query_state = 1;
    job.query_norm = int32_t(s_state[2]);
    multi_cta_body<T, kTeam>(job, nullptr, true);
    // The list is out: the previous job's region, for job jobs + 2, emptied and fenced (system
    // scope: the host's next posts depend on this CTA's lists, written after it) while the host
    // merges.
    if (jobs > 0) {
      empty_share(hash_region(p, a.hash_bits, (jobs + 2) % 3), region / 4);
      __threadfence_system();
    }
    __syncthreads();
    ++jobs;
    idle_since = global_ns();
  }
}

}  // namespace dev

template <typename T>
uint32_t multi_cta_persistent_ctas_per_sm(uint32_t team, uint32_t block, size_t smem) {
  int n = 0;
  with_team(team, [&](auto t) {
    const auto kernel = dev::multi_cta_persistent<T, decltype(t)::value>;
    CAGRA_CUDA_TRY(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
    CAGRA_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        int(cudaSharedmemCarveoutMaxShared)));
    CAGRA_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kernel, int(block), smem));
  });
  return uint32_t(n);
}

template <typename T>
void launch_multi_cta_persistent(const multi_cta_args& args, const persistent_launch& pl,
                                 uint32_t team, uint32_t block, size_t smem, cudaStream_t stream) {
  // The exit count is the word after the leave word (persistent.cu lays them out).
  const dev::persistent_args p{pl.h_words, pl.h_stop,  pl.d_hash,    pl.d_leave,    pl.d_leave + 1,
                               pl.d_words, pl.n_words, pl.first_seq, pl.lifetime_ns};
  with_team(team, [&](auto t) {
    launch_with_smem(dev::multi_cta_persistent<T, decltype(t)::value>, dim3(args.n_ctas, 1), block,
                     smem, stream, args, p);
  });
}

}  // namespace cagra::cuda
