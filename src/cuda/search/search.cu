// cagra::cuda::search and search_device: the CUDA backend's search entry points. They check the
// call, take the index's device copy and workspace, and move the batch as the plan's io path
// says (core/plan_kernels.cpp chose it): `copy` (queries copied in, results out, large batches),
// `mapped` (kernels read and write pinned host memory in place), `host_merge` (multi-CTA: each
// CTA's list polled and merged on the host; at batch 1 the query travels in the launch, so such
// a call is one launch and no synchronize), `persistent` (not even the launch: persistent.cu),
// `device` (the caller's device buffers, read and written in place). The kernels themselves run
// through run_kernels.cu.
#include <cstring>
#include <optional>
#include <vector>

#include "core/filter.hpp"
#include "core/int8_traversal.hpp"
#include "cuda/backend.hpp"
#include "cuda/check.hpp"
#include "cuda/search/copy_pipeline.hpp"
#include "cuda/search/device_queries.hpp"
#include "cuda/search/host_lists.hpp"
#include "cuda/search/int8_traversal.hpp"
#include "cuda/search/launch_args.hpp"
#include "cuda/search/persistent.hpp"
#include "cuda/search/run_kernels.hpp"
#include "cuda/state.hpp"
#include "cuda/testing.hpp"

namespace cagra::cuda {
namespace {

/** Whether the workspace's device filter already holds `f`: no filter, or a shared bitset equal
 *  to the one copied there last (the comparison reads 125 KB of host memory at 1M rows). */
bool filter_in_workspace(const index_state& st, const row_filter& f) {
  if (f.empty()) return true;
  const size_t words = size_t(row_filter::words_for(f.rows));
  const search_workspace& w = st.io;
  return !f.queries && w.filter_shared.size() == words &&
         std::memcmp(w.filter_shared.data(), f.words, words * sizeof(uint32_t)) == 0;
}

/** Whether `f`'s stamp (row_filter::stamp) names the shared bitset copied there last, and is
 *  trusted for a batch whose answers are `answers` ids: only where checking each answer's bit
 *  (answers_allowed) reads fewer words than the comparison would (at 1M rows, batches of up to
 *  ~780 queries of 10). A stamp skips the comparison, so the answers are checked instead. */
bool stamp_in_workspace(const index_state& st, const row_filter& f, size_t answers) {
  const search_workspace& w = st.io;
  return !f.empty() && !f.queries && f.stamp != 0 && w.filter_stamp == f.stamp &&
         w.filter_shared.size() == size_t(row_filter::words_for(f.rows)) &&
         core::answer_check_pays(answers, f.rows);
}

/** A filtered search's bitsets (host memory) copied into the workspace; no filter: {}. A shared
 *  bitset already there (`in_workspace`: filter_in_workspace or stamp_in_workspace, asked by the
 *  caller) is not copied again (batch-1 calls with one filter: the copy took ~0.1 ms). */
device_filter upload_filter(index_state& st, const row_filter& f, int64_t nq, bool in_workspace) {
  if (f.empty()) return {};
  const size_t words = size_t(row_filter::words_for(f.rows));
  const size_t total = words * (f.queries ? size_t(nq) : 1);
  search_workspace& w = st.io;
  if (in_workspace) {
    if (f.stamp) w.filter_stamp = f.stamp;  // equal bits: the stamp names them from now on
    return {w.filter.data(), 0};
  }
  // A kernel of the last call may still read the buffer.
  st.stream.sync();
  w.filter_shared.clear();
  w.filter_stamp = 0;
  w.filter.reserve(total);
  CAGRA_CUDA_TRY(cudaMemcpyAsync(w.filter.data(), f.words, total * sizeof(uint32_t),
                                 cudaMemcpyHostToDevice, st.stream.get()));
  if (!f.queries) {
    w.filter_shared.assign(f.words, f.words + words);
    w.filter_stamp = f.stamp;
  }
  return {w.filter.data(), f.queries ? words : 0};
}

}  // namespace

device_filter upload_filter(index_state& st, const row_filter& f, int64_t nq) {
  return upload_filter(st, f, nq, filter_in_workspace(st, f));
}

/** Checks shared by the entry points. */
void check_search(const index& idx, const search_plan& plan, const uint32_t* ids, int device) {
  const int n_dev = device_count();
  CAGRA_EXPECTS(n_dev > 0, "no CUDA device is visible (use the CPU backend)");
  CAGRA_EXPECTS(device >= 0 && device < n_dev, "CUDA device %d does not exist (%d visible)", device,
                n_dev);
  CAGRA_EXPECTS(idx.size() > 0, "the index is empty");
  CAGRA_EXPECTS(ids != nullptr, "ids must not be null");
  CAGRA_EXPECTS(plan.target == backend::cuda && plan.algo != search_algo::automatic,
                "internal error: the CUDA search got a plan for another backend");
  CAGRA_EXPECTS(plan.k >= 1 && plan.k <= plan.itopk, "k = %u must be in [1, itopk = %u]", plan.k,
                plan.itopk);
  CAGRA_EXPECTS(plan.pool_rows_per_cta == 0 || plan.io == search_io::persistent,
                "internal error: an initial-node pool outside the persistent kernel (io %s)",
                to_string(plan.io));
  CAGRA_EXPECTS(dtype_size(idx.storage_dtype()) != 1 || idx.dim() <= core::gpu::kMaxByteDim,
                "the CUDA search of byte vectors handles dim <= %u (exact int32 sums), got %u",
                core::gpu::kMaxByteDim, idx.dim());
}

namespace {

/** search_io::mapped and host_merge: a small host batch through pinned host memory in place. */
void search_mapped(const index& idx, index_state& st, const search_plan& plan, dataset_view queries,
                   uint32_t* ids, float* distances, int device, device_filter filter) {
  search_workspace& w = st.io;
  const int64_t nq = queries.rows;
  const uint32_t k = plan.k;
  const size_t q_bytes = size_t(queries.rows) * queries.row_bytes(), n_out = size_t(nq) * k;
  const bool host_merge = plan.io == search_io::host_merge;
  const cudaStream_t stream = st.stream.get();
  // The last call may have returned on its results while its CTAs were still exiting: nothing
  // it may use is freed before the stream is done (run_kernels does the same for its buffers).
  const bool grow = q_bytes > w.host_queries.size() ||
                    (!host_merge &&
                     (n_out > w.host_ids.size() || (distances && n_out > w.host_distances.size())));
  if (grow) st.stream.sync();
  w.host_queries.reserve(q_bytes);
  std::memcpy(w.host_queries.data(), queries.data, q_bytes);
  if (!host_merge) {
    w.host_ids.reserve(n_out);
    if (distances) w.host_distances.reserve(n_out);
    run_kernels(st, plan, idx.metric(), w.host_queries.data(), nq, w.host_ids.data(),
                distances ? w.host_distances.data() : nullptr, device, stream, nullptr, filter);
    st.stream.sync();
    std::memcpy(ids, w.host_ids.data(), n_out * sizeof(uint32_t));
    if (distances) std::memcpy(distances, w.host_distances.data(), n_out * sizeof(float));
    return;
  }
  latency_io io;
  io.tag = w.next_tag();
  inline_query iq;
  if (nq == 1 && q_bytes <= kInlineQueryMax) {
    std::memcpy(iq.bytes, queries.data, q_bytes);
    io.query = &iq;
    io.query_bytes = static_cast<uint32_t>(q_bytes);
  }
  run_kernels(st, plan, idx.metric(), w.host_queries.data(), nq, nullptr, nullptr, device, stream,
              &io, filter);
  const size_t per_query = size_t{io.n_lists} * io.list_k * 2;
  for (int64_t i = 0; i < nq; ++i)  // query by query, as their lists arrive
    CAGRA_EXPECTS(
        merge_host_lists(w.host_lists.data() + i * per_query, io.n_lists, io.list_k, k, io.tag,
                         stream, ids + i * k, distances ? distances + i * k : nullptr),
        "internal error: the multi-CTA search finished without writing every result");
}

/** search_io::copy: queries copied to the device workspace, results copied back; a large
 *  single-CTA batch in overlapping chunks (copy_pipeline.cu). */
void search_copy(const index& idx, index_state& st, const search_plan& plan, dataset_view queries,
                 uint32_t* ids, float* distances, int device, device_filter filter) {
  search_workspace& w = st.io;
  const int64_t nq = queries.rows;
  const size_t q_bytes = size_t(queries.rows) * queries.row_bytes(), n_out = size_t(nq) * plan.k;
  if (use_copy_pipeline(plan, nq)) {
    if (!plan.normalize_on_device) {
      search_copy_pipelined(st, plan, idx.metric(), static_cast<const uint8_t*>(queries.data),
                            q_bytes / size_t(nq), nq, ids, distances, device, filter);
      return;
    }
    device_normalize normalize(w, idx.dim(), nq);
    chunk_stages stages;
    stages.out_k = plan.k;
    stages.prepare = [&](const uint8_t* rows, int64_t first, int64_t n, cudaStream_t s) {
      return reinterpret_cast<const uint8_t*>(normalize(rows, first, n, s));
    };
    search_copy_pipelined(st, plan, idx.metric(), static_cast<const uint8_t*>(queries.data),
                          q_bytes / size_t(nq), nq, ids, distances, device, filter, &stages);
    normalize.check();
    return;
  }
  CAGRA_EXPECTS(!plan.normalize_on_device,
                "internal error: cosine rows to normalize on the device outside the pipeline");
  const cudaStream_t stream = st.stream.get();
  w.queries.reserve(q_bytes);
  w.ids.reserve(n_out);
  if (distances) w.distances.reserve(n_out);
  CAGRA_CUDA_TRY(
      cudaMemcpyAsync(w.queries.data(), queries.data, q_bytes, cudaMemcpyHostToDevice, stream));
  run_kernels(st, plan, idx.metric(), w.queries.data(), nq, w.ids.data(),
              distances ? w.distances.data() : nullptr, device, stream, nullptr, filter);
  CAGRA_CUDA_TRY(
      cudaMemcpyAsync(ids, w.ids.data(), n_out * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream));
  if (distances)
    CAGRA_CUDA_TRY(cudaMemcpyAsync(distances, w.distances.data(), n_out * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream));
  st.stream.sync();
}

}  // namespace

void search(const index& idx, dataset_view queries, const search_plan& plan,
            const row_filter& filter, uint32_t* ids, float* distances, int device) {
  const dtype qtype = query_dtype_for(idx.storage_dtype());
  CAGRA_EXPECTS(queries.type == qtype && queries.cols == int64_t{idx.dim()},
                "queries must be %s [n, %u] for a %s index (got %s [n, %lld])", to_string(qtype),
                idx.dim(), to_string(idx.storage_dtype()), to_string(queries.type),
                (long long)queries.cols);
  check_search(idx, plan, ids, device);
  if (queries.rows == 0) return;
  CAGRA_HOST_STEP(0);
  device_guard guard(device);
  CAGRA_HOST_STEP(1);
  std::shared_ptr<index_state> st = device_index(idx, device);
  CAGRA_HOST_STEP(2);
  std::lock_guard<std::mutex> lock(st->workspace_mutex);
  CAGRA_HOST_STEP(3);
  if (plan.filter_in_merge) {  // the kernel walks unfiltered; the merge reads the caller's words
    CAGRA_EXPECTS(plan.io == search_io::persistent && queries.rows == 1 && !filter.empty() &&
                      !filter.queries && filter.space == memory_space::host,
                  "internal error: a filter in the merge needs one host bitset and the persistent "
                  "kernel");
    persistent_search(*st, plan, idx.metric(), static_cast<const uint8_t*>(queries.data),
                      queries.row_bytes(), ids, distances, device, nullptr, filter.words);
    return;
  }
  // The resident kernel reads the device filter on every job: it keeps running only while the
  // bitset there stays the same (a filtered batch-1 stream under one filter). A stamp that names
  // that bitset stands for the comparison; the answers are checked instead, and if one is a row
  // the caller's bitset disallows (a stale stamp), the call runs again with the bitset compared.
  const size_t answers = size_t(queries.rows) * plan.k;
  for (bool by_stamp = stamp_in_workspace(*st, filter, answers);; by_stamp = false) {
    const bool in_workspace = by_stamp || filter_in_workspace(*st, filter);
    if (plan.io != search_io::persistent || !in_workspace) stop_persistent(*st);
    const device_filter df = upload_filter(*st, filter, queries.rows, in_workspace);
    CAGRA_HOST_STEP(4);
    switch (plan.io) {
      case search_io::persistent:
        CAGRA_EXPECTS(queries.rows == 1 && df.stride == 0,
                      "internal error: a persistent plan for %lld queries%s",
                      (long long)queries.rows, df.stride ? " with a filter per query" : "");
        persistent_search(*st, plan, idx.metric(), static_cast<const uint8_t*>(queries.data),
                          size_t(queries.rows) * queries.row_bytes(), ids, distances, device,
                          df.words);
        break;
      case search_io::mapped:
      case search_io::host_merge:
        search_mapped(idx, *st, plan, queries, ids, distances, device, df);
        break;
      case search_io::copy: search_copy(idx, *st, plan, queries, ids, distances, device, df); break;
      default: CAGRA_FAIL("internal error: the host search got io path %s", to_string(plan.io));
    }
    if (!by_stamp || core::answers_allowed(filter, ids, answers)) return;
    st->io.filter_stamp = 0;
  }
}

void search_device(const index& idx, dataset_view queries, const search_plan& plan,
                   const row_filter& filter, uint32_t* ids, float* distances, int device,
                   void* caller, bool stream_ordered, const core::int8_copy* int8) {
  CAGRA_EXPECTS((plan.traversal == traversal_type::int8) == (int8 != nullptr),
                "internal error: an int8-traversal plan needs the index's int8 copy");
  CAGRA_EXPECTS(queries.space == memory_space::device,
                "search_device takes queries in device memory");
  CAGRA_EXPECTS(plan.filter_path != filter_algo::exact,
                "this filter allows %lld of %lld rows, which the exact filtered search serves, "
                "and it takes host queries: pass host memory (or search_params::filter = graph)",
                (long long)plan.allowed_rows, (long long)idx.size());
  CAGRA_EXPECTS(queries.cols == int64_t{idx.dim()},
                "queries have dimension %lld but the index has %u", (long long)queries.cols,
                idx.dim());
  const dtype storage = idx.storage_dtype();
  const bool float_index = storage == dtype::f32 || storage == dtype::f16;
  const bool float_query = queries.type == dtype::f32 || queries.type == dtype::f16;
  if (float_index) {
    CAGRA_EXPECTS(float_query || queries.type == dtype::u8 || queries.type == dtype::i8,
                  "a %s index takes f32, f16, u8 or i8 device queries (got %s)", to_string(storage),
                  to_string(queries.type));
  } else {
    CAGRA_EXPECTS(
        queries.type == storage,
        "a %s index takes %s device queries (got %s): only host queries are converted, because "
        "the check that every value is an integer in range runs on the host; convert them on the "
        "device (e.g. x.astype(%s)) or pass host memory",
        to_string(storage), to_string(storage), to_string(queries.type),
        storage == dtype::u8 ? "uint8" : "int8");
  }
  const int64_t nq = queries.rows;
  check_search(idx, plan, ids, device);
  if (nq == 0) return;
  CAGRA_EXPECTS(queries.data != nullptr, "queries are null");
  CAGRA_EXPECTS(reinterpret_cast<uintptr_t>(ids) % alignof(uint32_t) == 0 &&
                    reinterpret_cast<uintptr_t>(distances) % alignof(float) == 0,
                "neighbors/distances must be 4-byte aligned device memory");

  device_guard guard(device);
  const cudaStream_t after = caller_stream(caller, device);
  expect_device_memory(queries.data, device, "queries");
  expect_device_memory(ids, device, "neighbors");
  if (distances) expect_device_memory(distances, device, "distances");
  // The int8 walk's device index first, then the stored rows' (the order search_int8 takes).
  std::shared_ptr<index_state> codes_st = int8 ? device_index(int8->walk, device) : nullptr;
  std::unique_lock<std::mutex> codes_lock;
  if (codes_st) {
    codes_lock = std::unique_lock<std::mutex>(codes_st->workspace_mutex);
    stop_persistent(*codes_st);
  }
  // The int8 traversal reads only rows from this copy (they may stay on the host).
  std::shared_ptr<index_state> st =
      int8 ? device_rows(idx, device, plan.stored_rows) : device_index(idx, device);
  std::lock_guard<std::mutex> lock(st->workspace_mutex);
  search_workspace& w = st->io;
  const cudaStream_t stream = st->stream.get();
  stop_persistent(*st);
  // The caller's arrays were written on its stream (resources::cuda_stream; by default the
  // legacy default stream, cupy's and torch's default): our non-blocking stream waits for it.
  w.after_caller_stream.order(after, stream);

  const size_t q_elems = size_t(nq) * idx.dim();
  const uint8_t* d_queries = static_cast<const uint8_t*>(queries.data);
  const bool cosine = idx.metric() == metric::cosine;
  uint8_t* bad_rows = nullptr;  // a stream-ordered call's marks of NaN/Inf (zero) rows
  if (float_index) {
    // f32 queries of a non-cosine index are used in place (after the NaN/Inf check); the rest is
    // converted to f32 (normalized for cosine) into the workspace.
    const bool in_place = queries.type == dtype::f32 && !cosine;
    float* converted = nullptr;
    if (!in_place) {
      w.queries.reserve(q_elems * sizeof(float));
      converted = reinterpret_cast<float*>(w.queries.data());
    }
    w.query_flags.reserve(2);
    const bool checked = float_query || cosine;  // u8/i8 rows of l2/ip are finite and taken as is
    if (checked) {  // reserved by waiting calls too: a stream-ordered call of the same size
      w.bad_rows.reserve(size_t(nq));  // then allocates nothing (an allocation may wait)
      if (stream_ordered) bad_rows = w.bad_rows.data();  // marked, and blanked at the end
    }
    launch_prepare_queries(queries.data, queries.type, nq, idx.dim(), converted, cosine,
                           w.query_flags.data(), stream, bad_rows);
    if (checked && !stream_ordered) {
      unsigned long long bad[2] = {0, 0};
      CAGRA_CUDA_TRY(
          cudaMemcpyAsync(bad, w.query_flags.data(), sizeof bad, cudaMemcpyDeviceToHost, stream));
      st->stream.sync();
      CAGRA_EXPECTS(bad[0] == ~0ull, "queries row %lld contains NaN or Inf", (long long)bad[0]);
      CAGRA_EXPECTS(bad[1] == ~0ull,
                    "queries row %lld is all zeros: cosine distance is undefined for it",
                    (long long)bad[1]);
    }
    if (!in_place) d_queries = w.queries.data();
  }
  // The kernels read query rows with 4-byte loads where the row length allows: a misaligned
  // start (a view at an odd byte offset) is moved into the aligned workspace first.
  if (reinterpret_cast<uintptr_t>(d_queries) % 16 != 0) {
    const size_t bytes = q_elems * dtype_size(query_dtype_for(storage));
    w.queries.reserve(bytes);
    CAGRA_CUDA_TRY(
        cudaMemcpyAsync(w.queries.data(), d_queries, bytes, cudaMemcpyDeviceToDevice, stream));
    d_queries = w.queries.data();
  }
  // The results' end: a waiting call synchronizes `last` (the stream that wrote them); a
  // stream-ordered one blanks the bad rows there and has the caller's stream wait for it.
  const auto finish = [&](const cuda_stream& last) {
    if (!stream_ordered) return last.sync();
    if (bad_rows) launch_blank_bad_rows(bad_rows, nq, plan.k, ids, distances, last.get());
    w.results_ready.order(last.get(), after);
  };
  if (int8) {  // f32 rows of a float index here: encoded, walked, re-ranked on the walk's stream
    const cudaStream_t walk = codes_st->stream.get();
    w.handoff.order(stream, walk);  // the prepared rows, and this copy's earlier work
    const device_filter df = upload_filter(*codes_st, filter, nq);
    int8_walk_device(int8->codec, *codes_st, *st, idx.metric(), core::int8_walk_plan(plan), plan.k,
                     reinterpret_cast<const float*>(d_queries), nq, ids, distances, df, device,
                     walk);
    finish(codes_st->stream);
    // This copy's workspace (the prepared rows) is reused only once the walk has read it.
    if (stream_ordered) codes_st->io.handoff.order(walk, stream);
    return;
  }
  const device_filter df = upload_filter(*st, filter, nq);
  run_kernels(*st, plan, idx.metric(), d_queries, nq, ids, distances, device, stream, nullptr, df);
  finish(st->stream);
}

}  // namespace cagra::cuda
