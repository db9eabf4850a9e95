/**
 * @file params.hpp
 * @brief Parameters of build and search: plain aggregates with documented defaults.
 *
 * A value of 0 (or an `automatic` enum) means "let the library choose"; the choice depends on
 * the data size and the other parameters and is documented in docs/params.md. `validate()`
 * collects every violation into one cagra::error, so a user fixes all of them at once.
 */
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <cagra/types.hpp>

namespace cagra {

/** Which machine runs a call. `automatic` = CUDA when this build has it and a GPU is present. */
enum class backend : uint32_t { automatic = 0, cpu = 1, cuda = 2 };
/** How the intermediate kNN graph is built. */
enum class knn_algo : uint32_t { automatic = 0, nn_descent = 1, brute_force = 2 };
/** Edge ordering used when pruning the kNN graph (paper §III-B). `rank` is CAGRA's choice;
 *  `distance` is the ablation that needs the vectors. */
enum class reorder_kind : uint32_t { rank = 0, distance = 1 };
/** Search algorithm (paper §IV-C). GPU: the kernel. CPU: `multi_cta` walks each query with
 *  several walkers at once, a thread each (the multi-CTA algorithm with a thread for a CTA): the
 *  latency path for small batches (docs/params.md, "The CPU's latency path"); otherwise one
 *  thread walks a query. */
enum class search_algo : uint32_t { automatic = 0, single_cta = 1, multi_cta = 2 };
/** How a filtered search finds the allowed rows (cagra/filter.hpp): `graph` walks the graph with
 *  a top-M list grown as the filter's selectivity falls and returns the allowed entries of it;
 *  `exact` computes the distance to every allowed row (exact results, cost in proportion to the
 *  allowed rows). `automatic` takes `exact` below the crossover that docs/params.md gives. */
enum class filter_algo : uint32_t { automatic = 0, graph = 1, exact = 2 };
/** Element type the index keeps its vectors in. */
enum class storage_type : uint32_t { same_as_input = 0, f32 = 1, f16 = 2 };
/** Which copy of the rows a search walks the graph on (search_params::traversal). */
enum class traversal_type : uint32_t { exact = 0, int8 = 1 };
/** Where a GPU search reads the index's stored rows from (search_params::stored_rows). */
enum class rows_location : uint32_t { automatic = 0, device = 1, host = 2 };

const char* to_string(backend b);
const char* to_string(knn_algo a);
const char* to_string(reorder_kind r);
const char* to_string(search_algo a);
const char* to_string(filter_algo a);
const char* to_string(traversal_type t);
const char* to_string(rows_location r);
backend parse_backend(const std::string& s);
/** Parses "exact" | "int8"; throws cagra::error otherwise. */
traversal_type parse_traversal(const std::string& s);
/** Parses "auto" | "device" | "host"; throws cagra::error otherwise. */
rows_location parse_rows_location(const std::string& s);

/** Execution context: which backend, how many threads, and an optional progress callback. */
struct resources {
  backend target = backend::automatic;
  /** CPU threads; 0 = all hardware threads (OpenMP's default, which honours OMP_NUM_THREADS).
   *  At most max_threads() are used: a larger count is clamped (results do not depend on the
   *  thread count). Negative is an error, and so is a count the system cannot start (checked
   *  before any parallel work; the default count shrinks to what it can start instead). */
  int num_threads = 0;
  /** CUDA device ordinal (CUDA backend only). */
  int device = 0;
  /** Several CUDA devices (cagra/multi_gpu.hpp): a search of a cagra::index is replicated over
   *  them (a large batch is split across the devices, a small one goes to the next device in
   *  turn; each device keeps its own copy of the index), and a cagra::sharded_index places shard
   *  s on devices[s % devices.size()]. Empty, or one device: `device` alone. */
  std::vector<int> devices;
  /** Called on long steps with the stage name and the completed fraction in [0, 1]. */
  std::function<void(const char* stage, double fraction)> progress;
  /** A search of device memory (queries and results in memory_space::device) orders itself
   *  after this CUDA stream (a cudaStream_t of `device`): it reads the queries and writes the
   *  results only after the work queued on the stream before the call. Null (the default) =
   *  the legacy default stream, cupy's and torch's default. The call returns with the results
   *  complete, so they are ready on any stream, unless `stream_ordered` is set. Host-memory
   *  calls do not use it. */
  void* cuda_stream = nullptr;
  /** A search of device memory returns as soon as its work is queued, without waiting for the
   *  GPU: the results are complete for the work queued on `cuda_stream` after the call (stream
   *  order, as a CUDA library call on that stream), and the host is free meanwhile. The caller
   *  keeps the queries and the result buffers alive and unchanged until then (in stream order).
   *  Bad query rows cannot throw then: a row with NaN or Inf (cosine: an all-zero row) gets
   *  kInvalidId and a NaN distance in each of its k slots, where a waiting call throws.
   *  Searches of host memory, and a search replicated or sharded over several devices, wait
   *  for their results whatever it says (docs/cuda.md, "Stream-ordered searches"). */
  bool stream_ordered = false;
};

/** The most CPU threads a call uses: 4 x the hardware threads this process may run on, at most
 *  1024 (but never fewer than the hardware threads). The hardware threads are read once per
 *  calling thread (its CPU affinity at its first call). */
int max_threads();
/** The CPU threads a call with resources::num_threads = `num_threads` runs on (the rule above);
 *  throws cagra::error for a negative count or one the system cannot start. */
int resolve_threads(int num_threads);

/** NN-descent / kNN-graph settings. */
struct knn_graph_params {
  knn_algo algo = knn_algo::automatic;
  /** NN-descent: maximum number of join/update iterations. */
  uint32_t max_iterations = 20;
  /** NN-descent: stop when fewer than `termination_threshold * rows * k` list entries change
   *  in an iteration. */
  float termination_threshold = 0.001f;
  /** NN-descent: share of each list sampled as "new" per iteration (rho in Dong et al.). */
  float sample_rate = 0.5f;
  /** Build the kNN graph over overlapping partitions of at most this many rows, one pass of
   *  the kNN stage per partition (k-means clusters on a sample, every row in its two nearest;
   *  docs/large_builds.md): what bounds the build's memory on a set larger
   *  than the GPU (or the host's NN-descent state). 0 = automatic: the whole set in one pass,
   *  unless the GPU build does not fit its device memory (max_device_memory, or the free
   *  memory), when the plan takes the largest partition that fits. Otherwise at least
   *  4 (intermediate_graph_degree + 1) and 256; at least the row count means one pass. */
  int64_t partition_rows = 0;
  /** A folder for checkpoints of the kNN stage (made when missing; docs/large_builds.md
   *  "Checkpoints"): every finished partition's lists are saved there with a fingerprint of
   *  what they were made from, and a later build with the same folder, data and settings loads
   *  them instead of building them again. Empty: none. */
  std::string checkpoint_dir;
};

/** Parameters of `build`. */
struct index_params {
  cagra::metric metric = cagra::metric::l2;
  /** d: out-degree of the final graph. */
  uint32_t graph_degree = 64;
  /** d_init: degree of the intermediate kNN graph (typically 2d..3d); >= graph_degree.
   *  0 = automatic: 2 x graph_degree, at most rows - 1 (cagra::plan_build shows the value). */
  uint32_t intermediate_graph_degree = 0;
  knn_graph_params knn;
  reorder_kind reorder = reorder_kind::rank;
  storage_type storage = storage_type::same_as_input;
  /** All randomness of the build comes from this seed: on the CPU backend, same seed, same graph
   *  (any thread count). The GPU NN-descent is not bit-deterministic (which proposals survive a
   *  full buffer depends on timing); the GPU optimize is (it equals the CPU's bit for bit). */
  uint64_t seed = 0;
  /** Device memory (bytes) the GPU build may use; 0 = no limit beyond the device's free memory.
   *  The plan fits the build into min(max_device_memory, the device's free memory), from a
   *  model of its allocations (cagra::build_plan::device_bytes, docs/cuda.md): when the whole
   *  set does not fit, the kNN graph is built in partitions (knn.partition_rows) and the graph
   *  optimization moves its reverse-edge and merge steps, or all of it, to the host
   *  (build_plan::optimize). When even that does not fit, the build throws a cagra::error before
   *  any work, saying what it needs and what lowers it. The CPU backend ignores it. */
  uint64_t max_device_memory = 0;

  /** Throws one cagra::error listing every violated constraint (`rows` = dataset size). */
  void validate(int64_t rows) const;
};

/** Parameters of `search`. */
struct search_params {
  /** M: length of the internal top-M list ("itopk" in the paper). A value below k is raised to
   *  k, as hnswlib raises ef (cagra::plan_search shows the value used). */
  uint32_t itopk_size = 64;
  /** p: parents expanded per iteration. Multi-CTA search: the CTAs per query on the GPU, the
   *  walkers per query on the CPU (default there: one per thread), at least the lists itopk and
   *  2k need. Left at 1 with algo `automatic` and no filter, the GPU plan
   *  chooses: the multi-CTA kernel's CTA count from the batch and the SM count, and 2 parents
   *  per iteration for the single-CTA kernel (docs/cuda.md; cagra::plan_search shows it). */
  uint32_t search_width = 1;
  /** Iteration cap; 0 = auto (grows with itopk and log N, never shrinks with search_width). */
  uint32_t max_iterations = 0;
  /** Iterations done even if converged earlier. */
  uint32_t min_iterations = 0;
  /** GPU: threads per distance (2..32); 0 = auto from dim and element size. */
  uint32_t team_size = 0;
  search_algo algo = search_algo::automatic;
  /** Visited-hash size as log2(entries); 0 = auto (docs/params.md). */
  uint32_t hash_bits = 0;
  /** Forgettable hash: clear the table every this many iterations and re-register the top-M ids;
   *  0 = never (standard hash). */
  uint32_t hash_reset_interval = 0;
  /** Random samples tried per initial slot (the best is kept); 0 = auto: 1 on the CPU and for a
   *  large GPU batch at the automatic shape (single-CTA, width left at 1), else (a filter per
   *  query, the GPU's other paths) grows with log N. */
  uint32_t num_random_samplings = 0;
  /** Seed of the random initial nodes, mixed with a hash of the query's own bytes: a query draws
   *  the same nodes (and gets the same answer) whatever batch or position it comes in. */
  uint64_t seed = 0;
  /** GPU, one host query per call on the multi-CTA kernel (batch 1, no filter or one shared
   *  bitset): the search kernel stays resident between calls, polling for the next query,
   *  instead of being launched per call (saves the launch, the synchronize and cold instruction
   *  caches; docs/cuda.md). A call with another bitset than the last relaunches it.
   *  Its CTAs hold their SMs until the index is searched another way or destroyed, or 1 ms
   *  passes without a query (a sparser stream of queries launches it per query), and
   *  cudaDeviceSynchronize or cudaFree elsewhere in the process waits for it meanwhile. false: a
   *  launch per call (for a process that shares the GPU with other work and synchronizes the
   *  device often). Other searches ignore it, as does a query whose CTAs outnumber the GPU's
   *  SMs (they must all be resident at once). */
  bool persistent = true;
  /** How long the resident kernel (`persistent`) waits for the next query before it leaves, in
   *  microseconds: 1,000 (1 ms) by default, 200 .. 10,000,000 (10 s). A stream of queries further
   *  apart than this launches the kernel again for each query, and on an idle GPU that call
   *  costs far more than a launch on a busy one (SIFT-wall-1M, H200: 54 us a query at 2 ms
   *  apart, 104 us at 10 ms, against 18 us back to back; docs/benchmarks.md, "Sparse query
   *  streams"). A longer lifetime keeps it resident (and the GPU awake) for a sparse stream, at
   *  the price of holding its SMs, and of cudaDeviceSynchronize or cudaFree elsewhere in the
   *  process waiting for it, that much longer after the last query. */
  uint32_t persistent_lifetime_us = 1000;
  /** Filtered searches only: how the allowed rows are found (see filter_algo). With `graph`,
   *  itopk_size is the list length at 100% selectivity; the plan grows it as selectivity falls
   *  (cagra::plan_search shows the value used). */
  filter_algo filter = filter_algo::automatic;
  /** Compressed traversal (docs/params.md "int8 traversal"). `int8`: walk the graph on an int8
   *  copy of an f32 or f16 index's rows (a quarter of f32's bytes per visited row), then re-rank
   *  the walk's best `rerank` candidates by their exact distances from the stored rows, so the
   *  distances returned are exact. The copy is made from the stored rows on the first such
   *  search (one pass over them; per-dimension offsets and scales) and kept with the index
   *  (extend encodes the new rows into it; compact drops it). u8/i8 indexes already walk byte
   *  rows: `int8` is refused for them. The exact filtered path (filter_algo::exact) computes
   *  exact distances and ignores it. */
  traversal_type traversal = traversal_type::exact;
  /** int8 traversal: candidates re-ranked per query, in [k, itopk]; 0 = auto:
   *  min(itopk, max(32, 4 k)) (cagra::plan_search shows the value used). */
  uint32_t rerank = 0;
  /** GPU searches with traversal = int8: where the stored rows that the re-ranking reads live
   *  (docs/params.md "Stored rows in host memory"). `device`: copied to the GPU beside the int8
   *  codes and the graph. `host`: left in host memory, pinned in place and mapped, so the GPU
   *  holds only the codes (a quarter of f32 rows) and the graph, and reads each re-ranked
   *  candidate's row across PCIe (an index whose rows do not fit the GPU is searched this way).
   *  `automatic`: the copy the GPU already has, else `device` when the rows fit in the GPU's free
   *  memory, else `host`. Results are the same bit for bit wherever the rows live. `host` needs
   *  traversal = int8 (an exact walk reads every visited row) and rows of a multiple of 16 bytes
   *  (f32: dim a multiple of 4; f16: of 8). The CPU backend reads host rows anyway. */
  rows_location stored_rows = rows_location::automatic;

  /** Throws one cagra::error listing every violated constraint. */
  void validate(uint32_t k, int64_t rows, uint32_t graph_degree) const;
};

/** Parameters of `extend` (docs/living_index.md). */
struct extend_params {
  /** New rows inserted together: each chunk searches the index as it stands (earlier chunks
   *  included) and the rows of the chunk see each other. 0 = auto (10,000 on the GPU, 2,000 on
   *  the CPU). */
  uint32_t chunk_size = 0;
  /** Candidate neighbours gathered per new row before the rank-based pruning (like the build's
   *  intermediate degree); 0 = auto = 2 x graph degree. */
  uint32_t candidates = 0;
  /** Internal list length of the search that finds the candidates; 0 = auto =
   *  max(64, 2 x candidates), rounded up to a multiple of 32. */
  uint32_t itopk_size = 0;

  /** Throws one cagra::error listing every violated constraint. */
  void validate(uint32_t graph_degree) const;
};

}  // namespace cagra
