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
#include "core/backend_state.hpp"

namespace cagra::core {

/** How rows and queries are encoded: code_j = round((v_j - offset_j) * scale_j), clamped to
 *  [-127, 127], with offset_j the middle of dimension j's range over the rows.
 *  - l2: one scale for every dimension (127 / the widest half-range), so that the squared L2 of
 *    two codes is the squared L2 of the vectors times scale^2, up to rounding;
 *  - inner_product, cosine: a scale per dimension (127 / its half-range); a query is encoded as
 *    round(q_j / scale_j * t) with t = 127 / max_j |q_j / scale_j| (no offset), so that its dot
 *    product with a row's code is t (<q, x> - <q, offset>): the same order as <q, x>. */
struct int8_codec {
  metric m = metric::l2;
  std::vector<float> offset, scale;
};

/** The codec for `rows` (f32 or f16, as stored) under `m`. */
int8_codec fit_int8_codec(const host_matrix& rows, metric m, int threads);
/** `rows` (f32 or f16) encoded: an i8 matrix of the same shape. */
host_matrix encode_rows(const int8_codec& c, const host_matrix& rows, int threads);
/** f32 `queries` (the index's query type: unit rows for cosine) encoded for the walk. */
host_matrix encode_queries(const int8_codec& c, dataset_view queries, int threads);

/** An index's int8 copy: its codec, and the codes with the same graph as an index of metric l2
 *  (for l2) or inner_product (for inner_product and cosine), which the backends search like any
 *  i8 index (the CUDA backend keeps its device copy in walk.backend_cache()). */
struct int8_copy final : detail::backend_state {
  int8_codec codec;
  index walk;
};

/** The int8 copy of `idx` (f32 or f16): the one kept in idx.derived_cache(), or a new one made
 *  and kept there (thread-safe). */
std::shared_ptr<const int8_copy> int8_copy_of(const index& idx, int threads);

/** The automatic re-ranking depth: min(itopk, max(32, 4 k)). */
uint32_t auto_rerank(uint32_t k, uint32_t itopk);

/** A host search with plan.traversal == int8: `queries` are host rows of idx's query type;
 *  `visible` and the outputs as backend_ops::search. */
void search_int8(const backend_ops& be, const index& idx, dataset_view queries,
                 const search_plan& plan, const row_filter& visible, uint32_t* ids,
                 float* distances, const resources& res);

}  // namespace cagra::core
