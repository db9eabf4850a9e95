// cagra::cuda::search: picks the kernel (choose_algo: single-CTA for large batches, multi-CTA
// for batches below the SM count or itopk > 512, paper §IV-C3), turns the resolved search plan
// into its launch configuration (team size, CTA size, hash size, shared-memory layout), moves
// the queries in and the results out through the index's cached workspace (or, for device
// memory, reads the caller's queries and writes the caller's buffers), and chunks the work:
// single-CTA grids by 65535 queries, multi-CTA launches by what the per-query device hash
// allows in kMultiCtaWorkspace bytes. Asking for single-CTA with itopk > 512 is an error, never
// a silent switch. Small host batches (<= kMappedMaxQueries, latency) skip the copies: the
// kernels read the queries from and write the results to mapped pinned host memory. Multi-CTA
// batches of <= kHostMergeMaxQueries go further: each CTA writes its best entries as tagged
// words that the host polls and merges (merge_host_lists), and a batch-1 query travels in the
// launch with its seed state, so such a call is one launch and no synchronize; with
// search_params::persistent not even the launch (persistent_search).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include <cuda_fp16.h>

#include "cuda/backend.hpp"
#include "cuda/check.hpp"
#include "cuda/search/device_queries.hpp"
#include "cuda/search/host_lists.hpp"
#include "cuda/search/multi_cta.hpp"
#include "cuda/search/single_cta.hpp"
#include "cuda/state.hpp"

namespace cagra::cuda {
namespace {

uint32_t next_pow2(uint32_t x) {
  uint32_t p = 1;
  while (p < x) p <<= 1;
  return p;
}
uint32_t ceil_log2(uint64_t x) {
  uint32_t b = 0;
  while ((uint64_t{1} << b) < x) ++b;
  return b;
}
uint32_t align16(uint32_t x) { return (x + 15u) & ~15u; }

dtype query_dtype_for(dtype storage) {
  return storage == dtype::u8 || storage == dtype::i8 ? storage : dtype::f32;
}

/** The launch configuration of one search call. */
struct launch_plan {
  single_cta_args args{};
  uint32_t team = 0, block = 0;
  size_t smem = 0;
};

/** Team size (paper §IV-B1): about four 16-byte loads per lane (row chunks / 4, rounded to a
 *  power of two), clamped to [4, 32]. Measured on bigann10k, H200 (docs/cuda.md): one load per
 *  lane (team = chunks) spends more instructions on shuffles than on the row; for 128-d f32,
 *  team 8 ran 1.7x faster than team 32, for f16 team 8 1.5x faster than 16, for u8 team 4
 *  slightly faster than 8. That data sits in L2; rows from DRAM may prefer larger teams. */
uint32_t auto_team_size(uint32_t dim, size_t elem) {
  const uint32_t chunks = static_cast<uint32_t>((size_t{dim} * elem + 15) / 16);
  return std::clamp<uint32_t>(next_pow2(chunks) / 4, 4, 32);
}

launch_plan make_launch_plan(const index_state& st, uint32_t k, const search_params& params,
                             const cpu::search_plan& plan, metric m) {
  launch_plan lp;
  single_cta_args& a = lp.args;
  const size_t elem = dtype_size(st.type);
  const uint32_t vec = static_cast<uint32_t>(16 / elem);  // elements per 16-byte chunk
  a.n_rows = static_cast<uint64_t>(st.rows);
  a.seed = params.seed;
  a.dim = st.dim;
  a.row_stride = st.row_stride;
  a.n_chunks = st.row_stride / 16;
  a.degree = st.degree;
  a.k = k;
  a.itopk = plan.itopk;
  a.itopk_p2 = next_pow2(plan.itopk);
  a.width = plan.width;
  a.n_cand = plan.width * st.degree;
  a.cand_p2 = next_pow2(a.n_cand);
  a.n_init = plan.init_count;  // the CPU's draws (cpu::search_plan), so results stay bit-identical
  a.init_p2 = next_pow2(a.n_init);
  a.max_iterations = plan.max_iterations;
  a.min_iterations = plan.min_iterations;
  a.reset_interval = plan.reset_interval;
  a.metric = static_cast<uint32_t>(m);

  // Visited hash in shared memory. Auto: about 8 slots per entry of top-M + candidates (a few
  // iterations between resets, paper: 2^8..2^13 slots, <= 4 KB per query at itopk 64); else the
  // plan's size capped at 2^13. Never below what keeps linear probing finite: a reset happens
  // at half fill, so 2^bits >= 2 * candidates and > top-M + candidates (and > initial nodes).
  const uint32_t wanted = params.hash_bits == 0
                              ? std::clamp<uint32_t>(ceil_log2(8ull * (a.itopk + a.n_cand)), 8, 13)
                              : std::min<uint32_t>(plan.hash_bits, 13);
  const uint32_t needed = ceil_log2(std::max<uint64_t>(
      {2ull * a.n_cand, uint64_t{a.itopk} + a.n_cand + 1, uint64_t{a.n_init} + 1, 256}));
  a.hash_bits = std::max(wanted, needed);

  lp.team = params.team_size ? params.team_size : auto_team_size(st.dim, elem);
  // CTA size: about two candidates per team per iteration, 64..256 threads; the CTA-wide merge
  // of long lists wants at least 128.
  const uint32_t list = a.itopk_p2 + std::max(a.cand_p2, a.init_p2);
  uint32_t block = 64;
  while (block < kMaxBlock && 2 * block < a.n_cand * lp.team) block *= 2;
  if (list > kWarpMergeMax) block = std::max(block, 128u);
  lp.block = std::max(block, lp.team);

  // The query: bytes as they are (dp4a), float rows as float (one float per element).
  const uint32_t q_smem = elem == 1 ? a.n_chunks * 16 : a.n_chunks * vec * 4;
  const uint32_t q_bytes = st.dim * static_cast<uint32_t>(dtype_size(query_dtype_for(st.type)));
  a.smem_query = 0;
  a.smem_dist = align16(q_smem);
  a.smem_ids = a.smem_dist + align16(list * 4);
  a.smem_hash = a.smem_ids + align16(list * 4);
  lp.smem = a.smem_hash + std::max<size_t>(size_t{4} << a.hash_bits, align16(q_bytes));
  return lp;
}

/** Bytes of device workspace (hash + per-CTA lists) one multi-CTA launch may use: larger
 *  batches are split into launches of as many queries as fit (at least one). The hash is kept
 *  twice (two halves, see multi_cta.cuh), so the workspace is about twice this. */
constexpr size_t kMultiCtaWorkspace = size_t{128} << 20;

/** Host batches of at most this many queries go through mapped pinned memory (no copies). */
constexpr int64_t kMappedMaxQueries = 256;
/** Multi-CTA host batches of at most this many queries are merged on the host (latency_io):
 *  beyond it the lists' PCIe traffic (n_ctas x min(k, 32) x 16 bytes a query) and the serial
 *  host merge outweigh the last-CTA merge's handshake. */
constexpr int64_t kHostMergeMaxQueries = 16;

/** The launch configuration of one multi-CTA search call. */
struct multi_launch_plan {
  multi_cta_args args{};
  uint32_t team = 0, block = 0, chunk = 0;
  size_t smem = 0;
};

multi_launch_plan make_multi_cta_plan(const index_state& st, uint32_t k, const search_params& params,
                                      const cpu::search_plan& plan, metric m) {
  multi_launch_plan lp;
  multi_cta_args& a = lp.args;
  const size_t elem = dtype_size(st.type);
  const uint32_t vec = static_cast<uint32_t>(16 / elem);
  const uint32_t samplings = std::max(1u, plan.samplings);
  a.n_rows = static_cast<uint64_t>(st.rows);
  a.seed = params.seed;
  a.dim = st.dim;
  a.row_stride = st.row_stride;
  a.n_chunks = st.row_stride / 16;
  a.degree = st.degree;
  // CTAs: enough 32-entry lists to hold itopk entries and one CTA per parent of an iteration of
  // the single-CTA search (cuVS's count; paper: "the number of CTAs x d nodes per iteration"),
  // and lists for at least 2k entries: the lists partition what the CTAs discovered, and a CTA
  // that found more than 32 of the top k loses the rest, so with lists for only k entries
  // recall@k drops (bigann10k, itopk = k = 64, 2 CTAs: 0.879 against the CPU's 0.994; with 4:
  // parity, docs/cuda.md). At most 4096 entries (the merge kernel's limit).
  const auto lists_for = [](uint32_t entries) { return (entries + kMultiCtaList - 1) / kMultiCtaList; };
  a.n_ctas = std::min(std::max({plan.width, lists_for(plan.itopk), lists_for(2 * k)}),
                      lists_for(kMultiCtaMaxItopk));
  // Random initial nodes: d per CTA (one round of distances). The CTAs together draw n_ctas x d
  // nodes, already more than the single-CTA search's d x samplings; drawing d x samplings per CTA
  // as well (3 rounds on 1M rows) cost ~4 us of batch-1 latency in the first list merge and
  // distance rounds (tests/cuda/test_cuda_latency.cpp). An explicit num_random_samplings is kept.
  a.n_init = st.degree * (params.num_random_samplings ? samplings : 1u);
  a.cand_cap = std::max(st.degree, a.n_init);
  // Iterations per CTA: an explicit max_iterations is each CTA's cap; the automatic one is the
  // single-CTA budget (itopk + 16 + log2 N expansions, cpu::make_search_plan) shared by the
  // CTAs, at least kMultiCtaMinIterations each. Each CTA expands one parent per iteration, so
  // without the split a CTA ran until its own 32 entries were all expanded (>= 32 dependent
  // iterations, ~2 us each): batch-1 latency did not fall with more CTAs. Fashion-MNIST, H200,
  // batch 1, itopk 32, 16 CTAs: recall@10 0.9955 at 4 iterations each (40 us a query) against
  // 1.0000 uncapped (120 us); docs/cuda.md.
  a.max_iterations = params.max_iterations
                         ? plan.max_iterations
                         : std::max(kMultiCtaMinIterations, (plan.max_iterations + a.n_ctas - 1) / a.n_ctas);
  a.min_iterations = std::min(plan.min_iterations, a.max_iterations);
  a.metric = static_cast<uint32_t>(m);
  a.k = k;
  a.list_k = std::min(k, kMultiCtaList);
  a.merge_p2 = std::max(32u, next_pow2(a.n_ctas * kMultiCtaList));

  // Device hash, standard (never reset during a search): at least twice the nodes the query is
  // expected to visit, estimated as the CPU plan does (top-list entries x d, plus the initial
  // nodes) over the CTAs' lists together, at most N; 2^10..2^24 slots of 4 bytes. An explicit
  // hash_bits sets the size (a table that fills up skips nodes, see kMultiCtaMaxProbe).
  const uint64_t expected =
      std::min<uint64_t>(uint64_t(st.rows), uint64_t{a.n_ctas} * (kMultiCtaList + samplings) * st.degree);
  a.hash_bits = params.hash_bits ? params.hash_bits : std::clamp<uint32_t>(ceil_log2(2 * expected), 10, 24);

  lp.team = params.team_size ? params.team_size : auto_team_size(st.dim, elem);
  // CTA size: one team per neighbor of the parent (d candidates per iteration), 64..256.
  uint32_t block = 64;
  while (block < kMultiCtaMaxBlock && block < st.degree * lp.team) block *= 2;
  lp.block = block;

  const uint32_t q_smem = elem == 1 ? a.n_chunks * 16 : a.n_chunks * vec * 4;
  const uint32_t q_bytes = st.dim * static_cast<uint32_t>(dtype_size(query_dtype_for(st.type)));
  a.smem_query = 0;
  a.smem_raw = align16(q_smem);
  a.smem_cand_d = a.smem_raw + align16(q_bytes);
  a.smem_cand_i = a.smem_cand_d + align16(2 * a.cand_cap * 4);
  // The merge's sort reuses the raw query and the candidates once the search is over.
  a.smem_merge = a.smem_raw;
  lp.smem = std::max<size_t>(a.smem_cand_i + align16(2 * a.cand_cap * 4), a.smem_merge + size_t{a.merge_p2} * 8);

  const size_t per_query = (size_t{4} << a.hash_bits) + size_t{a.n_ctas} * kMultiCtaList * 8;
  lp.chunk = static_cast<uint32_t>(std::clamp<size_t>(kMultiCtaWorkspace / per_query, 1, 65535));
  return lp;
}

template <typename F>
void dispatch_device_type(dtype t, F&& f) {
  switch (t) {
    case dtype::f32: return f(float{});
    case dtype::f16: return f(__half{});
    case dtype::u8: return f(uint8_t{});
    case dtype::i8: return f(int8_t{});
    default: CAGRA_FAIL("the CUDA backend cannot search vectors of type %s", to_string(t));
  }
}

}  // namespace

multi_cta_debug& multi_cta_debug_hooks() {
  static multi_cta_debug hooks = [] {
    multi_cta_debug h;
    const auto flag = [](const char* name) {
      const char* e = std::getenv(name);
      return e && (e[0] == '0' || e[0] == '1') && e[1] == 0 ? e[0] - '0' : -1;
    };
    h.host_flag = flag("CAGRA_MCTA_HOST_FLAG") != 0;
    h.inline_query = flag("CAGRA_MCTA_INLINE_QUERY") != 0;
    return h;
  }();
  return hooks;
}

void stop_persistent(index_state& st) noexcept {
  if (!st.persistent_running) return;
  *reinterpret_cast<volatile uint32_t*>(st.persistent_stop.data()) = 1;
  const cudaError_t e = cudaStreamSynchronize(st.stream.get());
  if (e != cudaSuccess) std::fprintf(stderr, "cagra: stopping the persistent search kernel: %s\n", cudaGetErrorString(e));
  *reinterpret_cast<volatile uint32_t*>(st.persistent_stop.data()) = 0;
  st.persistent_running = false;
}

bool can_search(const index& idx, uint32_t k, const search_params& params) {
  const dtype t = idx.storage_dtype();
  const bool type_ok = t == dtype::f32 || t == dtype::f16 || t == dtype::u8 || t == dtype::i8;
  return type_ok && std::max(params.itopk_size, k) <= kMultiCtaMaxItopk &&
         (dtype_size(t) != 1 || idx.dim() <= 16384);
}

search_algo choose_algo_for(int sm_count, int64_t batch, uint32_t itopk, search_algo requested) {
  if (requested != search_algo::automatic) return requested;
  return batch < int64_t{sm_count} || itopk > kSingleCtaMaxItopk ? search_algo::multi_cta : search_algo::single_cta;
}

search_algo choose_algo(int64_t batch, uint32_t itopk, int device, search_algo requested) {
  if (requested != search_algo::automatic) return requested;
  int sm_count = 0;
  CAGRA_CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, device));
  return choose_algo_for(sm_count, batch, itopk, requested);
}

namespace {

/** Checks shared by both entry points; returns the kernel choose_algo picks. */
search_algo check_search(const index& idx, int64_t nq, uint32_t k, const search_params& params,
                         const cpu::search_plan& plan, const uint32_t* ids, int device) {
  const int n_dev = device_count();
  CAGRA_EXPECTS(n_dev > 0, "no CUDA device is visible (use the CPU backend)");
  CAGRA_EXPECTS(device >= 0 && device < n_dev, "CUDA device %d does not exist (%d visible)", device, n_dev);
  CAGRA_EXPECTS(idx.size() > 0, "the index is empty");
  CAGRA_EXPECTS(ids != nullptr, "ids must not be null");
  CAGRA_EXPECTS(k >= 1 && k <= plan.itopk, "k = %u must be in [1, itopk = %u]", k, plan.itopk);
  CAGRA_EXPECTS(plan.width >= 1 && plan.width <= 64, "search_width %u must be in [1, 64]", plan.width);
  CAGRA_EXPECTS(dtype_size(idx.storage_dtype()) != 1 || idx.dim() <= 16384,
                "the CUDA search of byte vectors handles dim <= 16384 (exact int32 sums), got %u", idx.dim());
  const search_algo algo = choose_algo(nq, plan.itopk, device, params.algo);
  if (algo == search_algo::single_cta) {
    CAGRA_EXPECTS(plan.itopk <= kSingleCtaMaxItopk,
                  "itopk_size %u needs the multi-CTA search kernel (single-CTA handles itopk <= %u): "
                  "use algo = automatic or multi_cta", plan.itopk, kSingleCtaMaxItopk);
  } else {
    CAGRA_EXPECTS(plan.itopk <= kMultiCtaMaxItopk, "the multi-CTA search handles itopk_size <= %u (got %u)",
                  kMultiCtaMaxItopk, plan.itopk);
  }
  return algo;
}

/** Grows a tagged buffer, zeroed (tag 0 is never a call's). */
void reserve_zeroed(pinned_buffer<uint64_t>& b, size_t n) {
  if (n <= b.size()) return;
  b.reserve(n);
  std::memset(b.data(), 0, n * sizeof(uint64_t));
}

/** The latency path of a small host batch through the multi-CTA kernel: each CTA's best
 *  entries as tagged words in mapped memory (st.host_lists), which the host polls and merges
 *  (merge_host_lists) instead of synchronizing the stream, and, at batch 1, the query inside
 *  the launch. run_kernels fills in the list shape. */
struct latency_io {
  uint32_t tag = 0;  // this call's tag (never 0)
  const inline_query* query = nullptr;
  uint32_t query_bytes = 0;  // of *query
  uint32_t n_lists = 0, list_k = 0;  // per query: n_ctas lists of list_k entries (out)
};

/** The kernels over `nq` device-resident queries of the query type (`d_queries`, 4-byte
 *  aligned) into device [nq, k] ids/distances (distances may be null), queued on `stream`.
 *  The caller holds st.workspace_mutex and has made `device` current. With `io`, a multi-CTA
 *  search writes its results there instead (and returns true); a single-CTA one ignores it. */
bool run_kernels(const index& idx, index_state& st, search_algo algo, const uint8_t* d_queries, int64_t nq,
                 uint32_t k, const search_params& params, const cpu::search_plan& plan, uint32_t* d_ids,
                 float* d_distances, int device, cudaStream_t stream, latency_io* io = nullptr) {
  int smem_limit = 0;
  CAGRA_CUDA_TRY(cudaDeviceGetAttribute(&smem_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (algo == search_algo::single_cta) {
    const launch_plan lp = make_launch_plan(st, k, params, plan, idx.metric());
    CAGRA_EXPECTS(lp.smem + 512 <= size_t(smem_limit),
                  "the single-CTA search needs %zu bytes of shared memory per query (itopk %u, "
                  "search_width x graph_degree = %u, hash 2^%u), more than the device's %d",
                  lp.smem, plan.itopk, lp.args.n_cand, lp.args.hash_bits, smem_limit);
    single_cta_args a = lp.args;
    a.d_dataset = st.dataset.data();
    a.d_graph = st.graph.data();
    a.d_queries = d_queries;
    a.d_ids = d_ids;
    a.d_distances = d_distances;
    constexpr int64_t kMaxGrid = 65535;  // chunked like cuVS's grid.y (and to bound one launch)
    dispatch_device_type(st.type, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t first = 0; first < nq; first += kMaxGrid) {
        a.query_offset = static_cast<uint64_t>(first);
        const uint32_t grid = static_cast<uint32_t>(std::min(kMaxGrid, nq - first));
        launch_single_cta<T>(a, lp.team, grid, lp.block, lp.smem, stream);
      }
    });
    return false;
  } else {
    const multi_launch_plan lp = make_multi_cta_plan(st, k, params, plan, idx.metric());
    CAGRA_EXPECTS(lp.smem + 512 <= size_t(smem_limit),
                  "the multi-CTA search needs %zu bytes of shared memory per CTA (graph_degree x "
                  "samplings = %u), more than the device's %d", lp.smem, lp.args.n_init, smem_limit);
    const uint32_t chunk = static_cast<uint32_t>(std::min<int64_t>(lp.chunk, nq));
    const size_t half = size_t{chunk} << lp.args.hash_bits;
    const size_t part = size_t{chunk} * lp.args.n_ctas * kMultiCtaList;
    const size_t list_words = io ? size_t(nq) * lp.args.n_ctas * lp.args.list_k * 2 : 0;
    if (st.mcta_half < half || st.mcta_done.size() < chunk || st.mcta_ids.size() < part ||
        st.host_lists.size() < list_words)
      st.stream.sync();  // a kernel of the last call may still be exiting (it returned on its results)
    reserve_zeroed(st.host_lists, list_words);
    if (st.mcta_half < half) {  // both halves (re)allocated empty (kEmptySlot: all-ones bytes)
      st.mcta_half = 0;
      st.mcta_hash = device_buffer<uint32_t>(2 * half);
      CAGRA_CUDA_TRY(cudaMemsetAsync(st.mcta_hash.data(), 0xFF, st.mcta_hash.bytes(), stream));
      st.mcta_half = half;
      st.mcta_dirty[0] = st.mcta_dirty[1] = 0;
    }
    if (st.mcta_done.size() < chunk) {  // the per-query finish counters start (and end) at 0
      st.mcta_done = device_buffer<uint32_t>(chunk);
      CAGRA_CUDA_TRY(cudaMemsetAsync(st.mcta_done.data(), 0, st.mcta_done.bytes(), stream));
    }
    st.mcta_ids.reserve(part);
    st.mcta_dists.reserve(part);
    multi_cta_args a = lp.args;
    a.d_dataset = st.dataset.data();
    a.d_graph = st.graph.data();
    a.d_queries = d_queries;
    a.d_part_ids = st.mcta_ids.data();
    a.d_part_dists = st.mcta_dists.data();
    a.d_done = st.mcta_done.data();
    a.d_ids = d_ids;
    a.d_distances = d_distances;
    a.d_trace = multi_cta_debug_hooks().trace;
    dispatch_device_type(st.type, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t first = 0; first < nq; first += chunk) {
        const uint32_t n = static_cast<uint32_t>(std::min<int64_t>(chunk, nq - first));
        a.query_offset = static_cast<uint64_t>(first);
        if (io) {  // [nq, n_ctas, list_k]: the kernel writes query query_offset + blockIdx.y
          a.h_lists = st.host_lists.data();
          a.tag = io->tag;
        }
        if (io && nq == 1 && io->query) {  // the host hashes the query: the kernel starts at once
          a.query_state = query_seed_state(a.seed, io->query->bytes, io->query_bytes);
          a.has_query_state = 1;
        }
        // This launch searches with half h (empty: only the half of the last launch is ever
        // dirty) and empties the other one, which the last launch used.
        const uint32_t h = st.mcta_next;
        a.d_hash = st.mcta_hash.data() + h * st.mcta_half;
        a.d_clear = reinterpret_cast<uint4*>(st.mcta_hash.data() + (1 - h) * st.mcta_half);
        a.clear_vec4 = st.mcta_dirty[1 - h] / 4;  // words are a multiple of 2^10
        launch_multi_cta<T>(a, lp.team, n, lp.block, lp.smem, stream, io && nq == 1 ? io->query : nullptr);
        st.mcta_dirty[1 - h] = 0;
        st.mcta_dirty[h] = size_t{n} << a.hash_bits;
        st.mcta_next = 1 - h;
      }
    });
    if (io) {
      io->n_lists = lp.args.n_ctas;
      io->list_k = lp.args.list_k;
    }
    return io != nullptr;
  }
}

/** The next call's tag (never 0: tagged buffers start zeroed). */
uint32_t next_tag(index_state& st) { return ++st.result_tag == 0 ? ++st.result_tag : st.result_tag; }


/** How long the persistent kernel waits for a job before it leaves (its SMs are busy polling
 *  until then): long enough for any online query stream, short enough that an idle process
 *  gives the GPU back within a second. */
constexpr uint64_t kPersistentLifetimeNs = 1'000'000'000;

/** One batch-1 query through the index's persistent kernel (multi_cta.cuh), launched on first
 *  use and again when the configuration changes or it left on its own. */
void persistent_search(const index& idx, index_state& st, const uint8_t* query, size_t q_bytes, uint32_t k,
                       const search_params& params, const cpu::search_plan& plan, uint32_t* ids, float* distances,
                       int device) {
  const multi_launch_plan lp = make_multi_cta_plan(st, k, params, plan, idx.metric());
  int smem_limit = 0;
  CAGRA_CUDA_TRY(cudaDeviceGetAttribute(&smem_limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  CAGRA_EXPECTS(lp.smem + 512 <= size_t(smem_limit),
                "the multi-CTA search needs %zu bytes of shared memory per CTA, more than the device's %d", lp.smem,
                smem_limit);
  const multi_cta_args& p = lp.args;
  const uint32_t q_words = static_cast<uint32_t>((q_bytes + 3) / 4), n_words = q_words + 2;
  const std::vector<uint64_t> key{p.n_ctas,         p.n_init,   p.max_iterations, p.min_iterations, p.hash_bits,
                                  p.k,              p.seed,     p.metric,         lp.team,          lp.block,
                                  lp.smem,          n_words,    uint64_t(st.type)};
  if (st.persistent_running && key != st.persistent_key) stop_persistent(st);
  const cudaStream_t stream = st.stream.get();
  if (!st.persistent_running) {  // the buffers may change only while no kernel runs
    if (st.persistent_words.size() < n_words) st.persistent_words.reserve(n_words);
    st.persistent_stop.reserve(1);
    st.persistent_hash.reserve(size_t{2} << p.hash_bits);
    st.persistent_counters.reserve(2 + 2 * size_t{n_words});  // the leave word, the job's words
    reserve_zeroed(st.host_lists, size_t{p.n_ctas} * p.list_k * 2);
  }
  // Post the job: the query and its seed state as words data | seq << 32, in order (x86 stores
  // become visible in program order; the volatile stores keep the compiler's order).
  const uint32_t seq = next_tag(st);
  const uint64_t state = query_seed_state(p.seed, query, static_cast<uint32_t>(q_bytes));
  volatile uint64_t* words = st.persistent_words.data();
  for (uint32_t w = 0; w < q_words; ++w) {
    uint32_t v = 0;
    std::memcpy(&v, query + 4 * w, std::min<size_t>(4, q_bytes - 4 * size_t{w}));
    words[w] = v | uint64_t{seq} << 32;
  }
  words[q_words] = (state & 0xFFFFFFFFu) | uint64_t{seq} << 32;
  words[q_words + 1] = (state >> 32) | uint64_t{seq} << 32;
  for (int attempt = 0;; ++attempt) {
    if (!st.persistent_running) {
      *reinterpret_cast<volatile uint32_t*>(st.persistent_stop.data()) = 0;
      CAGRA_CUDA_TRY(cudaMemsetAsync(st.persistent_hash.data(), 0xFF, st.persistent_hash.bytes(), stream));
      CAGRA_CUDA_TRY(cudaMemsetAsync(st.persistent_counters.data(), 0, st.persistent_counters.bytes(), stream));
      multi_cta_args a = p;
      a.d_dataset = st.dataset.data();
      a.d_graph = st.graph.data();
      a.h_lists = st.host_lists.data();
      persistent_launch pl;
      pl.h_words = st.persistent_words.data();
      pl.h_stop = st.persistent_stop.data();
      pl.d_hash = st.persistent_hash.data();
      pl.d_leave = reinterpret_cast<unsigned long long*>(st.persistent_counters.data());
      pl.d_words = reinterpret_cast<uint64_t*>(st.persistent_counters.data() + 2);
      pl.n_words = n_words;
      pl.first_seq = seq;
      pl.lifetime_ns = kPersistentLifetimeNs;
      dispatch_device_type(st.type, [&](auto tag) {
        launch_multi_cta_persistent<decltype(tag)>(a, pl, lp.team, lp.block, lp.smem, stream);
      });
      st.persistent_running = true;
      st.persistent_key = key;
    }
    if (merge_host_lists(st.host_lists.data(), p.n_ctas, p.list_k, k, seq, stream, ids, distances)) break;
    st.persistent_running = false;  // it left (idle) just as the job came: launch again
    CAGRA_EXPECTS(attempt < 2, "internal error: the persistent search kernel ended without answering");
  }
}

/** Throws unless `p` is device memory that CUDA device `device` can use in a kernel. */
void expect_device_memory(const void* p, int device, const char* what) {
  cudaPointerAttributes at{};
  const cudaError_t e = cudaPointerGetAttributes(&at, p);
  if (e != cudaSuccess) (void)cudaGetLastError();
  CAGRA_EXPECTS(e == cudaSuccess && (at.type == cudaMemoryTypeDevice || at.type == cudaMemoryTypeManaged),
                "%s is a device view, but %p is not CUDA device memory (allocate it with cudaMalloc, "
                "cupy or torch .cuda(), or pass a host view)", what, p);
  CAGRA_EXPECTS(at.type != cudaMemoryTypeDevice || at.device == device,
                "%s lives on CUDA device %d, but the search runs on device %d (resources::device)", what,
                at.device, device);
}

}  // namespace

void search(const index& idx, const host_matrix& queries, uint32_t k, const search_params& params,
            const cpu::search_plan& plan, uint32_t* ids, float* distances, int device) {
  const dtype qtype = query_dtype_for(idx.storage_dtype());
  CAGRA_EXPECTS(queries.type() == qtype && queries.cols() == int64_t{idx.dim()},
                "queries must be %s [n, %u] for a %s index (got %s [n, %lld])", to_string(qtype), idx.dim(),
                to_string(idx.storage_dtype()), to_string(queries.type()), (long long)queries.cols());
  const int64_t nq = queries.rows();
  const search_algo algo = check_search(idx, nq, k, params, plan, ids, device);
  if (nq == 0) return;

  device_guard guard(device);
  std::shared_ptr<index_state> st = device_index(idx, device);
  std::lock_guard<std::mutex> lock(st->workspace_mutex);
  const cudaStream_t stream = st->stream.get();
  const size_t q_bytes = queries.size_bytes();
  const size_t n_out = size_t(nq) * k;
  const multi_cta_debug& hooks = multi_cta_debug_hooks();
  if (nq == 1 && params.persistent && algo == search_algo::multi_cta && hooks.host_flag) {
    persistent_search(idx, *st, static_cast<const uint8_t*>(queries.data()), q_bytes, k, params, plan, ids, distances,
                      device);
    return;
  }
  stop_persistent(*st);
  if (nq <= kMappedMaxQueries) {  // latency: the kernels use the pinned host buffers in place
    const bool host_merge = algo == search_algo::multi_cta && hooks.host_flag && nq <= kHostMergeMaxQueries;
    // The last call may have returned on its results while its CTAs were still exiting: nothing
    // it may use is freed before the stream is done (run_kernels does the same for its buffers).
    const bool grow = q_bytes > st->host_queries.size() ||
                      (!host_merge && (n_out > st->host_ids.size() || (distances && n_out > st->host_distances.size())));
    if (grow) st->stream.sync();
    st->host_queries.reserve(q_bytes);
    std::memcpy(st->host_queries.data(), queries.data(), q_bytes);
    if (!host_merge) {
      st->host_ids.reserve(n_out);
      if (distances) st->host_distances.reserve(n_out);
      run_kernels(idx, *st, algo, st->host_queries.data(), nq, k, params, plan, st->host_ids.data(),
                  distances ? st->host_distances.data() : nullptr, device, stream);
      st->stream.sync();
      std::memcpy(ids, st->host_ids.data(), n_out * sizeof(uint32_t));
      if (distances) std::memcpy(distances, st->host_distances.data(), n_out * sizeof(float));
      return;
    }
    latency_io io;
    io.tag = next_tag(*st);
    inline_query iq;
    if (nq == 1 && q_bytes <= kInlineQueryMax && hooks.inline_query) {
      std::memcpy(iq.bytes, queries.data(), q_bytes);
      io.query = &iq;
      io.query_bytes = static_cast<uint32_t>(q_bytes);
    }
    run_kernels(idx, *st, algo, st->host_queries.data(), nq, k, params, plan, nullptr, nullptr, device, stream, &io);
    const size_t per_query = size_t{io.n_lists} * io.list_k * 2;
    for (int64_t i = 0; i < nq; ++i)  // query by query, as their lists arrive
      CAGRA_EXPECTS(merge_host_lists(st->host_lists.data() + i * per_query, io.n_lists, io.list_k, k, io.tag, stream,
                                     ids + i * k, distances ? distances + i * k : nullptr),
                    "internal error: the multi-CTA search finished without writing every result");
    return;
  }
  st->queries.reserve(q_bytes);
  st->ids.reserve(n_out);
  if (distances) st->distances.reserve(n_out);
  CAGRA_CUDA_TRY(cudaMemcpyAsync(st->queries.data(), queries.data(), q_bytes, cudaMemcpyHostToDevice, stream));
  run_kernels(idx, *st, algo, st->queries.data(), nq, k, params, plan, st->ids.data(),
              distances ? st->distances.data() : nullptr, device, stream);
  CAGRA_CUDA_TRY(cudaMemcpyAsync(ids, st->ids.data(), n_out * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream));
  if (distances)
    CAGRA_CUDA_TRY(cudaMemcpyAsync(distances, st->distances.data(), n_out * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream));
  st->stream.sync();
}

void search_device(const index& idx, dataset_view queries, uint32_t k, const search_params& params,
                   const cpu::search_plan& plan, uint32_t* ids, float* distances, int device) {
  CAGRA_EXPECTS(queries.space == memory_space::device, "search_device takes queries in device memory");
  CAGRA_EXPECTS(queries.cols == int64_t{idx.dim()}, "queries have dimension %lld but the index has %u",
                (long long)queries.cols, idx.dim());
  const dtype storage = idx.storage_dtype();
  const bool float_index = storage == dtype::f32 || storage == dtype::f16;
  const bool float_query = queries.type == dtype::f32 || queries.type == dtype::f16;
  if (float_index) {
    CAGRA_EXPECTS(float_query || queries.type == dtype::u8 || queries.type == dtype::i8,
                  "a %s index takes f32, f16, u8 or i8 device queries (got %s)", to_string(storage),
                  to_string(queries.type));
  } else {
    CAGRA_EXPECTS(queries.type == storage,
                  "a %s index takes %s device queries (got %s): only host queries are converted, because "
                  "the check that every value is an integer in range runs on the host; convert them on the "
                  "device (e.g. x.astype(%s)) or pass host memory", to_string(storage), to_string(storage),
                  to_string(queries.type), storage == dtype::u8 ? "uint8" : "int8");
  }
  const int64_t nq = queries.rows;
  const search_algo algo = check_search(idx, nq, k, params, plan, ids, device);
  if (nq == 0) return;
  CAGRA_EXPECTS(queries.data != nullptr, "queries are null");
  CAGRA_EXPECTS(reinterpret_cast<uintptr_t>(ids) % alignof(uint32_t) == 0 &&
                    reinterpret_cast<uintptr_t>(distances) % alignof(float) == 0,
                "neighbors/distances must be 4-byte aligned device memory");

  device_guard guard(device);
  expect_device_memory(queries.data, device, "queries");
  expect_device_memory(ids, device, "neighbors");
  if (distances) expect_device_memory(distances, device, "distances");
  std::shared_ptr<index_state> st = device_index(idx, device);
  std::lock_guard<std::mutex> lock(st->workspace_mutex);
  const cudaStream_t stream = st->stream.get();
  stop_persistent(*st);
  // The caller's arrays were written on the legacy default stream (cupy's and torch's default):
  // our non-blocking stream waits for it. Work on other streams is the caller's to finish.
  st->after_default_stream.order(cudaStreamLegacy, stream);

  const size_t q_elems = size_t(nq) * idx.dim();
  const uint8_t* d_queries = static_cast<const uint8_t*>(queries.data);
  const bool cosine = idx.metric() == metric::cosine;
  if (float_index) {
    // f32 queries of a non-cosine index are used in place (after the NaN/Inf check); the rest is
    // converted to f32 (normalized for cosine) into the workspace.
    const bool in_place = queries.type == dtype::f32 && !cosine;
    float* converted = nullptr;
    if (!in_place) {
      st->queries.reserve(q_elems * sizeof(float));
      converted = reinterpret_cast<float*>(st->queries.data());
    }
    st->query_flags.reserve(2);
    if (float_query || cosine) {
      launch_prepare_queries(queries.data, queries.type, nq, idx.dim(), converted, cosine, st->query_flags.data(),
                             stream);
      unsigned long long bad[2] = {0, 0};
      CAGRA_CUDA_TRY(cudaMemcpyAsync(bad, st->query_flags.data(), sizeof bad, cudaMemcpyDeviceToHost, stream));
      st->stream.sync();
      CAGRA_EXPECTS(bad[0] == ~0ull, "queries row %lld contains NaN or Inf", (long long)bad[0]);
      CAGRA_EXPECTS(bad[1] == ~0ull, "queries row %lld is all zeros: cosine distance is undefined for it",
                    (long long)bad[1]);
    } else {
      launch_prepare_queries(queries.data, queries.type, nq, idx.dim(), converted, false, st->query_flags.data(),
                             stream);
    }
    if (!in_place) d_queries = st->queries.data();
  }
  // The kernels read query rows with 4-byte loads where the row length allows: a misaligned
  // start (a view at an odd byte offset) is moved into the aligned workspace first.
  if (reinterpret_cast<uintptr_t>(d_queries) % 16 != 0) {
    const size_t bytes = q_elems * dtype_size(query_dtype_for(storage));
    st->queries.reserve(bytes);
    CAGRA_CUDA_TRY(cudaMemcpyAsync(st->queries.data(), d_queries, bytes, cudaMemcpyDeviceToDevice, stream));
    d_queries = st->queries.data();
  }
  run_kernels(idx, *st, algo, d_queries, nq, k, params, plan, ids, distances, device, stream);
  st->stream.sync();
}

}  // namespace cagra::cuda
