// The search's reusable buffers on one index (grow-only, so the hot path does not allocate once
// warm), one struct per use: the batch's queries and results, the multi-CTA kernel's visited
// hash and per-CTA lists, the persistent kernel's job words and state. index_state (state.hpp)
// holds one of each, guarded by its workspace mutex.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/memory.hpp"

namespace cagra::cuda {

/** One slot of the copy pipeline (copy_pipeline.cu): a stream, pinned staging for one chunk's
 *  queries and results, and the event recorded after the chunk's results reached the staging. */
struct pipeline_slot {
  cuda_stream stream;
  cuda_event done;
  pinned_buffer<uint8_t> queries;  // [chunk, dim] of the query type
  pinned_buffer<uint32_t> ids;     // [chunk, k]
  pinned_buffer<float> distances;  // [chunk, k]
};

/** Queries in and results out, for every kernel. */
struct search_workspace {
  device_buffer<uint8_t> queries;       // [nq, dim] of the query type
  device_buffer<uint32_t> ids;          // [nq, k]
  device_buffer<float> distances;       // [nq, k]
  device_buffer<uint32_t> filter;       // a filtered search's bitsets: [1 or nq, ceil(N / 32)]
  std::vector<uint32_t> filter_shared;  // the shared bitset in `filter`, if it holds one
  uint64_t filter_stamp = 0;            // its row_filter::stamp (0: none)
  // Device-memory queries only (search_device): the caller's stream (resources::cuda_stream,
  // else the legacy default stream) -> index stream ordering, and the first bad rows found by
  // the query check ([0]: NaN/Inf, [1]: all zeros for cosine). A stream-ordered call marks its
  // bad rows instead ([nq]: 1 = bad) and orders the caller's stream after its results; the int8
  // walk's stream and the rows' stream hand the work over with `handoff`.
  cuda_event after_caller_stream;
  device_buffer<unsigned long long> query_flags;
  device_buffer<uint8_t> bad_rows;
  cuda_event results_ready;
  cuda_event handoff;
  // Small host batches (search_io::mapped, host_merge): queries and results in mapped pinned host
  // memory that the kernels read and write in place (no copy operations on the latency path).
  pinned_buffer<uint8_t> host_queries;  // [nq, dim] of the query type
  pinned_buffer<uint32_t> host_ids;     // [nq, k]
  pinned_buffer<float> host_distances;  // [nq, k]
  // The multi-CTA kernel's per-CTA lists there, merged by the host: words value | tag << 32
  // (the tag is the call's, never 0; the buffer starts zeroed).
  pinned_buffer<uint64_t> host_lists;  // [nq, n_ctas, min(k, 32), 2]: id, distance bits
  uint32_t result_tag = 0;             // the last call's tag
  uint64_t tags_issued = 0;            // next_tag calls so far (tags repeat after 2^32 - 1)
  // Large host batches of the single-CTA kernel (copy_pipeline.cu): made on first use.
  std::unique_ptr<pipeline_slot[]> pipeline;
  // The int8 traversal (int8_traversal.cu, search.cu): each query's candidate rows, and, in the
  // walk index's workspace, the queries' codes and the codec ([2, dim]: offsets, scales).
  device_buffer<uint32_t> candidates;  // [nq, n_candidates]
  device_buffer<uint8_t> codes;        // [nq, dim]
  device_buffer<float> codec;
  // Cosine rows normalized on the device (search_plan::normalize_on_device): [nq, dim] f32.
  device_buffer<float> prepared;

  /** The next call's tag (never 0: tagged buffers start zeroed). */
  uint32_t next_tag() {
    ++tags_issued;
    return ++result_tag == 0 ? ++result_tag : result_tag;
  }
};

/** The multi-CTA kernel's state for the queries of one launch ("chunk"). */
struct multi_cta_workspace {
  device_buffer<uint32_t> hash;  // 2 halves of [chunk, 1 << hash_bits]: per query the visited set
  size_t half = 0;               // words per half
  size_t dirty[2] = {0, 0};      // leading words of each half the last launch on it wrote
  uint32_t next = 0;             // the half the next launch searches with (the other is empty)
  device_buffer<uint32_t> done;  // [chunk] CTAs finished per query (all 0 between launches)
  device_buffer<uint32_t> ids;   // [chunk, n_ctas, 32] each CTA's list
  device_buffer<float> dists;    // [chunk, n_ctas, 32]
};

/** What a running persistent kernel was launched with (its plan's shape, buffers, filter and
 *  lifetime, persistent.cu): a call with another key stops it and launches again. A fixed
 *  array: it is made and compared on every batch-1 call. */
using persistent_key = std::array<uint64_t, 17>;

/** The persistent batch-1 kernel (search_params::persistent, persistent.cu): its job words (the
 *  query, tagged with the job's seq = the search workspace's result_tag), stop flag and state. */
struct persistent_state {
  bool running = false;
  // No kernel runs and `hash` and `counters` hold what a launch needs (persistent.cuh): every
  // hash slot empty, the exit count 0, words tagged only with tags issued since zeroed_at.
  // False after an allocation or an error: the next launch initializes them.
  bool clean = false;
  uint64_t zeroed_at = 0;            // search_workspace::tags_issued when they were last zeroed
  persistent_key key{};              // the launch configuration it runs with
  uint32_t ctas_per_sm = 0;          // of the last launch (multi_cta_persistent_ctas_per_sm)
  pinned_buffer<uint64_t> words;     // [query words + kJobTailWords, rounded up to even]
  pinned_buffer<uint32_t> stop;      // [4]: the flag, and 12 bytes that CTA 0's copy reads too
  device_buffer<uint32_t> hash;      // [3 << hash_bits]
  device_buffer<uint32_t> counters;  // the leave word, the exit count (8 bytes each), the job's
                                     // words (8 each)
  // When its last job was answered: a kernel idle for longer than its lifetime is stopped and
  // launched again rather than posted to.
  std::chrono::steady_clock::time_point answered;
};

}  // namespace cagra::cuda
