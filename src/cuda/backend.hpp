// The CUDA backend's entry points, plain C++ (no CUDA types). core::cuda_backend()
// (src/cuda/backend.cpp) puts them behind the backend interface of src/core/backend.hpp; the
// agreement tests call them directly. Everything behind them lives in src/cuda/**/*.cu and is
// built only when CMake finds nvcc.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <cagra/cagra.hpp>
#include <cagra/plan.hpp>

#include "core/backend.hpp"

namespace cagra::cuda {

/** Number of CUDA devices visible (0 when the driver or a device is missing; never throws; asked
 *  once a process). */
int device_count();
/** Multiprocessors of `device` (asked once a device). */
int sm_count(int device);
/** Shared memory one CTA may opt in to on `device`, in bytes (asked once a device). */
int smem_per_block_optin(int device);
/** Free memory of `device` in bytes (cudaMemGetInfo on it); throws cagra::error when it does not
 *  exist. */
size_t free_memory(int device);

/** A device's identity, for logs and benchmark records. */
struct device_info {
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  size_t global_mem_bytes = 0;
  size_t l2_bytes = 0;
  size_t smem_per_block_optin = 0;  ///< shared memory one CTA may use (bytes)
  int driver_version = 0, runtime_version = 0;
};
/** Properties of CUDA device `device`; throws cagra::error when it does not exist. */
device_info cuda_info(int device = 0);
/** One line: "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 81559 MiB, driver 13000, runtime 13000)". */
std::string describe(const device_info& d);

/** Brings the cached device copy of `idx` (if any) up to date after an extend: rows
 *  [old_rows, idx.size()) are appended (the buffers grow by half again when full) and the graph
 *  rows `changed` get their new contents by one upload and a scatter kernel: `gather_changed`
 *  writes them ([changed.size(), degree]) into the upload's pinned staging buffer. A copy of
 * another size than old_rows is dropped instead (the next search copies the index anew). */
void update_device_index(const index& idx, int64_t old_rows, const std::vector<uint32_t>& changed,
                         const std::function<void(uint32_t*)>& gather_changed);

/** GPU search (paper §IV-B/C) as `plan` (core/plan.cpp, backend cuda) says: the single-CTA
 *  kernel (the CPU's answer) or the multi-CTA kernel (recall parity, not bit parity), with the
 *  plan's io path. `queries` are host rows of the index's query type (core::queries_for, or the
 *  caller's own rows when they need no conversion: core::queries_as_is),
 *  [nq, dim]; ids/distances are host [nq, plan.k] (distances may be null). The index's vectors
 *  and graph are copied to the device on first use and cached in idx.backend_cache(). */
void search(const index& idx, dataset_view queries, const search_plan& plan,
            const row_filter& filter, uint32_t* ids, float* distances, int device);
/** The same without a filter. */
inline void search(const index& idx, dataset_view queries, const search_plan& plan, uint32_t* ids,
                   float* distances, int device) {
  search(idx, queries, plan, row_filter{}, ids, distances, device);
}

/** Exact filtered search (plan.filter_path == exact) of host queries: a shared bitset gathers
 *  its allowed rows and runs brute_force on them; per-query bitsets run brute_force over every
 *  row with each query's bitset as a mask. Results as cpu::exact_search (ties and near-ties at
 *  the k-th place may swap for f32/f16 data, as brute_force says). */
void exact_search(const index& idx, dataset_view queries, const search_plan& plan,
                  const row_filter& filter, uint32_t* ids, float* distances, int device);

/** GPU search on device memory, no host round trip (the device path of cagra::search).
 *  `queries` (space device) are [nq, dim] on CUDA device `device`: f32, f16, u8 or i8 for an
 *  f32/f16 index (f32 rows are read in place unless the metric is cosine; the rest is converted,
 *  and normalized for cosine, on the device into the index's workspace, with the host's
 *  arithmetic, so results equal those of the same host queries bit for bit); the index's own
 *  dtype for a u8/i8 index (anything else throws: the exactness check is host-only). NaN/Inf
 *  and, for cosine, all-zero rows throw as on the host. `ids` / `distances` (may be null) are
 *  device [nq, k] buffers that the kernels write directly. Ordering: the work waits for what
 *  `stream` (resources::cuda_stream; null: the legacy default stream, cupy's and torch's
 *  default) holds when called, runs on the index's stream, and is synchronized before
 *  returning, so the results are ready for any stream; with `stream_ordered`
 *  (resources::stream_ordered) it is not: `stream` waits for the results instead, and bad rows
 *  get kInvalidId / NaN rather than an exception. With
 *  `int8` (plan.traversal == int8: the index's int8 copy) the prepared f32 rows are encoded,
 *  walked on the copy and re-ranked from the stored rows, all on the device. */
void search_device(const index& idx, dataset_view queries, const search_plan& plan,
                   const row_filter& filter, uint32_t* ids, float* distances, int device,
                   void* stream, bool stream_ordered, const core::int8_copy* int8 = nullptr);

/** A search of device queries whose results are labels in device memory (search/
 *  device_labels.cu): `search_rows` writes [n] row ids into the device memory it is given (the
 *  device search, ordered after `stream` as search_device orders itself, waiting or
 *  `stream_ordered`); each then becomes its label in `labels` (device [n] int64; -1 for
 *  kInvalidId, the row number on an index without labels), on `stream`. Waiting: complete when
 *  it returns; stream-ordered: complete for the work queued on `stream` after the call. */
void search_into_labels(const index& idx, int device, void* stream, bool stream_ordered,
                        int64_t* labels, int64_t n,
                        const std::function<void(uint32_t*)>& search_rows);

/** Exact re-ranking on GPU `device` (search/rerank.cu; core::backend_ops::rerank): host queries
 *  (f32, idx's query type) and candidates go up, each query's candidates' distances are computed
 *  from the index's device copy (the one its searches use), and the k nearest by (distance, id)
 *  come back. Distances agree with the CPU's up to f32 rounding of the sum order. */
void rerank(const index& idx, dataset_view queries, const uint32_t* candidates,
            uint32_t n_candidates, uint32_t k, uint32_t* ids, float* distances, int device);

/** Whether search() / search_int8() take a cosine index's raw f32 host rows for a batch of `nq`
 *  under `plan` (search_plan::normalize_on_device): batches of the copy pipeline. */
bool normalizes_on_device(const search_plan& plan, int64_t nq);
/** Whether search_int8 takes a host batch of `nq` queries under `plan` (traversal int8): a batch
 *  the single-CTA copy pipeline takes. Smaller ones run the steps one after the other
 *  (core::search_int8_steps). */
bool int8_on_device(const search_plan& plan, int64_t nq);
/** The int8 traversal of a large host batch on the device (core/int8_traversal.cpp): the f32
 *  queries (idx's query type) go up in the copy pipeline's chunks, and each chunk is encoded,
 *  walked on `copy`'s device copy and re-ranked from idx's stored rows there; only the k results
 *  come down. The same answers as the steps one after the other. */
void search_int8(const index& idx, const core::int8_copy& copy, dataset_view queries,
                 const search_plan& plan, const row_filter& filter, uint32_t* ids, float* distances,
                 int device);

/** Largest k that cuda::brute_force takes (2048). */
uint32_t brute_force_max_k();
/** Exact k-NN on GPU `device` (src/cuda/brute_force/brute_force.cu): cuBLAS FP32 SGEMM over tiles
 *  of queries x data rows, a per-query running top-k, then the k survivors' distances recomputed
 *  directly and sorted by (distance, id) like cpu::brute_force. `data` is in storage type (f32,
 *  f16, u8, i8; unit rows for cosine), `queries` in its query type (core::queries_for). Results
 *  and distances as cpu::brute_force; ids at the k-th place may swap with ties or near-ties
 *  (within f32 rounding of the expanded |q|^2 + |x|^2 - 2 q.x) for f32/f16 data. */
knn_graph brute_force(const host_matrix& data, dataset_view queries, metric m, uint32_t k,
                      bool exclude_self, int device);
/** brute_force over rows `rows` of the index's device copy (cached in the index: no host gather
 *  and no upload of the rows); result ids index into `rows`. The exact path of a search with a
 *  shared filter. */
knn_graph brute_force_rows(const index& idx, const std::vector<uint32_t>& rows,
                           dataset_view queries, uint32_t k, int device);
/** brute_force restricted by a mask: query q only sees the rows whose bit is set in
 *  mask[q * mask_words ...] (bitsets as cagra::row_filter; mask_words = 0: one shared bitset).
 *  Queries with fewer than k allowed rows get kInvalidId / +inf in the remaining slots. */
knn_graph brute_force_masked(const host_matrix& data, dataset_view queries, metric m, uint32_t k,
                             const uint32_t* mask, int64_t mask_words, int device);
}  // namespace cagra::cuda
