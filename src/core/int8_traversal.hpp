// The int8 traversal (search_params::traversal = int8): the graph is walked on an int8 copy of an
// f32/f16 index's rows, a quarter of f32's bytes per visited row, and the walk's best candidates
// are re-ranked by their exact distances from the stored rows (core/int8_traversal.cpp). A layer
// over the backends: the walk is an ordinary search of a byte index, the re-ranking is
// backend_ops::rerank.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/plan.hpp>

#include "core/backend.hpp"
#include "core/int8_codec.hpp"

namespace cagra::core {

/** The codec for host `rows` (f32 or f16, as stored) under `m`. */
int8_codec fit_int8_codec(dataset_view rows, metric m, int threads);
/** Host `rows` (f32 or f16) encoded: an i8 matrix of the same shape. */
host_matrix encode_rows(const int8_codec& c, dataset_view rows, int threads);
/** f32 `queries` (the index's query type: unit rows for cosine) encoded for the walk. */
host_matrix encode_queries(const int8_codec& c, dataset_view queries, int threads);

/** The int8 copy of `idx` (f32 or f16): the one kept in idx.derived_cache(), or a new one made
 *  and kept there (thread-safe). */
std::shared_ptr<const int8_copy> int8_copy_of(const index& idx, int threads);

/** extend() changed `idx` (rows [old_rows, size()) new, graph rows `changed` rewritten: what
 *  backend_ops::index_changed is told): its int8 copy, if it has one, follows, the new rows
 *  encoded with the copy's codec (values outside the fitted range are clamped; the re-ranking
 *  stays exact) and the backends' copies of the walk index brought up to date. Once the index has
 *  grown past twice the rows the codec was fitted on, the copy is dropped instead (refitted on
 *  next use). */
void int8_copy_extended(index& idx, int64_t old_rows, const std::vector<uint32_t>& changed,
                        int threads);

/** The walk of an int8-traversal plan: the same kernel shape, `rerank` results a query, no
 *  re-ranking and no normalization of its own (the walk reads codes). */
search_plan int8_walk_plan(const search_plan& plan);

/** The automatic re-ranking depth: min(itopk, max(32, 4 k)). */
uint32_t auto_rerank(uint32_t k, uint32_t itopk);

/** A search with plan.traversal == int8: host rows of idx's query type, or device rows as
 *  search_device takes them (then ids / distances are device memory too); `visible` and the
 *  outputs as backend_ops::search. The backend's search_int8 does the work. */
void search_int8(const backend_ops& be, const index& idx, dataset_view queries,
                 const search_plan& plan, const row_filter& visible, uint32_t* ids,
                 float* distances, const resources& res);
/** The steps one after the other: the queries encoded on the host, the walk through `walker`'s
 *  search, the candidates back on the host and re-ranked by `reranker` (backend_ops::
 *  search_int8's default: the same backend for both). */
void search_int8_steps(const backend_ops& walker, const backend_ops& reranker, const index& idx,
                       const int8_copy& copy, dataset_view queries, const search_plan& plan,
                       const row_filter& visible, uint32_t* ids, float* distances,
                       const resources& res);

}  // namespace cagra::core
