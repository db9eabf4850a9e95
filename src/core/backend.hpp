// The seam between the library's entry points (src/core/dispatch.cpp) and the machines that do
// the work: one interface, two implementations. The CPU backend (src/cpu/backend.cpp) is always
// there; the CUDA one (src/cuda/backend.cpp) is linked when CMake finds nvcc, and a build without
// it links src/core/cuda_stub.cpp, whose backend is never usable and says "not compiled with
// CUDA". Everything here is plain C++ and backend-neutral: both backends include this header,
// neither includes the other, and core includes neither.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/plan.hpp>

#include "core/int8_codec.hpp"

namespace cagra::core {

using progress_fn = std::function<void(const char* stage, double fraction)>;

/** Which optimization steps run (the paper's ablation, Q-A1): without `reorder` the kNN list is
 *  cut to `degree` in distance order; without `reverse` the pruned graph is returned as is. */
struct optimize_steps {
  bool reorder = true;
  bool reverse = true;
};

/** What backend_ops::nn_descent_graph reports of its two stages. */
struct graph_stage_times {
  uint32_t iterations = 0;  // NN-descent iterations run
  double knn_seconds = 0, optimize_seconds = 0;
};

/** Work done by a CPU search, summed over the queries (for bytes-per-query analysis: the
 *  single-CTA kernel follows the same steps, so these counts hold for it too). */
struct search_stats {
  uint64_t queries = 0;
  uint64_t distances = 0;    // distance computations (random init + expanded neighbors)
  uint64_t iterations = 0;   // search iterations that expanded at least one parent
  uint64_t parents = 0;      // parent nodes expanded (graph rows read)
  uint64_t hash_resets = 0;  // visited-hash clears (forgettable hash or nearly full)
};

/** A sharded search whose queries and results are in device memory (core/multi_gpu/sharded.cpp
 *  fills it; the CUDA backend runs it, src/cuda/multi_gpu/device_shards.cu): the queries go from
 *  the device holding them to every other shard device (NCCL broadcast), each shard is searched
 *  on its device by `search_shard`, the per-shard lists come back (NCCL send / receive) and one
 *  kernel merges them there by (distance, global id). */
struct device_shard_search {
  std::vector<int> devices;       ///< the devices of the shards, distinct
  const void* queries = nullptr;  ///< device memory, [nq, row_bytes]: its device is the root
  int64_t nq = 0;
  size_t row_bytes = 0;
  uint32_t k = 0;
  std::vector<int> shard_device;      ///< per shard: its device (one of `devices`)
  std::vector<uint32_t> shard_k;      ///< per shard: its list width (<= k)
  std::vector<int64_t> shard_offset;  ///< per shard: its first global row
  /** Searches shard s with `queries` (device memory on its device) into ids / distances
   *  ([nq, shard_k[s]], device memory there, shard-local row ids). Called from several host
   *  threads at once, one per shard. */
  std::function<void(size_t, const void*, uint32_t*, float*)> search_shard;
  uint32_t* ids = nullptr;     ///< [nq, k], device memory on the root
  float* distances = nullptr;  ///< [nq, k] or null
  /** The caller's stream on the root (resources::cuda_stream), which the queries' broadcast
   *  waits for; null: the legacy default stream. */
  void* caller_stream = nullptr;
};

/** One backend. Inputs are already validated and converted (core/convert.hpp): vectors in a
 *  storage type, queries in its query type; plans are complete (core/plan.cpp). */
class backend_ops {
 public:
  virtual ~backend_ops() = default;
  virtual backend kind() const = 0;
  /** Visible devices (CUDA; 0 when there are none or the build has no CUDA). The CPU: 1. */
  virtual int device_count() const = 0;
  /** Why device_count() is 0, for error messages ("no CUDA device is visible"). */
  virtual const char* unavailable_reason() const = 0;
  /** Multiprocessors of `device` (what the plan sizes the GPU kernels by; a cheap attribute
   *  query, asked on every search); throws when it does not exist. */
  virtual int sm_count(int device) const = 0;
  /** One line for logs: "NVIDIA H200 (sm_90, 132 SMs, 143771 MiB, driver 13000, runtime 13000)". */
  virtual std::string describe(int device) const = 0;
  /** Free memory of `device` in bytes now (cudaMemGetInfo; what a build may allocate, the
   *  context and other allocations already taken out); throws when it does not exist. The CPU:
   *  0. */
  virtual uint64_t free_device_memory(int device) const = 0;

  /** Exact k nearest rows of `data` for every row of `queries`, sorted by (distance, id). */
  virtual knn_graph brute_force(const host_matrix& data, const host_matrix& queries, metric m,
                                uint32_t k, bool exclude_self, const resources& res) const = 0;
  /** Largest k brute_force takes. */
  virtual uint32_t brute_force_max_k() const = 0;
  /** Approximate kNN graph by NN-descent, self excluded, rows sorted by (distance, id). */
  virtual knn_graph nn_descent(const host_matrix& data, metric m, uint32_t k,
                               const knn_graph_params& p, uint64_t seed, const resources& res,
                               uint32_t* iterations_run) const = 0;
  /** CAGRA graph optimization (paper §III-B); both backends give the same bytes. */
  virtual std::vector<uint32_t> optimize(const knn_graph& knn, uint32_t degree,
                                         reorder_kind reorder, optimize_steps steps,
                                         const resources& res) const = 0;
  /** The build's two stages in one call: the NN-descent kNN graph of `data` (degree k), then its
   *  every optimization step to `degree`, so that a backend can keep the n x k lists where they
   *  were made (the GPU: no round trip through the host). The same graph as nn_descent, then
   *  optimize. `times` (may be null) gets the iterations run and each stage's seconds. */
  virtual std::vector<uint32_t> nn_descent_graph(const host_matrix& data, metric m, uint32_t k,
                                                 const knn_graph_params& p, uint64_t seed,
                                                 uint32_t degree, reorder_kind reorder,
                                                 const resources& res,
                                                 graph_stage_times* times) const;
  /** Search of host queries into host [nq, k] ids / distances (distances may be null).
   *  `filter` (host memory, checked against the call) is empty or plan.filter's kind; with
   *  plan.filter_path == exact the answer is exact over the allowed rows. */
  virtual void search(const index& idx, dataset_view queries, const search_plan& plan,
                      const row_filter& filter, uint32_t* ids, float* distances,
                      const resources& res, search_stats* stats) const = 0;
  /** Exact re-ranking, the int8 traversal's last step (core/int8_traversal.cpp): for each of
   *  the queries.rows host queries (idx's query type), the exact distances from idx's stored
   *  rows to its `n_candidates` candidates (host [nq, n_candidates]; ids >= idx.size(), e.g.
   *  kInvalidId, are skipped) and the k nearest of them by (distance, id) into host [nq, k]
   *  ids / distances (distances may be null; slots without a candidate: kInvalidId / +inf). */
  virtual void rerank(const index& idx, dataset_view queries, const uint32_t* candidates,
                      uint32_t n_candidates, uint32_t k, uint32_t* ids, float* distances,
                      const resources& res) const = 0;
  /** A search with plan.traversal == int8 (core/int8_traversal.cpp): `queries` are host rows of
   *  idx's query type, or device rows as search_device takes them (the CUDA backend; then the
   *  outputs are device memory), `copy` its int8 copy; the k results as search() gives them. The
   *  default runs the steps through search() and rerank() (core::search_int8_steps); the CUDA
   *  backend keeps a large batch on the device from the encoding to the re-ranking. */
  virtual void search_int8(const index& idx, const int8_copy& copy, dataset_view queries,
                           const search_plan& plan, const row_filter& filter, uint32_t* ids,
                           float* distances, const resources& res) const;
  /** Whether search() and search_int8() of a cosine index take the caller's f32 rows for a
   *  batch of `nq` under `plan` and normalize them themselves (search_plan::
   *  normalize_on_device). The CPU: never. */
  virtual bool normalizes_on_device(const search_plan&, int64_t) const { return false; }
  /** `idx` changed in place (extend): rows [old_rows, idx.size()) are new and the graph rows in
   *  `changed` (all < old_rows, ascending) were rewritten. A backend holding a copy of the index
   *  brings it up to date (reading the rows from idx.graph(), with up to `threads` threads) or
   *  drops it; the CPU holds none. */
  virtual void index_changed(const index& idx, int64_t old_rows,
                             const std::vector<uint32_t>& changed, int threads) const = 0;
  /** Search with queries and results in device memory (the CUDA backend only). */
  virtual void search_device(const index& idx, dataset_view queries, const search_plan& plan,
                             const row_filter& filter, uint32_t* ids, float* distances,
                             const resources& res) const = 0;
  /** cagra::search into labels in device memory (the CUDA backend only: cuda::
   *  search_into_labels): `search_rows` searches into the row ids' device memory it is given. */
  virtual void search_into_labels(const index&, const resources&, int /*device*/,
                                  int64_t* /*labels*/, int64_t /*n*/,
                                  const std::function<void(uint32_t*)>& /*search_rows*/) const {
    CAGRA_FAIL("a search into labels in device memory needs the CUDA backend");
  }
  /** A sharded search of device queries (the CUDA backend only; several devices need NCCL). */
  virtual void search_shards_on_devices(const device_shard_search&) const {
    CAGRA_FAIL("a sharded search of queries in device memory needs the CUDA backend");
  }
};

const backend_ops& cpu_backend();
/** The CUDA backend, or the stub of a build without it (device_count() == 0, calls throw). */
const backend_ops& cuda_backend();

/** The backend a call runs on: `cuda` needs a visible GPU (else it throws), `automatic` takes
 *  the GPU when one is visible, `cpu` is the CPU. The one backend-choice rule of the library;
 *  search and brute force refine `automatic` with what the GPU takes (core/plan.cpp). */
backend resolve_backend(const resources& res);
const backend_ops& backend_for(backend b);

/** Host threads for `requested` (resources::num_threads): cagra::resolve_threads, the one rule
 *  (core/threads.cpp: clamped to max_threads(), checked to be startable). Every OpenMP team of
 *  core and the CPU backend is sized by it. */
int host_threads(int requested);
/** The team for a light pass over `elements` values on a call's way (a check, a conversion, an
 *  encoding of the queries): one thread per 2^15 values, at least 1, at most `threads`. A team
 *  wider than its work is worse than idle: libgomp ends the threads that a narrower team after
 *  it leaves out, and starts them again for the next wide one. The CPU's latency path on 16
 *  threads checked and normalized its one cosine query on 16 threads, then walked on 4-12:
 *  0.33-0.46 ms a query on bigann10k where it now takes 35-38 us, and 0.6-0.9 ms on MiniLM-1M,
 *  slower than one thread's walk (16-core Xeon; bench/results/logs/team-size-ab-*.txt). */
int threads_for_elements(int threads, int64_t elements);

/** Fills knn.distances from f32 `data` (the rows the ids point to) with the CPU backend's
 *  distance kernels: distance-based reordering of a kNN graph that came without distances.
 *  Throws for an id >= data.rows(). Defined by the CPU backend (src/cpu/backend.cpp). */
void fill_knn_distances(const host_matrix& data, metric m, knn_graph& knn);

/** Distances (the metric's ordering distance, cagra::metric) from row `x` of `data` (a storage
 *  matrix) to rows `ids[0 .. n)`, into `out`. Defined by the CPU backend: compaction ranks its
 *  refill candidates with it on the host, whichever backend searches. */
void row_distances(const host_matrix& data, metric m, uint32_t x, const uint32_t* ids, size_t n,
                   float* out);

}  // namespace cagra::core
