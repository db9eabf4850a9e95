/**
 * @file c_api_sharded.h
 * @brief The C interface of a sharded index: one index split over several GPUs
 *        (docs/multi_gpu.md). Included by cagra/c_api.h, whose conventions, errors and thread
 *        rules it follows; include either.
 */
#ifndef CAGRA_C_API_SHARDED_H
#define CAGRA_C_API_SHARDED_H

#include <cagra/c_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/** An index whose rows are split into shards, each a complete index over a contiguous range of
 *  global row ids, placed on the devices of the search's resources (shard s on
 *  devices[s % num_devices], or all on `device`; the CPU backend searches them one after
 *  another). Read-only once made: no labels, extend, remove or compact. Every call on it only
 *  reads it, so any may run concurrently on one handle; cagra_sharded_index_free must be the
 *  last. */
typedef struct cagra_sharded_index cagra_sharded_index_t;

/** What cagra_sharded_index_get_info reports. */
typedef struct cagra_sharded_index_info {
  int64_t rows;          /**< rows of all shards together (global ids 0 .. rows - 1) */
  int64_t dim;           /**< vector dimension */
  uint32_t graph_degree; /**< out-degree of every row (the same in every shard) */
  cagra_dtype_t dtype;   /**< element type of the stored vectors */
  cagra_metric_t metric;
  int64_t shards; /**< number of shards (cagra_sharded_index_get_offsets gives their rows) */
} cagra_sharded_index_info_t;

/** Builds a sharded index from `rows x dim` vectors of `dtype` in host memory (copied): `shards`
 *  contiguous row ranges, shard s holding rows [rows * s / shards, rows * (s + 1) / shards),
 *  each built like cagra_index_build with `params` (NULL = defaults). On the CUDA backend the
 *  devices of params->resources build in parallel, shard s on devices[s % num_devices]; on the
 *  CPU backend shard after shard. The same input gives the same shards whatever the devices.
 *  @param shards  1 <= shards <= rows (for one shard per GPU, pass the device count)
 *  On success `*index` is a new handle to release with cagra_sharded_index_free; on failure it
 *  is left as it was. Errors as cagra_index_build, and INVALID_ARGUMENT for a shard count
 *  outside [1, rows] or a bad device list (negative or repeated ordinal, NULL with
 *  num_devices > 0, num_devices < 0). */
cagra_status_t cagra_sharded_index_build(const cagra_build_params_t* params, const void* data,
                                         cagra_dtype_t dtype, int64_t rows, int64_t dim,
                                         int64_t shards, cagra_sharded_index_t** index);

/** Releases the sharded index (NULL is fine). The handle is invalid afterwards. Always
 *  CAGRA_OK. */
cagra_status_t cagra_sharded_index_free(cagra_sharded_index_t* index);

/** Fills `*info`. INVALID_ARGUMENT for a NULL argument. */
cagra_status_t cagra_sharded_index_get_info(const cagra_sharded_index_t* index,
                                            cagra_sharded_index_info_t* info);

/** Copies the shards' first global ids and the total, shards + 1 values (`offsets[0]` = 0,
 *  shard s holds global ids offsets[s] .. offsets[s + 1] - 1, `offsets[shards]` = rows) to
 *  `offsets`, which holds `capacity` values; INVALID_ARGUMENT when capacity is below
 *  shards + 1. */
cagra_status_t cagra_sharded_index_get_offsets(const cagra_sharded_index_t* index, int64_t* offsets,
                                               int64_t capacity);

/** Searches every shard with the same `num_queries x dim` host queries (in parallel on the CUDA
 *  backend, shard s on devices[s % num_devices] of params->resources) and merges the shards'
 *  top-k lists by (distance, global id). Arguments as cagra_index_search: `neighbors` gets
 *  global row ids; k may not exceed the total rows; a filter covers the global rows (its
 *  `rows` is the total), each shard sees its slice. Host memory (device memory:
 *  cagra_sharded_index_search_device). Errors as
 *  cagra_index_search, and INVALID_ARGUMENT for a bad device list. */
cagra_status_t cagra_sharded_index_search(const cagra_sharded_index_t* index,
                                          const cagra_search_params_t* params, const void* queries,
                                          cagra_dtype_t dtype, int64_t num_queries, int64_t dim,
                                          uint32_t k, uint32_t* neighbors, float* distances,
                                          const cagra_filter_t* filter);

/** cagra_sharded_index_search with `queries`, `neighbors` and `distances` (NULL to skip) in CUDA
 *  device memory, all on one device that holds a shard (the CUDA backend; the filter stays in
 *  host memory). The queries go from their device to the other shards' devices and the lists
 *  come back to be merged there (NCCL, opened at run time, when the shards span several
 *  devices); the results are complete when the call returns and equal the host search's.
 *  Errors as cagra_sharded_index_search, UNSUPPORTED when this build has no CUDA backend or no
 *  GPU is visible, INVALID_ARGUMENT with backend CAGRA_BACKEND_CPU or when NCCL is needed and
 *  cannot be loaded. */
cagra_status_t cagra_sharded_index_search_device(const cagra_sharded_index_t* index,
                                                 const cagra_search_params_t* params,
                                                 const void* queries, cagra_dtype_t dtype,
                                                 int64_t num_queries, int64_t dim, uint32_t k,
                                                 uint32_t* neighbors, float* distances,
                                                 const cagra_filter_t* filter);

/** Writes the index as a file set: `path`, a small manifest naming each shard file with its size
 *  and checksum, and `path.shard-S-of-N`, one ordinary index file per shard (each loadable alone
 *  with cagra_index_load). Shards are written first, the manifest last; each file is replaced
 *  only by a complete one. Errors: INVALID_ARGUMENT (NULL), IO (cannot write). */
cagra_status_t cagra_sharded_index_save(const cagra_sharded_index_t* index, const char* path);

/** Reads a file set written by cagra_sharded_index_save (or the `cagra` tool, or Python) from
 *  its manifest `path` into a new handle `*index` (left as it was on failure), checking that each
 *  shard file is the one the manifest names. It loads onto any number of devices: placement
 *  happens at search time. Errors: INVALID_ARGUMENT (NULL), IO (missing, unreadable or invalid
 *  manifest or shard file, a set mixed from two saves; a single index file, which
 *  cagra_index_load reads), OUT_OF_MEMORY. */
cagra_status_t cagra_sharded_index_load(const char* path, cagra_sharded_index_t** index);

/** 1 when `path` is the manifest of a sharded index (cagra_sharded_index_load), 0 otherwise: a
 *  single index file, another file, a missing or unreadable one, or a NULL path. Reads the first
 *  bytes of the file. Never fails (and leaves cagra_last_error() as it was). */
int cagra_is_sharded_file(const char* path);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CAGRA_C_API_SHARDED_H
