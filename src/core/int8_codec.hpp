// What the int8 traversal keeps with an index (index::derived_cache): how rows and queries are
// encoded, and the encoded copy the walk reads. Plain data, shared by core (which makes it,
// core/int8_traversal.cpp) and the backends (which search it: backend_ops::search_int8).
#pragma once

#include <vector>

#include <cagra/index.hpp>

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

/** An index's int8 copy: its codec, and the codes with the same graph as an index of metric l2
 *  (for l2) or inner_product (for inner_product and cosine), which the backends search like any
 *  i8 index (the CUDA backend keeps its device copy in walk.backend_cache()). */
struct int8_copy final : detail::backend_state {
  int8_codec codec;
  index walk;
  int64_t fitted_rows = 0;  ///< rows the codec was fitted on (extend refits past twice as many)
};

}  // namespace cagra::core
