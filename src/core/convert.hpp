// Turning user vectors into what an index stores and what a search compares against.
//
// Build: the input is checked (finite values, non-zero rows for cosine) and converted to the
// storage type (the input's own, or f32/f16 on request; cosine always keeps unit-norm rows).
// Search: queries are converted to the storage's query type; a conversion that would change a
// value (0.5 into a u8 index, 300 into u8) is an error, never a silent rounding.
#pragma once

#include <cagra/params.hpp>
#include <cagra/types.hpp>

namespace cagra::core {

/** The dtype an index built from `input` with `m` and `s` stores its vectors in. */
dtype storage_dtype_for(dtype input, metric m, storage_type s);

/** Copies `input` (host memory) into the storage type, normalizing rows for cosine.
 *  Throws on NaN/Inf values and, for cosine, on all-zero rows. */
host_matrix to_storage(dataset_view input, metric m, storage_type s, int num_threads);

/** to_storage of f32 rows the caller gives away, for cosine: each row is scaled to unit norm in
 *  place (the same bits as to_storage's copy) and the matrix returned, so a large build holds
 *  one copy of its rows. Throws on NaN/Inf values and all-zero rows before any row changes. */
host_matrix normalized_in_place(host_matrix&& rows, int num_threads);

/** Converts `queries` to the query type of vectors stored as `storage` (f32 for f32/f16
 *  storage, the same integer type for u8/i8); normalizes rows for cosine. Throws when a value
 *  cannot be represented exactly, or is NaN/Inf. */
host_matrix queries_for(dataset_view queries, dtype storage, metric m, int num_threads);

/** True when host `queries` already are what queries_for would make of them (f32 rows of a
 *  float index searched by L2 or inner product, or rows of the index's own integer type): a
 *  search may read the caller's rows in place, after check_finite. */
bool queries_as_is(dataset_view queries, dtype storage, metric m);

/** Throws unless every value of `v` (f32/f16) is finite; `what` names the matrix in messages. */
void check_finite(dataset_view v, const char* what, int num_threads = 1);

}  // namespace cagra::core
