// Copies an index to the device once and caches it in the index (see state.hpp), and keeps the
// copy up to date when extend changes the index in place. Rows are re-laid out with a
// 16-byte-aligned stride (zero padding: adds nothing to L2 or dot products) because the distance
// teams read rows only with 16-byte vector loads. A copy for the steps that read only rows may
// instead leave them in host memory, pinned and mapped (device_rows: rows of whole 16-byte
// chunks only, read in place).
#include "cuda/state.hpp"

#include <algorithm>
#include <vector>

#include <cagra/error.hpp>

#include "cuda/backend.hpp"
#include "cuda/check.hpp"
#include "cuda/host_upload.hpp"
#include "cuda/testing.hpp"

namespace cagra::cuda {
namespace {
std::mutex
    cache_mutex;  // guards idx.backend_cache() (a const index may be searched by many threads)

/** graph[rows[i / degree] * degree + i % degree] = values[i]: the rewritten rows of an extend. */
__global__ void scatter_rows(uint32_t* graph, uint32_t degree, const uint32_t* rows,
                             const uint32_t* values, size_t n_values) {
  const size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n_values) graph[size_t(rows[i / degree]) * degree + i % degree] = values[i];
}

/** The cache's slot for `device` (created empty). Called under cache_mutex. */
std::shared_ptr<index_state>& cached_copy(const index& idx, int device,
                                          std::shared_ptr<device_copies>& copies) {
  auto& slot = idx.backend_cache();
  copies = std::dynamic_pointer_cast<device_copies>(slot);
  if (!copies) {
    copies = std::make_shared<device_copies>();
    slot = copies;
  }
  if (copies->by_device.size() <= size_t(device)) copies->by_device.resize(size_t(device) + 1);
  return copies->by_device[size_t(device)];
}

/** A new copy's shape: rows, dimension, degree, type and the stride the kernels read rows at. */
std::shared_ptr<index_state> new_state(const index& idx, int device) {
  auto s = std::make_shared<index_state>();
  s->device = device;
  s->rows = idx.size();
  s->dim = idx.dim();
  s->degree = idx.graph_degree();
  s->type = idx.storage_dtype();
  const size_t row_bytes = size_t{s->dim} * dtype_size(s->type);
  s->row_stride = static_cast<uint32_t>((row_bytes + 15) / 16 * 16);
  CAGRA_EXPECTS(s->rows > 0 && s->degree > 0, "the index is empty");
  return s;
}

/** Rows and graph copied to the device. */
std::shared_ptr<index_state> copy_to_device(const index& idx, int device) {
  device_guard guard(device);
  std::shared_ptr<index_state> s = new_state(idx, device);
  const size_t row_bytes = size_t{s->dim} * dtype_size(s->type);
  const size_t data_bytes = size_t(s->rows) * s->row_stride;
  s->dataset.reserve(data_bytes);
  if (s->row_stride != row_bytes)
    CAGRA_CUDA_TRY(cudaMemsetAsync(s->dataset.data(), 0, data_bytes, s->stream.get()));
  upload_rows(s->dataset.data(), s->row_stride, idx.vectors().data(), row_bytes, row_bytes,
              size_t(s->rows), s->stream.get());
  const size_t graph_elems = size_t(s->rows) * s->degree;
  s->graph.reserve(graph_elems);
  const size_t graph_row = size_t(s->degree) * sizeof(uint32_t);
  upload_rows(s->graph.data(), graph_row, idx.graph().data, graph_row, graph_row, size_t(s->rows),
              s->stream.get());
  return s;
}

/** True when the index's rows can be read from host memory as they are: whole 16-byte chunks a
 *  row from a 16-byte aligned start (the kernels' loads). */
bool rows_readable_in_place(const index& idx) {
  return idx.vectors().view().row_bytes() % 16 == 0 &&
         reinterpret_cast<uintptr_t>(idx.vectors().data()) % 16 == 0;
}

/** Drops the copies that read the host rows and the pin. Called under cache_mutex. */
void drop_host_copies(device_copies& copies) {
  for (auto& st : copies.by_device)
    if (st && st->mapped_rows) st.reset();
  copies.host_rows.reset();
}

/** A copy that reads the index's own rows from host memory (pinned once for all devices). */
std::shared_ptr<index_state> copy_reading_host(const index& idx, int device,
                                               device_copies& copies) {
  CAGRA_EXPECTS(rows_readable_in_place(idx),
                "stored rows in host memory need rows of a multiple of 16 bytes (this index's are "
                "%zu bytes)",
                idx.vectors().view().row_bytes());
  device_guard guard(device);
  std::shared_ptr<index_state> s = new_state(idx, device);
  const size_t bytes = idx.vectors().size_bytes();
  if (!copies.host_rows || !copies.host_rows->covers(idx.vectors().data(), bytes)) {
    drop_host_copies(copies);  // memory cannot be registered twice: the older pin goes first
    copies.host_rows = std::make_shared<host_pin>(idx.vectors().data(), bytes);
  }
  s->host_rows = copies.host_rows;
  s->mapped_rows = s->host_rows->device_pointer();
  return s;
}

/** Whether the device copy of rows and graph fits `device`'s free memory with room to spare
 *  (a sixteenth of it and 512 MiB for the searches' workspaces). */
bool fits_on_device(const index& idx, int device) {
  device_guard guard(device);
  size_t free = 0, total = 0;
  CAGRA_CUDA_TRY(cudaMemGetInfo(&free, &total));
  const size_t row_bytes = size_t{idx.dim()} * dtype_size(idx.storage_dtype());
  const size_t need = size_t(idx.size()) * ((row_bytes + 15) / 16 * 16) +
                      size_t(idx.size()) * idx.graph_degree() * sizeof(uint32_t);
  return need + need / 16 + (size_t{512} << 20) <= free;
}

}  // namespace

void device_copies::release_host_rows() {
  std::lock_guard<std::mutex> lock(cache_mutex);
  drop_host_copies(*this);
}

std::shared_ptr<index_state> device_index(const index& idx, int device) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  std::shared_ptr<device_copies> copies;
  std::shared_ptr<index_state>& cached = cached_copy(idx, device, copies);
  if (cached && !cached->mapped_rows) return cached;
  cached.reset();  // a copy reading host rows has no graph: replaced (its holders keep it)
  cached = copy_to_device(idx, device);
  return cached;
}

std::shared_ptr<index_state> device_rows(const index& idx, int device, rows_location where) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  std::shared_ptr<device_copies> copies;
  std::shared_ptr<index_state>& cached = cached_copy(idx, device, copies);
  if (where == rows_location::automatic) {
    if (cached) return cached;
    where = !rows_readable_in_place(idx) || fits_on_device(idx, device) ? rows_location::device
                                                                        : rows_location::host;
  }
  const bool host = where == rows_location::host;
  if (cached && (cached->mapped_rows != nullptr) == host) return cached;
  cached.reset();  // the other kind: replaced (its holders keep it)
  cached = host ? copy_reading_host(idx, device, *copies) : copy_to_device(idx, device);
  return cached;
}

namespace {
/** Brings one device copy up to date (update_device_index's work for one device). */
void update_copy(index_state* st, const index& idx, int64_t old_rows,
                 const std::vector<uint32_t>& changed,
                 const std::function<void(uint32_t*)>& gather_changed) {
  device_guard guard(st->device);
  std::lock_guard<std::mutex> busy(st->workspace_mutex);
  stop_persistent(*st);  // under the mutex: the host stops the kernel only between jobs
  const cudaStream_t s = st->stream.get();
  const int64_t n = idx.size(), added = n - old_rows;
  const uint32_t degree = st->degree;
  const size_t row_bytes = size_t{st->dim} * dtype_size(st->type), stride = st->row_stride;
  if (st->dataset.size() < size_t(n) * stride) {  // grow by half again, keep the old rows
    const size_t cap = std::max<size_t>(size_t(n), size_t(old_rows) + size_t(old_rows) / 2);
    device_buffer<uint8_t> data(cap * stride);
    device_buffer<uint32_t> graph(cap * degree);
    CAGRA_CUDA_TRY(cudaMemcpyAsync(data.data(), st->dataset.data(), size_t(old_rows) * stride,
                                   cudaMemcpyDeviceToDevice, s));
    if (stride != row_bytes)  // zero padding of the rows to come
      CAGRA_CUDA_TRY(cudaMemsetAsync(data.data() + size_t(old_rows) * stride, 0,
                                     (cap - size_t(old_rows)) * stride, s));
    CAGRA_CUDA_TRY(cudaMemcpyAsync(graph.data(), st->graph.data(),
                                   size_t(old_rows) * degree * sizeof(uint32_t),
                                   cudaMemcpyDeviceToDevice, s));
    st->stream.sync();
    st->dataset = std::move(data);
    st->graph = std::move(graph);
  }
  if (added > 0) {
    CAGRA_CUDA_TRY(cudaMemcpy2DAsync(st->dataset.data() + size_t(old_rows) * stride, stride,
                                     idx.vectors().row_bytes(old_rows), row_bytes, row_bytes,
                                     size_t(added), cudaMemcpyHostToDevice, s));
    CAGRA_CUDA_TRY(
        cudaMemcpyAsync(st->graph.data() + size_t(old_rows) * degree, idx.graph().row(old_rows),
                        size_t(added) * degree * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
  }
  if (!changed.empty()) {
    // Staging [changed ids | their rows] in pinned memory: one fast upload, no page faults on
    // a fresh buffer per call (grow-only, by half again).
    const size_t n_values = changed.size() * degree, words = changed.size() + n_values;
    pinned_buffer<uint32_t>& staging = st->update_staging;
    if (staging.size() < words) staging.reserve(words + words / 2);
    std::copy(changed.begin(), changed.end(), staging.data());
    gather_changed(staging.data() + changed.size());
    device_buffer<uint32_t>& d_words = st->update_words;
    if (d_words.size() < words) d_words.reserve(words + words / 2);
    CAGRA_CUDA_TRY(cudaMemcpyAsync(d_words.data(), staging.data(), words * sizeof(uint32_t),
                                   cudaMemcpyHostToDevice, s));
    const unsigned block = 256;
    scatter_rows<<<unsigned((n_values + block - 1) / block), block, 0, s>>>(
        st->graph.data(), degree, d_words.data(), d_words.data() + changed.size(), n_values);
    CAGRA_CUDA_TRY(cudaGetLastError());
  }
  st->stream.sync();
  st->rows = n;
}
}  // namespace

void update_device_index(const index& idx, int64_t old_rows, const std::vector<uint32_t>& changed,
                         const std::function<void(uint32_t*)>& gather_changed) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto& slot = idx.backend_cache();
  auto copies = std::dynamic_pointer_cast<device_copies>(slot);
  if (!copies) return;
  try {
    drop_host_copies(*copies);  // the rows may have moved (extend let go of them before)
    for (auto& st : copies->by_device) {
      if (!st) continue;
      if (st->rows != old_rows || st->degree != idx.graph_degree())
        st.reset();  // the next search copies the index anew
      else
        update_copy(st.get(), idx, old_rows, changed, gather_changed);
    }
  } catch (...) {
    slot.reset();  // a half-updated copy is never searched
    throw;
  }
}

std::shared_ptr<const device_labels> device_label_copy(const index& idx, int device) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  std::shared_ptr<device_copies> copies;
  cached_copy(idx, device, copies);  // the slot exists from here on
  auto& by_device = copies->labels_by_device;
  if (by_device.size() <= size_t(device)) by_device.resize(size_t(device) + 1);
  std::shared_ptr<const device_labels>& cached = by_device[size_t(device)];
  if (cached && cached->stamp == idx.labels_stamp()) return cached;
  device_guard guard(device);
  auto made = std::make_shared<device_labels>();
  const std::vector<int64_t>& labels = idx.labels();
  made->values.reserve(labels.size());
  made->stamp = idx.labels_stamp();
  // On a stream of its own, and complete before any search may read it.
  cuda_stream upload;
  CAGRA_CUDA_TRY(cudaMemcpyAsync(made->values.data(), labels.data(),
                                 labels.size() * sizeof(int64_t), cudaMemcpyHostToDevice,
                                 upload.get()));
  upload.sync();
  cached = made;
  return cached;
}

bool testing::rows_on_host(const cagra::index& idx, int device) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto copies = std::dynamic_pointer_cast<device_copies>(idx.backend_cache());
  if (!copies || copies->by_device.size() <= size_t(device)) return false;
  const auto& st = copies->by_device[size_t(device)];
  return st && st->mapped_rows != nullptr;
}

}  // namespace cagra::cuda
