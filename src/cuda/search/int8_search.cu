// The int8 traversal on the device (core/int8_traversal.cpp says what it is; the kernels are in
// int8_traversal.cu). A large host batch goes through the copy pipeline with per-chunk stages
// (upload, normalize for cosine, encode, walk the codes' device index, re-rank from the stored
// rows, download the k results); queries already in device memory are encoded, walked and
// re-ranked in one go (int8_walk_device, from search_device). The walk runs on the int8 copy's
// own device index (codes and a copy of the graph), the re-ranking reads the index's stored rows.
#include <optional>

#include "core/int8_traversal.hpp"
#include "cuda/backend.hpp"
#include "cuda/check.hpp"
#include "cuda/search/copy_pipeline.hpp"
#include "cuda/search/device_queries.hpp"
#include "cuda/search/int8_traversal.hpp"
#include "cuda/search/run_kernels.hpp"

namespace cagra::cuda {

void upload_codec(const core::int8_codec& codec, search_workspace& w, cudaStream_t stream) {
  const size_t dim = codec.offset.size();
  w.codec.reserve(2 * dim);
  CAGRA_CUDA_TRY(cudaMemcpyAsync(w.codec.data(), codec.offset.data(), dim * sizeof(float),
                                 cudaMemcpyHostToDevice, stream));
  CAGRA_CUDA_TRY(cudaMemcpyAsync(w.codec.data() + dim, codec.scale.data(), dim * sizeof(float),
                                 cudaMemcpyHostToDevice, stream));
}

void int8_walk_device(const core::int8_codec& codec, index_state& codes_st,
                      const index_state& rows_st, metric m, const search_plan& walk, uint32_t k,
                      const float* queries, int64_t nq, uint32_t* ids, float* distances,
                      device_filter filter, int device, cudaStream_t stream) {
  search_workspace& w = codes_st.io;
  const uint32_t dim = rows_st.dim;
  upload_codec(codec, w, stream);
  w.codes.reserve(size_t(nq) * dim);
  w.candidates.reserve(size_t(nq) * walk.k);
  const bool l2 = codec.m == metric::l2;
  launch_encode_queries(queries, nq, dim, w.codec.data(), w.codec.data() + dim, l2,
                        reinterpret_cast<int8_t*>(w.codes.data()), stream);
  run_kernels(codes_st, walk, l2 ? metric::l2 : metric::inner_product, w.codes.data(), nq,
              w.candidates.data(), nullptr, device, stream, nullptr, filter);
  launch_rerank(rows_st, m, queries, w.candidates.data(), walk.k, nq, k, ids, distances, stream);
}

bool int8_on_device(const search_plan& plan, int64_t nq) {
  const search_plan walk = core::int8_walk_plan(plan);
  return plan.io == search_io::copy && use_copy_pipeline(walk, nq);
}

void search_int8(const index& idx, const core::int8_copy& copy, dataset_view queries,
                 const search_plan& plan, const row_filter& filter, uint32_t* ids, float* distances,
                 int device) {
  CAGRA_EXPECTS(queries.type == dtype::f32 && queries.space == memory_space::host &&
                    queries.cols == int64_t{idx.dim()} && int8_on_device(plan, queries.rows),
                "internal error: the device int8 traversal takes a large host f32 batch");
  const search_plan walk = core::int8_walk_plan(plan);
  check_search(copy.walk, walk, ids, device);
  device_guard guard(device);
  // Two device copies: the codes the walk reads, the stored rows the re-ranking reads. Their
  // workspaces are taken in this order (nothing takes them the other way round).
  std::shared_ptr<index_state> codes_st = device_index(copy.walk, device);
  std::shared_ptr<index_state> rows_st = device_rows(idx, device, plan.stored_rows);
  std::lock_guard<std::mutex> lock_codes(codes_st->workspace_mutex);
  std::lock_guard<std::mutex> lock_rows(rows_st->workspace_mutex);
  stop_persistent(*codes_st);
  stop_persistent(*rows_st);
  search_workspace& w = codes_st->io;
  const uint32_t dim = idx.dim();
  const int64_t nq = queries.rows;
  // The codec, queued before the pipeline (its streams wait for the index's stream).
  upload_codec(copy.codec, w, codes_st->stream.get());
  w.codes.reserve(size_t(nq) * dim);
  const bool l2 = copy.codec.m == metric::l2;
  // Cosine rows taken as they are: normalized first, and the re-ranking reads them there.
  std::optional<device_normalize> normalize;
  if (plan.normalize_on_device) normalize.emplace(w, dim, nq);
  chunk_stages stages;
  stages.out_k = plan.k;
  stages.prepare = [&](const uint8_t* rows, int64_t first, int64_t n, cudaStream_t s) {
    const float* q =
        normalize ? (*normalize)(rows, first, n, s) : reinterpret_cast<const float*>(rows);
    auto* codes = reinterpret_cast<int8_t*>(w.codes.data()) + size_t(first) * dim;
    launch_encode_queries(q, n, dim, w.codec.data(), w.codec.data() + dim, l2, codes, s);
    return reinterpret_cast<const uint8_t*>(codes);
  };
  stages.finish = [&](const uint8_t* rows, const uint32_t* found, int64_t first, int64_t n,
                      uint32_t* d_ids, float* d_distances, cudaStream_t s) {
    const float* q =
        normalize ? w.prepared.data() + size_t(first) * dim : reinterpret_cast<const float*>(rows);
    launch_rerank(*rows_st, idx.metric(), q, found, walk.k, n, plan.k, d_ids, d_distances, s);
  };
  const device_filter df = upload_filter(*codes_st, filter, nq);
  search_copy_pipelined(*codes_st, walk, copy.walk.metric(),
                        static_cast<const uint8_t*>(queries.data), queries.row_bytes(), nq, ids,
                        distances, device, df, &stages);
  if (normalize) normalize->check();
}

bool normalizes_on_device(const search_plan& plan, int64_t nq) {
  return plan.traversal == traversal_type::int8
             ? int8_on_device(plan, nq)
             : plan.io == search_io::copy && use_copy_pipeline(plan, nq);
}

}  // namespace cagra::cuda
