// Searching from Python: host queries search into numpy results; CUDA queries (with the CUDA
// backend) are searched in place on their GPU into CUDA results of the queries' own framework
// (torch, cupy, else DLPack), with no host copy. Filters arrive as bitset words built by
// python/cagra/_filter.py. Also the search plan line (Index.explain).
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "ext_common.hpp"

#include <cagra/plan.hpp>

#ifdef CAGRA_PY_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cagra_py {

namespace {

/** The row_filter over `words` (none: no filter) for `idx`; the words stay owned by the caller's
 *  array. The shape is checked here against the index; the batch is checked by the library.
 *  `count` and `stamp`: a shared cagra.Filter's (row_filter::allowed_rows, stamp), else -1, 0. */
cagra::row_filter to_row_filter(const std::optional<filter_words_in>& words, bool per_query,
                                int64_t rows, int64_t count = -1, uint64_t stamp = 0) {
  if (!words) return {};
  const int64_t expected = cagra::row_filter::words_for(rows);
  const size_t want_ndim = per_query ? 2 : 1;
  if (words->ndim() != want_ndim || static_cast<int64_t>(words->shape(want_ndim - 1)) != expected)
    throw cagra::error(std::string("the filter words must be a ") + (per_query ? "[nq, " : "[") +
                       std::to_string(expected) + "] uint32 array for an index of " +
                       std::to_string(rows) + " rows (one bit per row, 32 rows a word)");
  if (per_query)
    return cagra::row_filter::per_query(words->data(), static_cast<int64_t>(words->shape(0)), rows);
  return cagra::row_filter::shared(words->data(), rows, count, stamp);
}

#ifdef CAGRA_PY_CUDA
/** cudaMalloc'd memory on one device, freed unless released to a capsule. */
struct device_memory {
  void* p = nullptr;
  /** `allocate` false: holds nothing (the caller's own arrays are used). */
  device_memory(size_t bytes, int device, bool allocate = true) {
    if (!allocate) return;
    int previous = 0;
    cudaError_t e = cudaGetDevice(&previous);
    if (e == cudaSuccess) e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaMalloc(&p, bytes ? bytes : 1);
    cudaSetDevice(previous);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      p = nullptr;
      throw cagra::error("allocating " + std::to_string(bytes) +
                         " bytes of results on CUDA device " + std::to_string(device) +
                         " failed: " + cudaGetErrorString(e));
    }
  }
  ~device_memory() {
    if (p) cudaFree(p);
  }
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
};

/** A [rows, cols] CUDA array over `mem` (which it takes over: freed with the array), as a torch
 *  tensor or cupy array when the queries were one, else a DLPack-capable nanobind ndarray. */
template <typename T>
nb::object cuda_out(device_memory& mem, size_t rows, size_t cols, int device,
                    const std::string& framework) {
  nb::capsule owner(mem.p, [](void* p) noexcept {
    if (cudaFree(p) != cudaSuccess) (void)cudaGetLastError();
  });
  T* data = static_cast<T*>(mem.p);
  mem.p = nullptr;
  constexpr int cuda = nb::device::cuda::value;
  if (framework == "torch")
    return nb::cast(nb::ndarray<nb::pytorch, T, nb::ndim<2>, nb::device::cuda>(
        data, {rows, cols}, owner, {}, nb::dtype<T>(), cuda, device));
  if (framework == "cupy")
    return nb::cast(nb::ndarray<nb::cupy, T, nb::ndim<2>, nb::device::cuda>(
        data, {rows, cols}, owner, {}, nb::dtype<T>(), cuda, device));
#if NB_VERSION_MAJOR >= 3 || (NB_VERSION_MAJOR == 2 && NB_VERSION_MINOR >= 2)
  using any_framework = nb::array_api;  // a nanobind ndarray object: __dlpack__, __dlpack_device__
#else
  using any_framework = nb::no_framework;  // older nanobind: a bare DLPack capsule
#endif
  return nb::cast(nb::ndarray<any_framework, T, nb::ndim<2>, nb::device::cuda>(
      data, {rows, cols}, owner, {}, nb::dtype<T>(), cuda, device));
}

/** Search of CUDA queries: the results are allocated on the queries' device (or are the caller's
 *  arrays there) and written there by the CUDA backend, which reads the queries in place; no host
 *  copy either way (an index with labels has them mapped on the GPU by the library). */

/** CUDA queries need the CUDA backend and a visible GPU. */
void expect_cuda_search(cagra::backend target) {
  if (target == cagra::backend::cpu)
    throw cagra::error(
        "queries are a CUDA array, but backend='cpu' was asked for: device memory needs the "
        "CUDA backend (use backend='cuda' or 'auto', or pass a host array)");
  if (!cagra::cuda_available())
    throw cagra::error(
        "queries are a CUDA array, but no CUDA device is visible: device memory needs the "
        "CUDA backend and a GPU");
}

nb::object search_on_device(const cagra::index& idx, vectors_in& q, uint32_t k,
                            const cagra::search_params& params, cagra::backend target,
                            int num_threads, const std::string& framework,
                            const cagra::row_filter& filter, uint64_t stream, bool stream_ordered,
                            uint64_t out_ids, uint64_t out_distances) {
  expect_cuda_search(target);
  const int64_t nq = q.rows();
  const int device = q.device_id();
  const size_t n = static_cast<size_t>(nq) * k;
  // The caller's result arrays where it gave them (out_ids: int64 labels on an index with
  // labels, which the library maps on the GPU), else arrays made here.
  const bool given = out_ids != 0 && out_distances != 0;
  const bool labels = idx.has_labels();
  device_memory ids(n * (labels ? sizeof(int64_t) : sizeof(uint32_t)), device, !given),
      distances(n * sizeof(float), device, !given);
  {
    nb::gil_scoped_release nogil;
    cagra::resources res = make_resources(target, num_threads);
    res.device = device;
    res.cuda_stream = reinterpret_cast<void*>(uintptr_t(stream));
    res.stream_ordered = stream_ordered;
    const auto dev = cagra::memory_space::device;
    void* id_p = given ? reinterpret_cast<void*>(uintptr_t(out_ids)) : ids.p;
    auto* dist_p = given ? reinterpret_cast<float*>(uintptr_t(out_distances))
                         : static_cast<float*>(distances.p);
    if (labels)
      cagra::search(res, params, idx, q.device_view(), k,
                    cagra::matrix_view<int64_t>{static_cast<int64_t*>(id_p), nq, k, dev},
                    {dist_p, nq, k, dev}, filter);
    else
      cagra::search(res, params, idx, q.device_view(), k,
                    {static_cast<uint32_t*>(id_p), nq, k, dev}, {dist_p, nq, k, dev}, filter);
  }
  if (given) return nb::none();
  nb::object d = cuda_out<float>(distances, size_t(nq), k, device, framework);
  if (labels) return nb::make_tuple(cuda_out<int64_t>(ids, size_t(nq), k, device, framework), d);
  return nb::make_tuple(cuda_out<uint32_t>(ids, size_t(nq), k, device, framework), d);
}
#endif

}  // namespace

nb::object search(const py_index& p, any_array queries, uint32_t k,
                  const cagra::search_params& params, cagra::backend target, int num_threads,
                  const std::string& framework, std::optional<filter_words_in> filter_words,
                  bool filter_per_query, std::vector<int> devices, uint64_t stream,
                  int64_t filter_count, uint64_t filter_stamp, bool stream_ordered,
                  uint64_t out_ids, uint64_t out_distances) {
  vectors_in q(std::move(queries), "queries");
  // Held for the whole call (taken without the GIL): an extend in another thread waits for it.
  std::shared_lock<std::shared_mutex> lock(p.mu, std::defer_lock);
  {
    nb::gil_scoped_release nogil;
    lock.lock();
  }
  const cagra::index& idx = p.idx;
  // Checked before the outputs are allocated: a huge k must fail, not allocate.
  params.validate(k, idx.size(), idx.graph_degree());
  // `filter_words` (held by this frame) keeps the bitset alive while the GIL is released.
  const cagra::row_filter filter =
      to_row_filter(filter_words, filter_per_query, idx.size(), filter_count, filter_stamp);
#ifdef CAGRA_PY_CUDA
  if (q.on_device()) {
    if (devices.size() > 1)
      throw cagra::error(
          "queries are a CUDA array, searched on the GPU that holds them: a devices list of " +
          std::to_string(devices.size()) + " devices takes host queries (numpy)");
    return search_on_device(idx, q, k, params, target, num_threads, framework, filter, stream,
                            stream_ordered, out_ids, out_distances);
  }
#else
  (void)framework;
  (void)stream;
#endif
  // Host queries: complete results, in the caller's arrays where it gave them (host memory,
  // [nq, k], C order: checked by python/cagra/_results.py), else in numpy arrays made here.
  (void)stream_ordered;
  const int64_t nq = q.rows();
  if (out_ids != 0 && out_distances != 0) {
    float* dist_p = reinterpret_cast<float*>(uintptr_t(out_distances));
    nb::gil_scoped_release nogil;
    cagra::resources res = make_resources(target, num_threads, std::move(devices));
    if (idx.has_labels())
      cagra::search(
          res, params, idx, q.host(), k,
          cagra::matrix_view<int64_t>{reinterpret_cast<int64_t*>(uintptr_t(out_ids)), nq, k},
          {dist_p, nq, k}, filter);
    else
      cagra::search(res, params, idx, q.host(), k,
                    {reinterpret_cast<uint32_t*>(uintptr_t(out_ids)), nq, k}, {dist_p, nq, k},
                    filter);
    return nb::none();
  }
  std::vector<float> distances(static_cast<size_t>(nq) * k);
  if (idx.has_labels()) {  // labels instead of row numbers, -1 for an empty slot
    std::vector<int64_t> labels(distances.size());
    {
      nb::gil_scoped_release nogil;
      cagra::search(make_resources(target, num_threads, devices), params, idx, q.host(), k,
                    cagra::matrix_view<int64_t>{labels.data(), nq, k}, {distances.data(), nq, k},
                    filter);
    }
    return nb::make_tuple(to_numpy(std::move(labels), nq, k),
                          to_numpy(std::move(distances), nq, k));
  }
  std::vector<uint32_t> ids(distances.size());
  {
    nb::gil_scoped_release nogil;
    cagra::search(make_resources(target, num_threads, std::move(devices)), params, idx, q.host(), k,
                  {ids.data(), nq, k}, {distances.data(), nq, k}, filter);
  }
  return nb::make_tuple(to_numpy(std::move(ids), nq, k), to_numpy(std::move(distances), nq, k));
}

nb::object search_sharded(const py_sharded& p, any_array queries, uint32_t k,
                          const cagra::search_params& params, cagra::backend target,
                          int num_threads, const std::string& framework,
                          std::optional<filter_words_in> filter_words, bool filter_per_query,
                          std::vector<int> devices, uint64_t stream, uint64_t out_ids,
                          uint64_t out_distances) {
  vectors_in q(std::move(queries), "queries");
  const cagra::sharded_index& idx = p.idx;
  // Checked before the outputs are allocated: a huge k must fail, not allocate.
  params.validate(k, idx.size(), idx.graph_degree());
  const cagra::row_filter filter = to_row_filter(filter_words, filter_per_query, idx.size());
  const int64_t nq = q.rows();
  // The caller's result arrays where it gave them (checked by python/cagra/_results.py).
  const bool given = out_ids != 0 && out_distances != 0;
  auto* given_ids = reinterpret_cast<uint32_t*>(uintptr_t(out_ids));
  auto* given_distances = reinterpret_cast<float*>(uintptr_t(out_distances));
#ifdef CAGRA_PY_CUDA
  if (q.on_device()) {
    // Results on the queries' device; the shards' devices are `devices` (none: that device).
    expect_cuda_search(target);
    const int device = q.device_id();
    const size_t n = static_cast<size_t>(nq) * k;
    device_memory ids(n * sizeof(uint32_t), device, !given),
        distances(n * sizeof(float), device, !given);
    {
      nb::gil_scoped_release nogil;
      cagra::resources res = make_resources(target, num_threads, std::move(devices));
      res.device = device;
      res.cuda_stream = reinterpret_cast<void*>(uintptr_t(stream));
      const auto dev = cagra::memory_space::device;
      cagra::search(res, params, idx, q.device_view(), k,
                    {given ? given_ids : static_cast<uint32_t*>(ids.p), nq, k, dev},
                    {given ? given_distances : static_cast<float*>(distances.p), nq, k, dev},
                    filter);
    }
    if (given) return nb::none();
    nb::object i = cuda_out<uint32_t>(ids, size_t(nq), k, device, framework);
    nb::object d = cuda_out<float>(distances, size_t(nq), k, device, framework);
    return nb::make_tuple(i, d);
  }
#else
  (void)framework;
  (void)stream;
#endif
  std::vector<uint32_t> ids(given ? 0 : static_cast<size_t>(nq) * k);
  std::vector<float> distances(ids.size());
  {
    nb::gil_scoped_release nogil;
    cagra::search(make_resources(target, num_threads, std::move(devices)), params, idx, q.host(), k,
                  {given ? given_ids : ids.data(), nq, k},
                  {given ? given_distances : distances.data(), nq, k}, filter);
  }
  if (given) return nb::none();
  return nb::make_tuple(to_numpy(std::move(ids), nq, k), to_numpy(std::move(distances), nq, k));
}

/** The search plan line (cagra::plan_search + to_string) of one call with `batch` host queries,
 *  under the filter (if any) that search would get. */
std::string explain_search(const py_index& p, uint32_t k, int64_t batch,
                           const cagra::search_params& params, cagra::backend target,
                           int num_threads, std::optional<filter_words_in> filter_words,
                           bool filter_per_query) {
  return read_locked(p, [&](const cagra::index& idx) {
    const cagra::row_filter filter = to_row_filter(filter_words, filter_per_query, idx.size());
    return cagra::to_string(cagra::plan_search(make_resources(target, num_threads), params, idx, k,
                                               batch, cagra::memory_space::host, filter));
  });
}

}  // namespace cagra_py
