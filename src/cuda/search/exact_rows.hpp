// The exact filtered path's kernel for a few host queries (exact_rows.cu).
#pragma once

#include <cstdint>
#include <vector>

#include <cagra/index.hpp>

namespace cagra::cuda {

/** Most queries and neighbors of one exact_rows call; larger calls take the brute force. */
constexpr int64_t kExactRowsMaxQueries = 16;
constexpr uint32_t kExactRowsMaxK = 32;

/** True when exact_rows takes nq queries of k neighbors on idx (also: a query of the index's
 *  row width fits the kernel's shared memory). */
bool exact_rows_takes(const index& idx, int64_t nq, uint32_t k);

/** Exact k nearest allowed rows of each host query (the index's query type, [nq, dim]) among
 *  `rows` (non-empty, ascending row ids of idx), by one kernel over the index's device copy.
 *  ids/distances host [nq, k] (distances may be null); kInvalidId / +inf past the allowed rows.
 *  Ties order by id, as cpu::exact_search; byte rows give the CPU's distances exactly. */
void exact_rows(const index& idx, const std::vector<uint32_t>& rows, dataset_view queries,
                uint32_t k, uint32_t* ids, float* distances, int device);

}  // namespace cagra::cuda
