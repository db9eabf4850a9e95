// What the CUDA backend keeps on the device for one index (cached in idx.backend_cache()):
// the vectors, rows padded to a multiple of 16 bytes so that a team can read them with 16-byte
// loads, and the graph; plus a stream and a grow-only workspace (queries and results) reused
// by every search call on this index (and the multi-CTA search's device hash and per-CTA lists;
// for queries already in device memory, the converted/normalized queries and the check flags),
// so the hot path does not allocate once warm.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <cagra/index.hpp>

#include "cuda/memory.hpp"

namespace cagra::detail {
/** Base of every backend's per-index cache (index.hpp only forward-declares it). */
struct backend_state {
  virtual ~backend_state() = default;
};
}  // namespace cagra::detail

namespace cagra::cuda {

struct index_state;
/** Stops the index's persistent search kernel if one runs (search.cu); never throws. */
void stop_persistent(index_state& st) noexcept;

struct index_state final : detail::backend_state {
  ~index_state() override { stop_persistent(*this); }  // before the buffers it uses go

  int device = 0;
  int64_t rows = 0;
  uint32_t dim = 0, degree = 0;
  dtype type = dtype::f32;
  uint32_t row_stride = 0;             // bytes between rows on the device (multiple of 16)
  device_buffer<uint8_t> dataset;      // [rows, row_stride] bytes, zero padded
  device_buffer<uint32_t> graph;       // [rows, degree]
  cuda_stream stream;

  std::mutex workspace_mutex;          // one search at a time uses the workspace below
  device_buffer<uint8_t> queries;      // [nq, dim] of the query type
  device_buffer<uint32_t> ids;         // [nq, k]
  device_buffer<float> distances;      // [nq, k]
  // Device-memory queries only (search_device): the legacy default stream -> `stream` ordering,
  // and the first bad rows found by the query check ([0]: NaN/Inf, [1]: all zeros for cosine).
  cuda_event after_default_stream;
  device_buffer<unsigned long long> query_flags;
  // Small host batches (search): queries and results in mapped pinned host memory that the
  // kernels read and write in place (no copy operations on the latency path).
  pinned_buffer<uint8_t> host_queries;  // [nq, dim] of the query type
  pinned_buffer<uint32_t> host_ids;     // [nq, k]
  pinned_buffer<float> host_distances;  // [nq, k]
  // The multi-CTA kernel's per-CTA lists there, merged by the host: words value | tag << 32
  // (the tag is the call's, never 0; the buffer starts zeroed).
  pinned_buffer<uint64_t> host_lists;  // [nq, n_ctas, min(k, 32), 2]: id, distance bits
  uint32_t result_tag = 0;             // the last call's tag
  // Persistent batch-1 search (search_params::persistent): the resident kernel's job words
  // (the query, tagged with the job's seq = result_tag), stop flag and device state.
  bool persistent_running = false;
  std::vector<uint64_t> persistent_key;       // the launch configuration it runs with
  pinned_buffer<uint64_t> persistent_words;   // [query words]
  pinned_buffer<uint32_t> persistent_stop;    // [1]
  device_buffer<uint32_t> persistent_hash;    // [2 << hash_bits]
  device_buffer<uint32_t> persistent_counters;  // the leave word (8 bytes), the job's words (8 each)
  // Multi-CTA search only (grow-only too), for the queries of one launch ("chunk"):
  device_buffer<uint32_t> mcta_hash;   // 2 halves of [chunk, 1 << hash_bits]: per query the visited set
  size_t mcta_half = 0;                // words per half
  size_t mcta_dirty[2] = {0, 0};       // leading words of each half the last launch on it wrote
  uint32_t mcta_next = 0;              // the half the next launch searches with (the other is empty)
  device_buffer<uint32_t> mcta_done;   // [chunk + 1] CTAs finished per query, then queries merged
                                       // in the launch (all 0 between launches)
  device_buffer<uint32_t> mcta_ids;    // [chunk, n_ctas, 32] each CTA's list
  device_buffer<float> mcta_dists;     // [chunk, n_ctas, 32]
};

/** The device copy of `idx` on `device`: the cached one, or a new one (copied once). */
std::shared_ptr<index_state> device_index(const index& idx, int device);

}  // namespace cagra::cuda
