// What the CUDA backend keeps on a device for one index (cached in idx.backend_cache(), a copy
// per device):
// the vectors, rows padded to a multiple of 16 bytes so that a team can read them with 16-byte
// loads, and the graph; plus a stream and the search's grow-only workspaces
// (search/workspace.hpp), reused by every search call on this index.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <cagra/index.hpp>
#include <cagra/params.hpp>

#include "core/backend_state.hpp"
#include "cuda/memory.hpp"
#include "cuda/search/workspace.hpp"

namespace cagra::cuda {

struct index_state;
/** Stops the index's persistent search kernel if one runs (search/persistent.cu); never throws. */
void stop_persistent(index_state& st) noexcept;

struct index_state final : detail::backend_state {
  ~index_state() override {  // before the buffers go: the persistent kernel, and the work of
    stop_persistent(*this);  // a stream-ordered search still queued (resources::stream_ordered)
    CAGRA_CUDA_TRY_NO_THROW(cudaStreamSynchronize(stream.get()));
  }

  int device = 0;
  int64_t rows = 0;
  uint32_t dim = 0, degree = 0;
  dtype type = dtype::f32;
  uint32_t row_stride = 0;         // bytes between rows as the kernels read them (multiple of 16)
  device_buffer<uint8_t> dataset;  // [rows, row_stride] bytes, zero padded
  device_buffer<uint32_t> graph;   // [rows, degree]
  /** A copy made with the rows left in host memory (search_params::stored_rows = host): the
   *  index's own rows, pinned in place (`host_rows`) and read by the kernels through
   *  `mapped_rows`; `dataset` and `graph` stay empty (only device_rows hands such a copy out). */
  std::shared_ptr<host_pin> host_rows;
  const uint8_t* mapped_rows = nullptr;
  /** Where the kernels read the stored rows. */
  const uint8_t* rows_data() const { return mapped_rows ? mapped_rows : dataset.data(); }
  cuda_stream stream;
  // extend's updates of the rewritten graph rows (update_device_index): row ids, then their
  // contents, staged in pinned memory and uploaded; grow-only so that a series of extends
  // allocates rarely.
  pinned_buffer<uint32_t> update_staging;
  device_buffer<uint32_t> update_words;
  // The persistent kernel's initial-node pool (core/initial_pool.hpp): its rows' ids and a compact
  // copy of their vectors, made for an index of `pool_rows_of` rows (-1: none made;
  // initial_pool.hpp).
  device_buffer<uint32_t> pool_ids;
  device_buffer<uint8_t> pool_vectors;  // [pool_ids.size(), row_stride]
  int64_t pool_rows_of = -1;

  std::mutex workspace_mutex;  // one search at a time uses the workspaces below
  search_workspace io;
  multi_cta_workspace mcta;
  persistent_state persistent;
};

/** An index's labels on one device (search/device_labels.cu), as of index::labels_stamp()
 *  `stamp`. Replaced, never written again, when the labels change: a search still queued may
 *  read the old copy until it is freed (cudaFree waits for the device). */
struct device_labels {
  device_buffer<int64_t> values;  // [index size]
  uint64_t stamp = 0;
};

/** What idx.backend_cache() holds for the CUDA backend: one copy of the index per device that
 *  searched it (a replicated search keeps a copy on each of its devices; multi_gpu.hpp). */
struct device_copies final : detail::backend_state {
  std::vector<std::shared_ptr<index_state>> by_device;  // [device ordinal], null: no copy there
  /** [device ordinal]: the labels that searches into device labels map rows to (null: none). */
  std::vector<std::shared_ptr<const device_labels>> labels_by_device;
  /** The index's rows pinned once for every device's copy that reads them from the host (the
   *  same memory cannot be registered twice). */
  std::shared_ptr<host_pin> host_rows;
  /** Drops the copies that read the host rows, and the pin (state.cu). */
  void release_host_rows() override;
};

/** The device copy of `idx` on `device`, rows and graph on the device: the cached one, or a new
 *  one (copied once and kept, beside the copies on other devices, as long as the index lives;
 *  it replaces a cached copy whose rows stay on the host). */
std::shared_ptr<index_state> device_index(const index& idx, int device);

/** A copy of `idx` on `device` whose stored rows the kernels can read, for the steps that read
 *  only rows (the int8 traversal's re-ranking, the exact filtered path): `device` as
 *  device_index; `host` one whose rows stay in host memory (pinned and mapped; no graph);
 *  `automatic` the cached copy if there is one, else `device` when the rows and graph fit the
 *  device's free memory (with room to spare) or cannot be read from the host, else `host`. */
std::shared_ptr<index_state> device_rows(const index& idx, int device, rows_location where);

/** idx's labels (idx.has_labels()) on `device`: the cached copy if it is current
 *  (index::labels_stamp), else a new one, uploaded and synchronized before it is returned. */
std::shared_ptr<const device_labels> device_label_copy(const index& idx, int device);

}  // namespace cagra::cuda
