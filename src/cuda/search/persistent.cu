// The host side of the persistent batch-1 search (search_params::persistent; the kernel and its
// protocol are in persistent.cuh): the kernel is launched on an index's first such query and
// again when the plan changes or it left on its own (idle for its lifetime); each query
// is posted as tagged words in mapped memory and answered as tagged per-CTA lists that the host
// merges. stop_persistent ends it before the index is searched another way or destroyed. The
// kernel leaves its device state as the next launch needs it, so a relaunch is one launch: the
// buffers are initialized only when allocated, after an error, and once every 2^32 - 1 tags.
#include "cuda/search/persistent.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "core/bits.hpp"
#include "cuda/backend.hpp"
#include "cuda/check.hpp"
#include "cuda/launch.hpp"
#include "cuda/search/host_lists.hpp"
#include "cuda/search/initial_pool.hpp"
#include "cuda/search/launch_args.hpp"
#include "cuda/search/run_kernels.hpp"
#include "cuda/testing.hpp"

namespace cagra::cuda {
namespace {

/** The host takes the kernel for gone this long before its lifetime ends (persistent_search).
 *  The lifetime, how long the kernel waits for a job before it leaves (its CTAs hold their SMs,
 *  polling, until then, and cudaDeviceSynchronize or cudaFree elsewhere in the process waits for
 *  it), is search_plan::persistent_lifetime_us (1 ms by default, at least 200 us). */
constexpr uint64_t kIdleMarginNs = 50'000;

/** Call tags (search_workspace::next_tag) repeat after this many. */
constexpr uint64_t kTagCycle = 0xFFFFFFFFull;

/** Launches the kernel with the buffers of `st` (which the caller has sized), first job `seq`
 *  (the tag just issued, also the launch's generation). */
void launch_persistent(index_state& st, const multi_cta_launch& lp, uint32_t n_words, uint32_t seq,
                       uint64_t lifetime_ns) {
  persistent_state& ps = st.persistent;
  const cudaStream_t stream = st.stream.get();
  *reinterpret_cast<volatile uint32_t*>(ps.stop.data()) = 0;
  // A kernel that left normally left the hash empty and the exit count 0, and d_words and the
  // leave word carry only tags issued since the last zeroing: no seq of this launch matches
  // them until the tags come round again.
  if (!ps.clean || st.io.tags_issued - ps.zeroed_at >= kTagCycle) {
    CAGRA_CUDA_TRY(cudaMemsetAsync(ps.hash.data(), 0xFF, ps.hash.bytes(), stream));
    CAGRA_CUDA_TRY(cudaMemsetAsync(ps.counters.data(), 0, ps.counters.bytes(), stream));
    ps.zeroed_at = st.io.tags_issued;
  }
  ps.clean = false;  // until the kernel is known to have left
  multi_cta_args a = lp.args;
  a.d_dataset = st.dataset.data();
  a.d_graph = st.graph.data();
  a.h_lists = st.io.host_lists.data();
#if CAGRA_MCTA_TRACE
  a.d_trace = testing::multi_cta_trace();
#endif
  persistent_launch pl;
  pl.h_words = ps.words.data();
  pl.h_stop = ps.stop.data();
  pl.d_hash = ps.hash.data();
  // counters: the leave word, the exit count (the word after it: persistent.cuh), the job's words.
  pl.d_leave = reinterpret_cast<unsigned long long*>(ps.counters.data());
  pl.d_words = reinterpret_cast<uint64_t*>(ps.counters.data() + 4);
  pl.n_words = n_words;
  pl.first_seq = seq;
  pl.lifetime_ns = lifetime_ns;
  with_device_type(st.type, [&](auto tag) {
    using T = decltype(tag);
    // Every CTA must be resident at once (a job waits for all of them): on an idle device, or
    // the plan asked for more CTAs than the device holds at this size.
    ps.ctas_per_sm = multi_cta_persistent_ctas_per_sm<T>(lp.team, lp.block, lp.smem);
    const int sms = sm_count(st.device);
    CAGRA_EXPECTS(uint64_t{ps.ctas_per_sm} * uint64_t(sms) >= a.n_ctas,
                  "the persistent search kernel needs its %u CTAs resident at once, but CUDA "
                  "device %d holds %u a multiprocessor (%zu bytes of shared memory each) on %d: "
                  "search with fewer CTAs (search_width) or persistent = false",
                  a.n_ctas, st.device, ps.ctas_per_sm, lp.smem, sms);
    launch_multi_cta_persistent<T>(a, pl, lp.team, lp.block, lp.smem, stream);
  });
  ps.running = true;
}

}  // namespace

// In order: x86 stores become visible in program order, and the volatile stores keep the
// compiler's order. Whole words are read with a fixed-size copy (one load): a copy of min(4,
// bytes left) bytes became a byte loop through the stack, and each word's load then waited on
// four byte stores (no store forwarding): the post took 0.4-0.6 us of the call (SIFT-wall-1M,
// H200, traced), ~80 ns in isolation once the copy is one load (scripts/dev/host-costs.cu).
void write_job_words(volatile uint64_t* words, const uint8_t* query, size_t q_bytes, uint64_t state,
                     int32_t norm, uint32_t seq) {
  const uint32_t whole = static_cast<uint32_t>(q_bytes / 4);
  const uint32_t q_words = static_cast<uint32_t>((q_bytes + 3) / 4);
  const uint64_t tag = uint64_t{seq} << 32;
  for (uint32_t w = 0; w < whole; ++w) {
    uint32_t v;
    std::memcpy(&v, query + 4 * size_t{w}, 4);
    words[w] = v | tag;
  }
  if (whole < q_words) {  // the last 1-3 bytes (byte rows of a dimension not a multiple of 4)
    uint32_t v = 0;
    std::memcpy(&v, query + 4 * size_t{whole}, q_bytes - 4 * size_t{whole});
    words[whole] = v | tag;
  }
  words[q_words] = (state & 0xFFFFFFFFu) | tag;
  words[q_words + 1] = (state >> 32) | tag;
  words[q_words + 2] = uint64_t{static_cast<uint32_t>(norm)} | tag;
}

int32_t byte_query_norm(dtype type, const uint8_t* query, size_t q_bytes) {
  int32_t sum = 0;
  for (size_t i = 0; i < q_bytes; ++i) {
    const int32_t v =
        type == dtype::i8 ? int32_t(static_cast<int8_t>(query[i])) : int32_t(query[i]);
    sum += v * v;
  }
  return sum;
}

#if CAGRA_MCTA_TRACE
testing::persistent_host_stamps& testing::persistent_stamps() {
  static persistent_host_stamps stamps;
  return stamps;
}
#endif

uint32_t testing::persistent_ctas_per_sm(const cagra::index& idx, int device) {
  return device_index(idx, device)->persistent.ctas_per_sm;
}

void stop_persistent(index_state& st) noexcept {
  persistent_state& ps = st.persistent;
  if (!ps.running) return;
  *reinterpret_cast<volatile uint32_t*>(ps.stop.data()) = 1;
  const cudaError_t e = cudaStreamSynchronize(st.stream.get());
  if (e != cudaSuccess)
    std::fprintf(stderr, "cagra: stopping the persistent search kernel: %s\n",
                 cudaGetErrorString(e));
  *reinterpret_cast<volatile uint32_t*>(ps.stop.data()) = 0;
  ps.running = false;
  ps.clean = e == cudaSuccess;  // it left its state as a launch needs it
}

void persistent_search(index_state& st, const search_plan& plan, metric m, const uint8_t* query,
                       size_t q_bytes, uint32_t* ids, float* distances, int device,
                       const uint32_t* filter, const uint32_t* host_allowed) {
#if CAGRA_MCTA_TRACE
  testing::persistent_stamps().entered = steady_ns();
#endif
  multi_cta_launch lp = make_multi_cta_launch(st, plan, m);
  lp.args.d_filter = filter;  // one bitset for every job of the launch (stride 0)
  lp.args.filter_stride = 0;
  CAGRA_HOST_STEP(5);
  persistent_state& ps = st.persistent;
  // The initial nodes from the pool (initial_pool.hpp), which the running kernel holds: made or
  // made again (another size, rows added) only while none runs.
  const uint32_t pool_rows = plan.pool_rows_per_cta;
  if (pool_rows) {
    if (ps.running && !initial_pool_current(st, pool_rows, lp.args.n_ctas)) stop_persistent(st);
    use_initial_pool(st, lp, pool_rows, st.stream.get());
  }
  check_shared_memory(lp.smem, device, "multi-CTA", plan);
  CAGRA_HOST_STEP(6);
  // Byte rows of whole 16-byte chunks: the query's bytes are its distance layout, so the host
  // sends |q|^2 with them and the kernel converts nothing (multi_cta_args::query_ready).
  const bool byte_rows = st.type == dtype::u8 || st.type == dtype::i8;
  lp.args.query_ready = byte_rows && q_bytes == size_t{lp.args.n_chunks} * 16 ? 1 : 0;
  const int32_t norm = lp.args.query_ready ? byte_query_norm(st.type, query, q_bytes) : 0;
  const multi_cta_args& p = lp.args;
  const uint32_t q_words = static_cast<uint32_t>((q_bytes + 3) / 4), n_words = q_words + 3;
  const uint64_t lifetime_ns = uint64_t{std::max(plan.persistent_lifetime_us, 200u)} * 1000;
  // (A pool made again stopped the kernel above; a traced kernel is another kernel.)
#if CAGRA_MCTA_TRACE
  const uint64_t traced = reinterpret_cast<uint64_t>(testing::multi_cta_trace());
#else
  const uint64_t traced = 0;
#endif
  persistent_key key{p.n_ctas,          p.n_init,    p.max_iterations, p.min_iterations,
                     p.hash_bits,       p.k,         p.seed,           uint64_t(p.metric),
                     lp.team,           lp.block,    lp.smem,          n_words,
                     uint64_t(st.type), lifetime_ns, traced,           p.pool_rows_per_cta};
  key[16] = reinterpret_cast<uint64_t>(p.d_filter);  // its bitset stays while it runs: search.cu
  if (ps.running && key != ps.key) stop_persistent(st);
  // A kernel (nearly) idle for its lifetime has left, or is about to: a stop then a launch,
  // rather than a job that it may miss (found out only once the stream is seen finished). Its
  // idle clock starts before the host's (before its lists arrive): hence the margin.
  if (ps.running && std::chrono::steady_clock::now() - ps.answered >
                        std::chrono::nanoseconds(lifetime_ns - kIdleMarginNs))
    stop_persistent(st);
  CAGRA_HOST_STEP(7);
  if (!ps.running) {  // the buffers may change only while no kernel runs
    const size_t hash_size = ps.hash.size(), counters_size = ps.counters.size();
    // An even count of words and 16 bytes of stop flag: CTA 0 copies them 16 bytes at a time
    // (persistent.cuh, poll_issue_async).
    const size_t words_even = (n_words + size_t{1}) / 2 * 2;
    if (ps.words.size() < words_even) ps.words.reserve(words_even);
    ps.stop.reserve(4);
    ps.hash.reserve(size_t{3} << p.hash_bits);  // three regions (persistent.cuh)
    // The leave word and the exit count (8 bytes each), the job's words (8 each).
    ps.counters.reserve(4 + 2 * words_even);
    if (ps.hash.size() != hash_size || ps.counters.size() != counters_size)
      ps.clean = false;  // new memory: initialized at the launch
    reserve_zeroed(st.io.host_lists, size_t{p.n_ctas} * p.list_k * 2);
  }
  const uint64_t state = bits::query_seed_state(p.seed, query, static_cast<uint32_t>(q_bytes));
  for (int attempt = 0;; ++attempt) {
    const uint32_t seq = st.io.next_tag();
#if CAGRA_MCTA_TRACE
    testing::persistent_stamps().seeded = steady_ns();
#endif
    write_job_words(ps.words.data(), query, q_bytes, state, norm, seq);  // the post
#if CAGRA_MCTA_TRACE
    testing::persistent_stamps().posted = steady_ns();
#endif
    if (!ps.running) {
      launch_persistent(st, lp, n_words, seq, lifetime_ns);
      ps.key = key;
    }
#if CAGRA_MCTA_TRACE
    uint64_t* heads_seen = &testing::persistent_stamps().heads_seen;
#else
    uint64_t* heads_seen = nullptr;
#endif
    if (merge_host_lists(st.io.host_lists.data(), p.n_ctas, p.list_k, plan.k, seq, st.stream.get(),
                         ids, distances, host_allowed, heads_seen)) {
#if CAGRA_MCTA_TRACE
      testing::persistent_stamps().merged = steady_ns();
#endif
      break;
    }
    // It left (idle) just as the job came, its state as a launch needs it (the stream finished
    // without an error): launch again, with a new seq (a generation of its own).
    ps.running = false;
    ps.clean = true;
    CAGRA_EXPECTS(attempt < 2,
                  "internal error: the persistent search kernel ended without answering");
  }
  ps.answered = std::chrono::steady_clock::now();
}

}  // namespace cagra::cuda
