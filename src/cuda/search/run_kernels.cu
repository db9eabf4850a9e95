// run_kernels (run_kernels.hpp): a plan's kernels over a device-resident batch. The single-CTA
// grid is chunked by 65535 queries (as cuVS's grid.y, and to bound one launch). The multi-CTA
// launches take as many queries as their workspace allows; the visited hash lives in two halves
// used by alternate launches, each launch emptying the half the previous one dirtied, so no
// memset runs between calls (multi_cta.cuh).
#include "cuda/search/run_kernels.hpp"

#include <algorithm>
#include <cstring>

#include "core/bits.hpp"
#include "cuda/check.hpp"
#include "cuda/launch.hpp"
#include "cuda/search/launch_args.hpp"
#include "cuda/testing.hpp"

namespace cagra::cuda {
namespace {

void run_single_cta(index_state& st, const search_plan& plan, metric m, const uint8_t* d_queries,
                    int64_t nq, uint32_t* d_ids, float* d_distances, int device,
                    cudaStream_t stream, device_filter filter) {
  const single_cta_launch lp = make_single_cta_launch(st, plan, m);
  check_shared_memory(lp.smem, device, "single-CTA", plan);
  single_cta_args a = lp.args;
  CAGRA_EXPECTS(st.graph.data() != nullptr, "internal error: a walk on a copy without the graph");
  a.d_dataset = st.dataset.data();
  a.d_graph = st.graph.data();
  a.d_queries = d_queries;
  a.d_ids = d_ids;
  a.d_distances = d_distances;
  a.d_filter = filter.words;
  a.filter_stride = filter.stride;
#if CAGRA_MCTA_TRACE
  a.d_trace = testing::single_cta_trace();
  // A chunk of the copy pipeline writes its results at its place in the call's buffer: its trace
  // rows go at the same place.
  const uint32_t* all_ids = st.io.ids.data();
  if (a.d_trace && all_ids && d_ids >= all_ids && d_ids < all_ids + st.io.ids.size())
    a.d_trace += size_t(d_ids - all_ids) / plan.k * kSingleCtaTraceSlots;
#endif
  constexpr int64_t kMaxGrid = 65535;
  with_device_type(st.type, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t first = 0; first < nq; first += kMaxGrid) {
      a.query_offset = static_cast<uint64_t>(first);
      const uint32_t grid = static_cast<uint32_t>(std::min(kMaxGrid, nq - first));
      launch_single_cta<T>(a, lp.team, grid, lp.block, lp.smem, stream);
    }
  });
}

/** Grows the multi-CTA workspace for launches of `chunk` queries (both hash halves (re)made
 *  empty when they grow: kEmptySlot is all-ones bytes; the finish counters start at 0). */
void reserve_multi_cta(index_state& st, const multi_cta_launch& lp, uint32_t chunk,
                       size_t list_words, cudaStream_t stream) {
  multi_cta_workspace& w = st.mcta;
  const size_t half = size_t{chunk} << lp.args.hash_bits;
  const size_t part = size_t{chunk} * lp.args.n_ctas * kMultiCtaList;
  if (w.half < half || w.done.size() < chunk || w.ids.size() < part ||
      st.io.host_lists.size() < list_words)
    st.stream
        .sync();  // a kernel of the last call may still be exiting (it returned on its results)
  reserve_zeroed(st.io.host_lists, list_words);
  if (w.half < half) {
    w.half = 0;
    w.hash = device_buffer<uint32_t>(2 * half);
    CAGRA_CUDA_TRY(cudaMemsetAsync(w.hash.data(), 0xFF, w.hash.bytes(), stream));
    w.half = half;
    w.dirty[0] = w.dirty[1] = 0;
  }
  if (w.done.size() < chunk) {
    w.done = device_buffer<uint32_t>(chunk);
    CAGRA_CUDA_TRY(cudaMemsetAsync(w.done.data(), 0, w.done.bytes(), stream));
  }
  w.ids.reserve(part);
  w.dists.reserve(part);
}

void run_multi_cta(index_state& st, const search_plan& plan, metric m, const uint8_t* d_queries,
                   int64_t nq, uint32_t* d_ids, float* d_distances, int device, cudaStream_t stream,
                   latency_io* io, device_filter filter) {
  const multi_cta_launch lp = make_multi_cta_launch(st, plan, m);
  check_shared_memory(lp.smem, device, "multi-CTA", plan);
  const uint32_t chunk = static_cast<uint32_t>(std::min<int64_t>(lp.chunk, nq));
  const size_t list_words = io ? size_t(nq) * lp.args.n_ctas * lp.args.list_k * 2 : 0;
  reserve_multi_cta(st, lp, chunk, list_words, stream);
  multi_cta_workspace& w = st.mcta;
  multi_cta_args a = lp.args;
  CAGRA_EXPECTS(st.graph.data() != nullptr, "internal error: a walk on a copy without the graph");
  a.d_dataset = st.dataset.data();
  a.d_graph = st.graph.data();
  a.d_queries = d_queries;
  a.d_part_ids = w.ids.data();
  a.d_part_dists = w.dists.data();
  a.d_done = w.done.data();
  a.d_ids = d_ids;
  a.d_distances = d_distances;
  a.d_filter = filter.words;
  a.filter_stride = filter.stride;
#if CAGRA_MCTA_TRACE
  a.d_trace = testing::multi_cta_trace();
#endif
  if (io) {  // [nq, n_ctas, list_k]: the kernel writes query query_offset + blockIdx.y
    a.h_lists = st.io.host_lists.data();
    a.tag = io->tag;
  }
  const bool inline_query = io && nq == 1 && io->query;
  if (inline_query) {  // the host hashes the query: the kernel starts at once
    a.query_state = bits::query_seed_state(a.seed, io->query->bytes, io->query_bytes);
    a.has_query_state = 1;
  }
  with_device_type(st.type, [&](auto tag) {
    using T = decltype(tag);
    for (int64_t first = 0; first < nq; first += chunk) {
      const uint32_t n = static_cast<uint32_t>(std::min<int64_t>(chunk, nq - first));
      a.query_offset = static_cast<uint64_t>(first);
      // This launch searches with half h (empty: only the half of the last launch is ever
      // dirty) and empties the other one, which the last launch used.
      const uint32_t h = w.next;
      a.d_hash = w.hash.data() + h * w.half;
      a.d_clear = reinterpret_cast<uint4*>(w.hash.data() + (1 - h) * w.half);
      a.clear_vec4 = w.dirty[1 - h] / 4;  // words are a multiple of 2^10
      launch_multi_cta<T>(a, lp.team, n, lp.block, lp.smem, stream,
                          inline_query ? io->query : nullptr);
      w.dirty[1 - h] = 0;
      w.dirty[h] = size_t{n} << a.hash_bits;
      w.next = 1 - h;
    }
  });
  if (io) {
    io->n_lists = lp.args.n_ctas;
    io->list_k = lp.args.list_k;
  }
}

}  // namespace

void reserve_zeroed(pinned_buffer<uint64_t>& b, size_t n) {
  if (n <= b.size()) return;
  b.reserve(n);
  std::memset(b.data(), 0, n * sizeof(uint64_t));
}

void run_kernels(index_state& st, const search_plan& plan, metric m, const uint8_t* d_queries,
                 int64_t nq, uint32_t* d_ids, float* d_distances, int device, cudaStream_t stream,
                 latency_io* io, device_filter filter) {
  if (plan.algo == search_algo::single_cta)
    run_single_cta(st, plan, m, d_queries, nq, d_ids, d_distances, device, stream, filter);
  else
    run_multi_cta(st, plan, m, d_queries, nq, d_ids, d_distances, device, stream, io, filter);
}

#if CAGRA_MCTA_TRACE
namespace {
uint64_t* g_trace = nullptr;
uint64_t* g_single_trace = nullptr;
}  // namespace
void testing::set_multi_cta_trace(uint64_t* d_trace) { g_trace = d_trace; }
uint64_t* testing::multi_cta_trace() { return g_trace; }
void testing::set_single_cta_trace(uint64_t* d_trace) { g_single_trace = d_trace; }
uint64_t* testing::single_cta_trace() { return g_single_trace; }
#endif

}  // namespace cagra::cuda
