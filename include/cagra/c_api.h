/**
 * @file c_api.h
 * @brief The C interface of the library: what bindings (Java Panama/JNI, Rust, Go, ...) call.
 *
 * Plain C (C99 and C++), no CUDA types. An index is an opaque handle (cagra_index_t*) made by
 * cagra_index_build or cagra_index_load and released by cagra_index_free; an index split into
 * shards for several GPUs is a cagra_sharded_index_t* (cagra_sharded_index_*, docs/multi_gpu.md;
 * declared in cagra/c_api_sharded.h, which this header includes).
 * Every function that can fail returns a cagra_status_t; on failure the thread's
 * cagra_last_error() says what went wrong, and no C++ exception ever crosses the interface. A
 * failed call leaves output handles as they were, and a failed extend, remove or set_labels
 * leaves the index as it was (the result arrays of a failed search may be partly written).
 * docs/c_api.md has a complete example and the rules below in full.
 *
 * Conventions:
 *  - matrices are row-major, `rows x dim`, element (i, j) at `data[i * dim + j]`;
 *  - row ids are uint32_t, CAGRA_INVALID_ID marks an empty result slot; labels are int64_t, -1
 *    marks an empty slot;
 *  - a params pointer may be NULL (= the defaults of the matching *_params_default);
 *  - memory passed in stays the caller's: the library copies what it keeps and frees nothing of
 *    the caller's; memory it hands out (an index handle) is freed by the matching *_free.
 *
 * Threads: every function may be called from any thread. Calls that only read an index (search,
 * info, labels, save) may run concurrently on the same index; calls that change it (extend,
 * remove, compact, set_labels) wait for the readers in progress and run alone (reads that start
 * while a change waits queue behind it). cagra_index_free must be the last call on a handle: no
 * other call may use the handle during or after it.
 *
 * Link: CMake `target_link_libraries(app cagra)` in this tree, `cagra::cagra` from the installed
 * package; by hand `-lcagra` (shared), or the static libcagra.a with what the C++ library needs
 * (-lstdc++ -lm -fopenmp -lz, and -lhdf5 when built with it). docs/c_api.md says more.
 */
#ifndef CAGRA_C_API_H
#define CAGRA_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status and errors ------------------------------------------------------------------- */

/** What a call returned. */
typedef enum cagra_status {
  CAGRA_OK = 0,
  /** A null pointer, a bad size, dtype or parameter, a dimension that does not match the index,
   *  an unknown or duplicate label, ... (the C++ library's checks on its inputs). */
  CAGRA_ERROR_INVALID_ARGUMENT = 1,
  /** A file could not be read or written, or is not a valid index file (save / load). */
  CAGRA_ERROR_IO = 2,
  /** A CUDA runtime or library call failed. */
  CAGRA_ERROR_CUDA = 3,
  /** Host or device memory ran out. */
  CAGRA_ERROR_OUT_OF_MEMORY = 4,
  /** The call needs what this build or machine lacks: the CUDA backend or a visible GPU (a
   *  device-pointer search, or backend CAGRA_BACKEND_CUDA, on a CPU-only build). */
  CAGRA_ERROR_UNSUPPORTED = 5,
  /** Any other failure (a bug: please report cagra_last_error()). */
  CAGRA_ERROR_UNKNOWN = 6
} cagra_status_t;

/** The text of the last failure on the calling thread ("" when none has happened yet). Kept
 *  until the next failing call on the same thread (successful calls leave it as it is); the
 *  pointer is valid until then. Never NULL. */
const char* cagra_last_error(void);

/** A constant name for `status` ("CAGRA_OK", "CAGRA_ERROR_IO", ...; "unknown status" for a value
 *  outside the enum). Never NULL. */
const char* cagra_status_name(cagra_status_t status);

/** The library's version, "major.minor.patch". Never NULL. */
const char* cagra_version(void);

/** 1 when this build has the CUDA backend and a GPU is visible, else 0. Never fails. */
int cagra_cuda_available(void);

/* ---- enumerations (the values of the C++ enums in cagra/types.hpp and cagra/params.hpp) --- */

/** Element type of a matrix of vectors. f16 is IEEE binary16 passed as its 16 bits. */
typedef enum cagra_dtype {
  CAGRA_DTYPE_F32 = 0,
  CAGRA_DTYPE_F16 = 1,
  CAGRA_DTYPE_U8 = 2,
  CAGRA_DTYPE_I8 = 3
} cagra_dtype_t;

/** Distance measure; results come nearest first (ascending "distance"):
 *  L2 = squared Euclidean distance, INNER_PRODUCT = -<q, x>, COSINE = 1 - cos(q, x). */
typedef enum cagra_metric {
  CAGRA_METRIC_L2 = 0,
  CAGRA_METRIC_INNER_PRODUCT = 1,
  CAGRA_METRIC_COSINE = 2
} cagra_metric_t;

/** Which machine runs a call. AUTO = CUDA when this build has it and a GPU is visible. */
typedef enum cagra_backend {
  CAGRA_BACKEND_AUTO = 0,
  CAGRA_BACKEND_CPU = 1,
  CAGRA_BACKEND_CUDA = 2
} cagra_backend_t;

/** How the build's intermediate kNN graph is made. */
typedef enum cagra_knn_algo {
  CAGRA_KNN_AUTO = 0,
  CAGRA_KNN_NN_DESCENT = 1,
  CAGRA_KNN_BRUTE_FORCE = 2
} cagra_knn_algo_t;

/** Element type the index keeps its vectors in. */
typedef enum cagra_storage {
  CAGRA_STORAGE_SAME_AS_INPUT = 0,
  CAGRA_STORAGE_F32 = 1,
  CAGRA_STORAGE_F16 = 2
} cagra_storage_t;

/** GPU search kernel; on the CPU, MULTI_CTA walks a query on several threads (docs/params.md). */
typedef enum cagra_search_algo {
  CAGRA_SEARCH_ALGO_AUTO = 0,
  CAGRA_SEARCH_ALGO_SINGLE_CTA = 1,
  CAGRA_SEARCH_ALGO_MULTI_CTA = 2
} cagra_search_algo_t;

/** How a filtered search finds the allowed rows: GRAPH walks the graph with a list grown as
 *  fewer rows are allowed, EXACT scans the allowed rows; AUTO picks by the share allowed. */
typedef enum cagra_filter_algo {
  CAGRA_FILTER_ALGO_AUTO = 0,
  CAGRA_FILTER_ALGO_GRAPH = 1,
  CAGRA_FILTER_ALGO_EXACT = 2
} cagra_filter_algo_t;

/** Which copy of the rows a search walks the graph on: EXACT the stored rows; INT8 an int8 copy of
 *  an f32 or f16 index's rows, made on the first such search and kept with the index, whose best
 *  `rerank` candidates are then re-ranked by their exact distances (the distances returned are
 *  exact). INT8 is refused for u8/i8 indexes; device-memory queries run it on the GPU. */
typedef enum cagra_traversal {
  CAGRA_TRAVERSAL_EXACT = 0,
  CAGRA_TRAVERSAL_INT8 = 1
} cagra_traversal_t;

/** GPU searches with CAGRA_TRAVERSAL_INT8: where the stored rows that the re-ranking reads live
 *  (docs/params.md "Stored rows in host memory"). DEVICE copies them to the GPU; HOST leaves them
 *  in host memory, pinned in place and mapped (the GPU holds only the int8 codes and the graph,
 *  and reads the re-ranked candidates' rows across PCIe); AUTO takes the copy the GPU already
 *  has, else DEVICE when the rows fit its free memory, else HOST. Same results either way. HOST
 *  needs CAGRA_TRAVERSAL_INT8 and rows of a multiple of 16 bytes. */
typedef enum cagra_rows_location {
  CAGRA_ROWS_AUTO = 0,
  CAGRA_ROWS_DEVICE = 1,
  CAGRA_ROWS_HOST = 2
} cagra_rows_location_t;

/** Id written to result slots that hold no neighbor. */
#define CAGRA_INVALID_ID 0xFFFFFFFFu

/* ---- parameters --------------------------------------------------------------------------- */

/** Where and how a call runs. */
typedef struct cagra_resources {
  cagra_backend_t backend; /**< default CAGRA_BACKEND_AUTO */
  /** CPU threads; 0 = all hardware threads (honours OMP_NUM_THREADS). Results do not depend on
   *  it. */
  int32_t num_threads;
  int32_t device; /**< CUDA device ordinal (CUDA backend only); default 0 */
  /* The device list (docs/multi_gpu.md) is a count + pointer pair appended after the fields
   * above, not a fixed-size array (no device limit, no 4 x N bytes in every params struct):
   *  - the fields above keep their offsets, and every params struct ends with its
   *    cagra_resources_t (their new fields go after it), so their earlier fields keep theirs;
   *  - code written for the struct without the list keeps its meaning when recompiled: the
   *    *_default initializers, and C brace or designated initializers, leave the new fields
   *    0 / NULL, the single-device behaviour of before;
   *  - the library copies the list: the caller's array is read only during the call.
   * It is a source-compatible change, not a binary one: on 64-bit targets this struct grows
   * from 12 to 24 bytes and its alignment from 4 to 8 (which also moves
   * cagra_extend_params_t.resources from offset 12 to 16), so a program built against the
   * header without the list must be recompiled to run with this library (its *_default calls
   * would write past its structs). No release shipped that layout (0.1.0); after a release, a
   * change of these structs' sizes needs a new soname (libcagra.so.MAJOR.MINOR, so a new minor
   * version while the major is 0). */
  /** Devices in `devices`; 0 (the default) = `device` alone. */
  int32_t num_devices;
  /** Several CUDA device ordinals, each >= 0 and listed once, or NULL when num_devices is 0.
   *  A build runs on the first; a search of a cagra_index_t with two or more is replicated over
   *  them (a large batch split across the devices, a small one sent to the next device in
   *  turn; the same results as one device); a sharded index puts shard s on
   *  devices[s % num_devices]. Extend, remove and compact run on `device`. The CPU backend
   *  checks the list and otherwise ignores it. Default NULL. */
  const int32_t* devices;
} cagra_resources_t;

/** Parameters of cagra_index_build (docs/params.md explains each). 0 = automatic where noted. */
typedef struct cagra_build_params {
  cagra_metric_t metric;                  /**< default CAGRA_METRIC_L2 */
  uint32_t graph_degree;                  /**< out-degree d of the final graph; default 64 */
  uint32_t intermediate_graph_degree;     /**< kNN graph degree (>= graph_degree); 0 = 2 x d */
  cagra_knn_algo_t knn_algo;              /**< default CAGRA_KNN_AUTO */
  uint32_t nn_descent_max_iterations;     /**< default 20 */
  float nn_descent_termination_threshold; /**< default 0.001 */
  float nn_descent_sample_rate;           /**< default 0.5 */
  cagra_storage_t storage;                /**< default CAGRA_STORAGE_SAME_AS_INPUT */
  uint64_t seed;               /**< all randomness of the build; same seed, same CPU graph */
  cagra_resources_t resources; /**< backend, threads, device */
  /** Device memory (bytes) the GPU build may use; 0 (the default) = the device's free memory.
   *  A build whose peak does not fit fails before any work with CAGRA_ERROR_OUT_OF_MEMORY and
   *  a message saying what it needs and what lowers it. Appended after `resources` (the
   *  rule above): source-compatible, and the struct grows by 8 bytes. */
  uint64_t max_device_memory;
  /** Build the kNN graph over overlapping partitions of at most this many rows, one pass each
   *  (docs/large_builds.md); 0 (the default) = one pass, or on the GPU what fits
   *  max_device_memory. Appended: the struct grows by 8 bytes (recompile callers). */
  int64_t knn_partition_rows;
  /** A folder for checkpoints of the kNN stage (made when missing), or NULL (the default):
   *  every finished partition is saved there and a later build with the same folder, data and
   *  settings loads it instead (docs/large_builds.md "Checkpoints"). Read during the call only.
   *  Appended: the struct grows by a pointer (recompile callers). */
  const char* knn_checkpoint_dir;
} cagra_build_params_t;

/** Parameters of the searches. 0 = automatic where noted. */
typedef struct cagra_search_params {
  /** Internal top-M list length ("itopk"); raised to k when smaller. Default 64. */
  uint32_t itopk_size;
  uint32_t search_width;         /**< parents expanded per iteration; default 1 */
  uint32_t max_iterations;       /**< iteration cap; 0 = automatic */
  uint32_t min_iterations;       /**< iterations done even if converged earlier; default 0 */
  uint32_t team_size;            /**< GPU: threads per distance (2..32); 0 = automatic */
  cagra_search_algo_t algo;      /**< GPU kernel; default CAGRA_SEARCH_ALGO_AUTO */
  uint32_t hash_bits;            /**< visited hash size as log2(entries); 0 = automatic */
  uint32_t hash_reset_interval;  /**< forgettable hash period; 0 = never reset */
  uint32_t num_random_samplings; /**< samples per initial slot; 0 = automatic */
  uint64_t seed;                 /**< seed of the random initial nodes */
  /** GPU, one host query per call on the multi-CTA kernel: keep the kernel resident between
   *  calls (docs/cuda.md); 0 launches it per call. 0 or 1; default 1. */
  int32_t persistent;
  cagra_filter_algo_t filter_algo; /**< filtered searches only; default CAGRA_FILTER_ALGO_AUTO */
  cagra_resources_t resources;     /**< backend, threads, device */
  /** Which rows the walk reads (cagra_traversal_t); default CAGRA_TRAVERSAL_EXACT. Appended
   *  after `resources` (the rule above): the struct grows by 8 bytes (recompile callers). */
  cagra_traversal_t traversal;
  /** CAGRA_TRAVERSAL_INT8: candidates re-ranked per query, in [k, itopk_size]; 0 (the default) =
   *  min(itopk_size, max(32, 4 k)). Ignored by the exact traversal. */
  uint32_t rerank;
  /** With `persistent`: how long the resident kernel waits for the next query before it leaves,
   *  microseconds, in [200, 10000000]; default 1000 (docs/params.md). Appended: the struct grows
   *  by 8 bytes, 4 of them padding (recompile callers). */
  uint32_t persistent_lifetime_us;
  /** The *_device searches only: a cudaStream_t of resources.device whose earlier work the search
   *  waits for; NULL (the default) = the legacy default stream. The results are complete when
   *  the call returns (unless `stream_ordered`). Appended: the struct grows by 8 bytes
   *  (recompile callers). */
  void* cuda_stream;
  /** CAGRA_TRAVERSAL_INT8 on the GPU: where the re-ranked rows are read (cagra_rows_location_t);
   *  default CAGRA_ROWS_AUTO. Appended: the struct grows by 8 bytes, 4 of them padding
   *  (recompile callers). */
  cagra_rows_location_t stored_rows;
  /** The *_device searches only, 0 or 1; default 0. 1: return once the search is queued, without
   *  waiting for the GPU; the results are complete for the work queued on `cuda_stream` after
   *  the call (stream order), and the caller keeps the queries and results alive until then. A
   *  query row with NaN or Inf (cosine: all zeros) then gets CAGRA_INVALID_ID and a NaN distance
   *  in its k slots instead of an error. Appended in the padding after `stored_rows`: the
   *  struct keeps its size on 64-bit targets. */
  int32_t stream_ordered;
} cagra_search_params_t;

/** Parameters of cagra_index_extend (docs/living_index.md). 0 = automatic. */
typedef struct cagra_extend_params {
  uint32_t chunk_size; /**< new rows inserted together; 0 = 10,000 on the GPU, 2,000 on the CPU */
  uint32_t candidates; /**< candidate neighbours per new row; 0 = 2 x graph degree */
  uint32_t itopk_size; /**< list length of the candidate search; 0 = max(64, 2 x candidates) */
  cagra_resources_t resources; /**< backend, threads, device */
} cagra_extend_params_t;

/** Sets `*resources` to the defaults. CAGRA_ERROR_INVALID_ARGUMENT when it is NULL. */
cagra_status_t cagra_resources_default(cagra_resources_t* resources);
/** Sets `*params` to the C++ library's defaults. Always start from these: fields added later get
 *  their defaults this way. CAGRA_ERROR_INVALID_ARGUMENT when `params` is NULL. */
cagra_status_t cagra_build_params_default(cagra_build_params_t* params);
/** Sets `*params` to the defaults (as cagra_build_params_default). */
cagra_status_t cagra_search_params_default(cagra_search_params_t* params);
/** Sets `*params` to the defaults (as cagra_build_params_default). */
cagra_status_t cagra_extend_params_default(cagra_extend_params_t* params);

/* ---- filters ------------------------------------------------------------------------------ */

/** The rows a filtered search may return (docs/filter.md): bitsets over the index's rows, one
 *  bit per row, set = allowed. Row i is bit (i % 32) of word (i / 32). Host memory, owned by
 *  the caller, read only during the search. */
typedef struct cagra_filter {
  const uint32_t* words; /**< the bitset words; NULL = no filter */
  int64_t rows;          /**< rows the bitsets cover: must be the index's row count */
  /** 0: one bitset of cagra_filter_words(rows) words shared by every query; otherwise one
   *  bitset per query (must equal the number of queries), [queries, cagra_filter_words(rows)]
   *  words row-major. */
  int64_t queries;
} cagra_filter_t;

/** 32-bit words of one bitset over `rows` rows: (rows + 31) / 32 (0 for rows <= 0). */
int64_t cagra_filter_words(int64_t rows);

/** Declares a shared bitset (`filter->queries` = 0) unchanging until cagra_filter_unregister,
 *  as cudaHostRegister declares memory: its allowed rows are counted now and its bits named,
 *  so that a search under `filter->words` (same `rows`) neither counts them nor compares them
 *  with the copies the library keeps (a batch-1 stream under one filter: two passes over 125 KB
 *  a call at 1M rows; docs/filter.md, "Stamps"). Registering the same words again counts and
 *  names them anew: do that after changing them. Searches under registered words that changed
 *  meanwhile may miss rows the words allow, but never return a row they disallow. Thread-safe. */
cagra_status_t cagra_filter_register(const cagra_filter_t* filter);

/** Ends the registration of `words` (nothing happens for words not registered). Do it before
 *  freeing them: a later bitset at the same address would take their count and stamp (a
 *  misplanned search, and the rule above: no disallowed row). */
cagra_status_t cagra_filter_unregister(const uint32_t* words);

/* ---- the index ---------------------------------------------------------------------------- */

/** An index: stored vectors, the fixed-degree graph, optional labels and deleted rows. */
typedef struct cagra_index cagra_index_t;

/** What cagra_index_get_info reports. */
typedef struct cagra_index_info {
  int64_t rows;          /**< rows in the index, deleted ones included */
  int64_t dim;           /**< vector dimension */
  uint32_t graph_degree; /**< out-degree of every row */
  cagra_dtype_t dtype;   /**< element type of the stored vectors */
  cagra_metric_t metric;
  int64_t live_rows;    /**< rows a search can return: rows - deleted_rows */
  int64_t deleted_rows; /**< rows removed and not yet compacted away */
  int32_t has_labels;   /**< 1 when rows carry user labels, else 0 (labels = row numbers) */
} cagra_index_info_t;

/** Builds an index from `rows x dim` vectors of `dtype` in host memory (copied; the caller
 *  keeps `data`). `params` NULL = defaults. On success `*index` is a new handle to release with
 *  cagra_index_free; on failure `*index` is left as it was.
 *  Errors: INVALID_ARGUMENT (null pointer, rows or dim < 1, unknown dtype, bad parameters,
 *  non-finite values), UNSUPPORTED (CUDA backend asked for without one), OUT_OF_MEMORY, CUDA. */
cagra_status_t cagra_index_build(const cagra_build_params_t* params, const void* data,
                                 cagra_dtype_t dtype, int64_t rows, int64_t dim,
                                 cagra_index_t** index);

/** Releases the index (NULL is fine: nothing to do). The handle is invalid afterwards. Always
 *  CAGRA_OK. */
cagra_status_t cagra_index_free(cagra_index_t* index);

/** Fills `*info`. INVALID_ARGUMENT for a NULL argument. */
cagra_status_t cagra_index_get_info(const cagra_index_t* index, cagra_index_info_t* info);

/** Writes the index to `path` (docs/index_format.md), replacing an existing file only with a
 *  complete one (written to a temporary name, then renamed). Errors: INVALID_ARGUMENT (NULL),
 *  IO (cannot write, or an empty index). */
cagra_status_t cagra_index_save(const cagra_index_t* index, const char* path);

/** Reads an index written by cagra_index_save (or the `cagra` tool, or Python) into a new handle
 *  `*index` (left as it was on failure). Errors: INVALID_ARGUMENT (NULL), IO (missing,
 *  unreadable, truncated or invalid file; the manifest of a sharded index, which
 *  cagra_sharded_index_load reads: cagra_is_sharded_file tells the two apart), OUT_OF_MEMORY. */
cagra_status_t cagra_index_load(const char* path, cagra_index_t** index);

/* ---- search ------------------------------------------------------------------------------- */

/** Approximate k-NN search of `num_queries x dim` queries in host memory.
 *  @param params     NULL = defaults; 1 <= k, and k <= itopk_size after the automatic raise
 *  @param queries    host memory, `dtype` any of the four that converts exactly to the index's
 *                    storage (u8/i8 indexes take their own dtype; f32/f16 indexes take all)
 *  @param neighbors  [num_queries, k] row ids out, nearest first (CAGRA_INVALID_ID where fewer
 *                    than k rows were found)
 *  @param distances  [num_queries, k] distances out (see cagra_metric_t), or NULL to skip
 *  @param filter     NULL or a filter with words == NULL: every live row may be returned
 *  Deleted rows are never returned. Errors: INVALID_ARGUMENT (NULL pointer, dim mismatch,
 *  num_queries < 1, bad k or params, bad filter shape), UNSUPPORTED, OUT_OF_MEMORY, CUDA. */
cagra_status_t cagra_index_search(const cagra_index_t* index, const cagra_search_params_t* params,
                                  const void* queries, cagra_dtype_t dtype, int64_t num_queries,
                                  int64_t dim, uint32_t k, uint32_t* neighbors, float* distances,
                                  const cagra_filter_t* filter);

/** cagra_index_search that writes labels: each result's user label (its row number when the
 *  index has none), -1 in empty slots. Host memory (cagra_index_search_labels_device: device). */
cagra_status_t cagra_index_search_labels(const cagra_index_t* index,
                                         const cagra_search_params_t* params, const void* queries,
                                         cagra_dtype_t dtype, int64_t num_queries, int64_t dim,
                                         uint32_t k, int64_t* labels, float* distances,
                                         const cagra_filter_t* filter);

/** cagra_index_search with `queries`, `neighbors` and `distances` (NULL to skip) in CUDA device
 *  memory on device params->resources.device, with no host round trip (the CUDA backend; the
 *  filter stays in host memory). The queries are read after the work queued on
 *  params->cuda_stream (NULL: the legacy default stream); the results are complete when the
 *  call returns, or with params->stream_ordered for the work queued on that stream after the
 *  call. Same results as the host
 *  search of the same queries. Errors as cagra_index_search, and UNSUPPORTED when this build has
 *  no CUDA backend or no GPU is visible, INVALID_ARGUMENT with backend CAGRA_BACKEND_CPU. */
cagra_status_t cagra_index_search_device(const cagra_index_t* index,
                                         const cagra_search_params_t* params, const void* queries,
                                         cagra_dtype_t dtype, int64_t num_queries, int64_t dim,
                                         uint32_t k, uint32_t* neighbors, float* distances,
                                         const cagra_filter_t* filter);

/** cagra_index_search_labels with `queries`, `labels` and `distances` (NULL to skip) in CUDA
 *  device memory, as cagra_index_search_device takes them: the row ids become labels on the GPU,
 *  from a copy of the labels kept there (made again when they change), so params->
 *  stream_ordered holds as there. Errors as cagra_index_search_device. */
cagra_status_t cagra_index_search_labels_device(const cagra_index_t* index,
                                                const cagra_search_params_t* params,
                                                const void* queries, cagra_dtype_t dtype,
                                                int64_t num_queries, int64_t dim, uint32_t k,
                                                int64_t* labels, float* distances,
                                                const cagra_filter_t* filter);

/* ---- a living index: extend, remove, compact, labels (docs/living_index.md) --------------- */

/** Inserts `rows x dim` host vectors as the new rows size .. size + rows - 1.
 *  @param labels  one unique int64 label (>= 0) per new row, or NULL. An index with labels needs
 *                 them; on an index without, they make the existing rows' labels their row
 *                 numbers.
 *  On failure the index is exactly as it was. Errors: INVALID_ARGUMENT (NULL, dim or dtype
 *  mismatch, rows < 1, duplicate or missing labels, non-finite values), OUT_OF_MEMORY, ... */
cagra_status_t cagra_index_extend(cagra_index_t* index, const cagra_extend_params_t* params,
                                  const void* data, cagra_dtype_t dtype, int64_t rows, int64_t dim,
                                  const int64_t* labels);

/** Marks the rows with these `n` labels (row numbers when the index has no labels) deleted: no
 *  search returns them again, but the graph walks through them until compaction. With
 *  `compact_above` > 0, compacts when more than that share of rows is deleted afterwards.
 *  `resources` NULL = defaults; `removed` (NULL to skip) gets the rows removed.
 *  INVALID_ARGUMENT, and nothing changes, for an unknown label, one deleted before, or one
 *  listed twice. */
cagra_status_t cagra_index_remove(cagra_index_t* index, const cagra_resources_t* resources,
                                  const int64_t* labels, int64_t n, double compact_above,
                                  int64_t* removed);

/** cagra_index_remove by row number (0 .. rows - 1, the ids cagra_index_search returns) instead
 *  of label. Same rules. */
cagra_status_t cagra_index_remove_rows(cagra_index_t* index, const cagra_resources_t* resources,
                                       const int64_t* row_ids, int64_t n, double compact_above,
                                       int64_t* removed);

/** Drops the deleted rows and renumbers the others in order (their neighbour lists are
 *  repaired). Labels are kept; an index without labels gets its old row numbers as labels, so
 *  cagra_index_search_labels keeps returning the same ids. `resources` NULL = defaults. */
cagra_status_t cagra_index_compact(cagra_index_t* index, const cagra_resources_t* resources);

/** Gives every row a label: `n` must be the index's row count, the labels all different and
 *  >= 0. On failure the index keeps the labels it had. */
cagra_status_t cagra_index_set_labels(cagra_index_t* index, const int64_t* labels, int64_t n);

/** Copies the label of every row (row numbers when the index has no labels) to `labels`, which
 *  holds `capacity` values; INVALID_ARGUMENT when capacity is below the row count. */
cagra_status_t cagra_index_get_labels(const cagra_index_t* index, int64_t* labels,
                                      int64_t capacity);

#ifdef __cplusplus
}  // extern "C"
#endif

/* A sharded index: one index split over several GPUs (cagra_sharded_index_*). */
#include <cagra/c_api_sharded.h>

#endif  // CAGRA_C_API_H
