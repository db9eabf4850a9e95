// The extension module `cagra._cagra`: a thin nanobind layer over include/cagra/*.hpp. It checks
// and converts arrays (any DLPack producer: numpy, cupy, torch; CUDA arrays go to the CUDA
// search in place, results come back as CUDA arrays) and parameters, releases the GIL
// around every call that does real work, and turns cagra::error into cagra.CagraError (a
// ValueError). Defaults, string options and docstrings live in python/cagra/__init__.py (and
// python/cagra/_living.py for extend / remove / compact). An Index may change (extend, remove,
// compact) while other Python threads search it: see py_index.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>
#include <cagra/plan.hpp>

#include "hnswlib_ext.hpp"

#ifdef CAGRA_PY_CUDA
#include <cuda_runtime_api.h>
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace {

/** Any array, any dtype, layout or device; read-only arrays welcome. Checked by vectors_in. */
using any_array = nb::ndarray<nb::ro>;
/** uint32 id matrices (graphs, kNN lists): python/cagra/__init__.py converts to this first. */
using ids_in = nb::ndarray<nb::ro, const uint32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using dist_in = nb::ndarray<nb::ro, const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
template <typename T>
using numpy_out = nb::ndarray<nb::numpy, T, nb::ndim<2>>;
/** Filter bitset words (cagra/filter.hpp): [words] shared or [nq, words] per query, built by
 *  python/cagra/__init__.py (_filter_words) from a boolean mask or a list of row ids. */
using filter_words_in = nb::ndarray<nb::ro, const uint32_t, nb::c_contig, nb::device::cpu>;
/** Labels: int64 [n], made by python/cagra/_living.py (labels_array) from any integer array. */
using labels_in = nb::ndarray<nb::ro, const int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

/** The extension's Index. Searches, saves and property reads may run in several Python threads
 *  at once with the GIL released, and extend / remove / compact change the index in place, so
 *  every use holds `mu`: shared to read, exclusive to change (always taken with the GIL released,
 *  so a thread that waits for it never holds up the others, and no lock holder needs the GIL).
 *  `views` counts the numpy arrays alive that alias the index's memory (the graph and vectors
 *  properties): a change that reallocates that memory (extend, compact) raises BufferError while
 *  one is, as Python's bytearray refuses to resize while its buffer is exported. */
struct py_index {
  cagra::index idx;
  mutable std::shared_mutex mu;
  mutable std::atomic<int64_t> views{0};
  explicit py_index(cagra::index i) : idx(std::move(i)) {}
};

/** f(idx) with the GIL released and the index held for reading. */
template <typename F>
auto read_locked(const py_index& p, F&& f) {
  nb::gil_scoped_release nogil;
  std::shared_lock<std::shared_mutex> lock(p.mu);
  return f(p.idx);
}

/** f(idx) with the GIL released and the index held for writing; when `reallocates(idx)` says the
 *  change would move the index's memory, raises BufferError while an array aliases it. */
template <typename R, typename F>
auto write_locked(py_index& p, const char* what, R&& reallocates, F&& f) {
  nb::gil_scoped_release nogil;
  std::unique_lock<std::shared_mutex> lock(p.mu);
  const int64_t views = p.views.load();
  if (views > 0 && reallocates(static_cast<const cagra::index&>(p.idx))) {
    const std::string msg =
        std::string(what) + " would move the index's memory, but " + std::to_string(views) +
        " array(s) from Index.graph / Index.vectors still view it: delete them (or keep copies: "
        "numpy.array(index.graph)) first";
    throw nb::buffer_error(msg.c_str());
  }
  return f(p.idx);
}

std::string format_shape(const any_array& a) {
  std::string s = "(";
  for (size_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

std::string dtype_name(nb::dlpack::dtype t) {
  using code = nb::dlpack::dtype_code;
  const char* base = "unknown";
  switch (static_cast<code>(t.code)) {
    case code::Int: base = "int"; break;
    case code::UInt: base = "uint"; break;
    case code::Float: base = "float"; break;
    case code::Bfloat: base = "bfloat"; break;
    case code::Complex: base = "complex"; break;
    case code::Bool: return "bool";
    default: break;
  }
  return base + std::to_string(t.bits);
}

/** The cagra dtype of a vector array; TypeError for anything but f32, f16, u8, i8. */
cagra::dtype vector_dtype(nb::dlpack::dtype t, const char* what) {
  using code = nb::dlpack::dtype_code;
  if (t.lanes == 1) {
    if (t.code == uint8_t(code::Float) && t.bits == 32) return cagra::dtype::f32;
    if (t.code == uint8_t(code::Float) && t.bits == 16) return cagra::dtype::f16;
    if (t.code == uint8_t(code::UInt) && t.bits == 8) return cagra::dtype::u8;
    if (t.code == uint8_t(code::Int) && t.bits == 8) return cagra::dtype::i8;
  }
  const std::string msg = std::string(what) + " has dtype " + dtype_name(t) +
                          "; cagra takes float32, float16, uint8 or int8 vectors "
                          "(convert with x.astype(numpy.float32))";
  throw nb::type_error(msg.c_str());
}

nb::dlpack::dtype to_dlpack(cagra::dtype t) {
  switch (t) {
    case cagra::dtype::f32: return nb::dtype<float>();
    case cagra::dtype::f16: return {uint8_t(nb::dlpack::dtype_code::Float), 16, 1};
    case cagra::dtype::u8: return nb::dtype<uint8_t>();
    case cagra::dtype::i8: return nb::dtype<int8_t>();
    case cagra::dtype::u32: return nb::dtype<uint32_t>();
    case cagra::dtype::i32: return nb::dtype<int32_t>();
  }
  throw std::runtime_error("unknown cagra dtype");
}

/** Device -> host copies made so far by vectors_in::host() (build, brute_force and optimize
 *  take host memory); search never makes one. Exposed as _host_copies() for the tests. */
std::atomic<int64_t> g_host_copies{0};

/** A [rows, dim] matrix of vectors handed in from Python: checked on construction (GIL held).
 *  Host arrays are used in place. CUDA arrays (only with the CUDA backend; refused otherwise)
 *  go to search in place through device_view(); host() copies them to the host for the
 *  functions that run on the CPU (build, brute_force, optimize). host() and device_view() may be
 *  called with the GIL released. */
class vectors_in {
 public:
  vectors_in(any_array a, const char* what) : array_(std::move(a)), what_(what) {
    if (array_.ndim() != 2) {
      const std::string msg = what_ + " must be a 2-D array [rows, dim], got shape " +
                              format_shape(array_) + " (one vector x: x.reshape(1, -1))";
      throw nb::value_error(msg.c_str());
    }
    const cagra::dtype t = vector_dtype(array_.dtype(), what);
    const auto rows = static_cast<int64_t>(array_.shape(0));
    const auto cols = static_cast<int64_t>(array_.shape(1));
    // Before the layout check: numpy gives an empty array strides that look non-contiguous, and
    // "not C-contiguous" would send the caller to fix the wrong thing.
    if (rows == 0 || cols == 0)
      throw cagra::error(what_ + " is empty (shape " + format_shape(array_) +
                         "): it needs at least one row and one column");
    const bool row_major =
        (rows <= 1 || array_.stride(0) == cols) && (cols <= 1 || array_.stride(1) == 1);
    if (!row_major) {
      const std::string msg = what_ +
                              " is not C-contiguous (row-major); pass "
                              "numpy.ascontiguousarray(x) (cupy.ascontiguousarray(x), "
                              "x.contiguous() for torch)";
      throw nb::value_error(msg.c_str());
    }
    const int dev = array_.device_type();
    if (dev == nb::device::cuda::value || dev == nb::device::cuda_managed::value) {
#ifndef CAGRA_PY_CUDA
      const std::string msg = what_ +
                              " is a CUDA array, but this cagra build has no CUDA backend; "
                              "pass a host array (cupy.asnumpy(x), x.cpu().numpy())";
      throw nb::value_error(msg.c_str());
#else
      on_device_ = true;
#endif
    } else if (dev != nb::device::cpu::value && dev != nb::device::cuda_host::value) {
      const std::string msg = what_ + " lives on DLPack device type " + std::to_string(dev) +
                              "; cagra takes host (CPU) arrays, or CUDA arrays";
      throw nb::value_error(msg.c_str());
    }
    view_ = cagra::dataset_view(array_.data(), t, rows, cols);
  }

  cagra::dataset_view host() {
    if (!on_device_) return view_;
#ifdef CAGRA_PY_CUDA
    if (copy_.empty()) copy_ = copy_to_host();
    return copy_.view();
#else
    return view_;
#endif
  }

  int64_t rows() const { return view_.rows; }
  bool on_device() const { return on_device_; }
  int device_id() const { return array_.device_id(); }
  /** The caller's CUDA memory as a device view (on_device() only): no copy. */
  cagra::dataset_view device_view() const {
    return {view_.data, view_.type, view_.rows, view_.cols, cagra::memory_space::device};
  }

 private:
#ifdef CAGRA_PY_CUDA
  /** Device -> host copy. The whole device is synchronized first: the producer may still be
   *  writing the array on a stream of its own, and DLPack gave us no stream to wait on. */
  cagra::host_matrix copy_to_host() const {
    cagra::host_matrix m(view_.type, view_.rows, view_.cols);
    ++g_host_copies;
    int previous = 0;
    cudaError_t e = cudaGetDevice(&previous);
    if (e != cudaSuccess)
      throw cagra::error("copying " + what_ + " from the GPU failed: " + cudaGetErrorString(e));
    e = cudaSetDevice(array_.device_id());
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess && m.size_bytes() > 0)
      e = cudaMemcpy(m.data(), view_.data, m.size_bytes(), cudaMemcpyDefault);
    cudaSetDevice(previous);
    if (e != cudaSuccess)
      throw cagra::error("copying " + what_ + " from the GPU failed: " + cudaGetErrorString(e));
    return m;
  }
#endif

  any_array array_;  // keeps the caller's memory alive
  std::string what_;
  cagra::dataset_view view_;
  bool on_device_ = false;
  cagra::host_matrix copy_;
};

/** Hands a std::vector to numpy without a copy (the capsule frees it). */
template <typename T>
numpy_out<T> to_numpy(std::vector<T>&& v, size_t rows, size_t cols) {
  auto* owner = new std::vector<T>(std::move(v));
  nb::capsule deleter(owner, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return numpy_out<T>(owner->data(), {rows, cols}, deleter);
}

/** Hands a host_matrix to numpy without a copy. */
nb::ndarray<nb::numpy, nb::ndim<2>> to_numpy(cagra::host_matrix&& m) {
  auto* owner = new cagra::host_matrix(std::move(m));
  nb::capsule deleter(owner, [](void* p) noexcept { delete static_cast<cagra::host_matrix*>(p); });
  return {owner->data(),
          {size_t(owner->rows()), size_t(owner->cols())},
          deleter,
          {},
          to_dlpack(owner->type())};
}

cagra::resources make_resources(cagra::backend target, int num_threads) {
  cagra::resources res;
  res.target = target;
  res.num_threads = num_threads;
  return res;
}

cagra::knn_graph to_knn_graph(const ids_in& ids, const dist_in* distances) {
  cagra::knn_graph g;
  g.rows = static_cast<int64_t>(ids.shape(0));
  g.k = static_cast<uint32_t>(ids.shape(1));
  g.ids.assign(ids.data(), ids.data() + ids.size());
  if (distances) g.distances.assign(distances->data(), distances->data() + distances->size());
  return g;
}

// ---- the functions the module exports ------------------------------------------------------

/** Checks `labels` for `rows` rows before any work: the count, and no label twice (the library's
 *  own check, made before a build rather than after it). */
void check_labels(const labels_in& labels, int64_t rows, const char* rows_what) {
  const auto n = static_cast<int64_t>(labels.shape(0));
  if (n != rows)
    throw cagra::error("labels has " + std::to_string(n) + " entries but " + rows_what + " has " +
                       std::to_string(rows) + " rows: give one label per row");
  std::vector<std::pair<int64_t, int64_t>> sorted(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) sorted[size_t(i)] = {labels.data()[i], i};
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 1; i < sorted.size(); ++i)
    if (sorted[i].first == sorted[i - 1].first)
      throw cagra::error("label " + std::to_string(sorted[i].first) + " is given to two rows (" +
                         std::to_string(sorted[i - 1].second) + " and " +
                         std::to_string(sorted[i].second) + "): labels must be unique");
}

std::unique_ptr<py_index> build(any_array dataset, const cagra::index_params& params,
                                cagra::backend target, int num_threads,
                                std::optional<labels_in> labels) {
  vectors_in data(std::move(dataset), "dataset");
  if (labels) check_labels(*labels, data.rows(), "the dataset");
  nb::gil_scoped_release nogil;
  cagra::index idx = cagra::build(make_resources(target, num_threads), params, data.host());
  if (labels) idx.set_labels({labels->data(), labels->data() + labels->shape(0)});
  return std::make_unique<py_index>(std::move(idx));
}

void extend(py_index& p, any_array vectors, std::optional<labels_in> labels,
            const cagra::extend_params& params, cagra::backend target, int num_threads) {
  vectors_in data(std::move(vectors), "vectors");
  if (labels) check_labels(*labels, data.rows(), "vectors");
  write_locked(
      p, "extend", [](const cagra::index&) { return true; },
      [&](cagra::index& idx) {
        cagra::extend(make_resources(target, num_threads), params, idx, data.host(),
                      labels ? labels->data() : nullptr);
      });
}

int64_t remove_rows(py_index& p, const labels_in& labels, double compact_above,
                    cagra::backend target, int num_threads) {
  const auto n = static_cast<int64_t>(labels.shape(0));
  // Only a removal that compacts moves memory (cagra::remove's rule for compact_above).
  auto compacts = [&](const cagra::index& idx) {
    return compact_above > 0 &&
           double(idx.deleted_count() + n) > compact_above * double(idx.size());
  };
  return write_locked(p, "remove (compacting)", compacts, [&](cagra::index& idx) {
    return cagra::remove(make_resources(target, num_threads), idx, labels.data(), n, compact_above);
  });
}

void compact(py_index& p, cagra::backend target, int num_threads) {
  write_locked(
      p, "compact", [](const cagra::index& idx) { return idx.deleted_count() > 0; },
      [&](cagra::index& idx) { cagra::compact(make_resources(target, num_threads), idx); });
}

/** The row_filter over `words` (none: no filter) for `idx`; the words stay owned by the caller's
 *  array. The shape is checked here against the index; the batch is checked by the library. */
cagra::row_filter to_row_filter(const std::optional<filter_words_in>& words, bool per_query,
                                const cagra::index& idx) {
  if (!words) return {};
  const int64_t rows = idx.size();
  const int64_t expected = cagra::row_filter::words_for(rows);
  const size_t want_ndim = per_query ? 2 : 1;
  if (words->ndim() != want_ndim || static_cast<int64_t>(words->shape(want_ndim - 1)) != expected)
    throw cagra::error(std::string("the filter words must be a ") + (per_query ? "[nq, " : "[") +
                       std::to_string(expected) + "] uint32 array for an index of " +
                       std::to_string(rows) + " rows (one bit per row, 32 rows a word)");
  if (per_query)
    return cagra::row_filter::per_query(words->data(), static_cast<int64_t>(words->shape(0)), rows);
  return cagra::row_filter::shared(words->data(), rows);
}

#ifdef CAGRA_PY_CUDA
/** cudaMalloc'd memory on one device, freed unless released to a capsule. */
struct device_memory {
  void* p = nullptr;
  device_memory(size_t bytes, int device) {
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

/** cudaMemcpy (either direction) that throws cagra::error naming `what`. */
void copy_cuda(void* dst, const void* src, size_t bytes, const char* what) {
  const cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    throw cagra::error(std::string("copying ") + what + " failed: " + cudaGetErrorString(e));
  }
}

/** Search of CUDA queries: the results are allocated on the queries' device and written there by
 *  the CUDA backend, which reads the queries in place; no host copy of the queries either way
 *  (an index with labels copies the result ids over and back: see below). */

nb::tuple search_on_device(const cagra::index& idx, vectors_in& q, uint32_t k,
                           const cagra::search_params& params, cagra::backend target,
                           int num_threads, const std::string& framework,
                           const cagra::row_filter& filter) {
  if (target == cagra::backend::cpu)
    throw cagra::error(
        "queries are a CUDA array, but backend='cpu' was asked for: device memory needs the "
        "CUDA backend (use backend='cuda' or 'auto', or pass a host array)");
  if (!cagra::cuda_available())
    throw cagra::error(
        "queries are a CUDA array, but no CUDA device is visible: device memory needs the "
        "CUDA backend and a GPU");
  const int64_t nq = q.rows();
  const int device = q.device_id();
  const size_t n = static_cast<size_t>(nq) * k;
  device_memory ids(n * sizeof(uint32_t), device), distances(n * sizeof(float), device);
  {
    nb::gil_scoped_release nogil;
    cagra::resources res = make_resources(target, num_threads);
    res.device = device;
    const auto dev = cagra::memory_space::device;
    cagra::search(res, params, idx, q.device_view(), k, {static_cast<uint32_t*>(ids.p), nq, k, dev},
                  {static_cast<float*>(distances.p), nq, k, dev}, filter);
  }
  if (idx.has_labels()) {
    // The library maps rows to labels in host memory only: the ids come over, become labels (-1
    // for an empty slot) and go back to the queries' device.
    device_memory labels(n * sizeof(int64_t), device);
    {
      nb::gil_scoped_release nogil;
      std::vector<uint32_t> host_ids(n);
      copy_cuda(host_ids.data(), ids.p, n * sizeof(uint32_t), "the result ids from the GPU");
      std::vector<int64_t> host_labels(n);
      for (size_t i = 0; i < n; ++i)
        host_labels[i] = host_ids[i] == cagra::kInvalidId ? -1 : idx.label_of(host_ids[i]);
      copy_cuda(labels.p, host_labels.data(), n * sizeof(int64_t), "the result labels to the GPU");
    }
    nb::object l = cuda_out<int64_t>(labels, size_t(nq), k, device, framework);
    nb::object d = cuda_out<float>(distances, size_t(nq), k, device, framework);
    return nb::make_tuple(l, d);
  }
  nb::object i = cuda_out<uint32_t>(ids, size_t(nq), k, device, framework);
  nb::object d = cuda_out<float>(distances, size_t(nq), k, device, framework);
  return nb::make_tuple(i, d);
}
#endif

nb::tuple search(const py_index& p, any_array queries, uint32_t k,
                 const cagra::search_params& params, cagra::backend target, int num_threads,
                 const std::string& framework, std::optional<filter_words_in> filter_words,
                 bool filter_per_query) {
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
  const cagra::row_filter filter = to_row_filter(filter_words, filter_per_query, idx);
#ifdef CAGRA_PY_CUDA
  if (q.on_device())
    return search_on_device(idx, q, k, params, target, num_threads, framework, filter);
#else
  (void)framework;
#endif
  const int64_t nq = q.rows();
  std::vector<float> distances(static_cast<size_t>(nq) * k);
  if (idx.has_labels()) {  // labels instead of row numbers, -1 for an empty slot
    std::vector<int64_t> labels(distances.size());
    {
      nb::gil_scoped_release nogil;
      cagra::search(make_resources(target, num_threads), params, idx, q.host(), k,
                    cagra::matrix_view<int64_t>{labels.data(), nq, k}, {distances.data(), nq, k},
                    filter);
    }
    return nb::make_tuple(to_numpy(std::move(labels), nq, k),
                          to_numpy(std::move(distances), nq, k));
  }
  std::vector<uint32_t> ids(distances.size());
  {
    nb::gil_scoped_release nogil;
    cagra::search(make_resources(target, num_threads), params, idx, q.host(), k,
                  {ids.data(), nq, k}, {distances.data(), nq, k}, filter);
  }
  return nb::make_tuple(to_numpy(std::move(ids), nq, k), to_numpy(std::move(distances), nq, k));
}

nb::tuple build_knn_graph(any_array dataset, const cagra::index_params& params,
                          cagra::backend target, int num_threads) {
  vectors_in data(std::move(dataset), "dataset");
  cagra::knn_graph g;
  {
    nb::gil_scoped_release nogil;
    g = cagra::build_knn_graph(make_resources(target, num_threads), params, data.host());
  }
  return nb::make_tuple(to_numpy(std::move(g.ids), g.rows, g.k),
                        to_numpy(std::move(g.distances), g.rows, g.k));
}

numpy_out<uint32_t> optimize(const ids_in& knn_ids, std::optional<dist_in> knn_distances,
                             uint32_t graph_degree, cagra::reorder_kind reorder,
                             std::optional<any_array> dataset, cagra::metric metric,
                             cagra::backend target, int num_threads) {
  if (knn_distances &&
      (knn_distances->shape(0) != knn_ids.shape(0) || knn_distances->shape(1) != knn_ids.shape(1)))
    throw nb::value_error("knn_distances must have the shape of knn_ids");
  std::optional<vectors_in> data;
  if (dataset) data.emplace(std::move(*dataset), "dataset");
  const int64_t rows = static_cast<int64_t>(knn_ids.shape(0));
  std::vector<uint32_t> graph;
  {
    nb::gil_scoped_release nogil;
    const cagra::knn_graph g = to_knn_graph(knn_ids, knn_distances ? &*knn_distances : nullptr);
    graph = cagra::optimize(make_resources(target, num_threads), g, graph_degree, reorder,
                            data ? data->host() : cagra::dataset_view{}, metric);
  }
  return to_numpy(std::move(graph), rows, graph_degree);
}

nb::dict analyze(const ids_in& graph, int64_t two_hop_samples, int num_threads) {
  cagra::graph_stats s;
  {
    nb::gil_scoped_release nogil;
    const cagra::matrix_view<const uint32_t> g{graph.data(), static_cast<int64_t>(graph.shape(0)),
                                               static_cast<int64_t>(graph.shape(1))};
    s = cagra::analyze(make_resources(cagra::backend::cpu, num_threads), g, two_hop_samples);
  }
  nb::dict d;
  d["nodes"] = s.nodes;
  d["degree"] = s.degree;
  d["avg_two_hop"] = s.avg_two_hop;
  d["strong_components"] = s.strong_components;
  d["weak_components"] = s.weak_components;
  d["invalid_edges"] = s.invalid_edges;
  d["self_loops"] = s.self_loops;
  d["duplicate_edges"] = s.duplicate_edges;
  d["two_hop_samples"] = s.two_hop_samples;
  return d;
}

nb::tuple brute_force(any_array dataset, any_array queries, uint32_t k, cagra::metric metric,
                      bool exclude_self, cagra::backend target, int num_threads) {
  vectors_in data(std::move(dataset), "dataset");
  vectors_in q(std::move(queries), "queries");
  cagra::knn_graph g;
  {
    nb::gil_scoped_release nogil;
    g = cagra::brute_force_knn(make_resources(target, num_threads), metric, data.host(), q.host(),
                               k, exclude_self);
  }
  return nb::make_tuple(to_numpy(std::move(g.ids), g.rows, g.k),
                        to_numpy(std::move(g.distances), g.rows, g.k));
}

/** The build plan line (cagra::plan_build + to_string) for `rows` vectors of `dtype` ("f32",
 *  "f16", "u8" or "i8": the names python/cagra/__init__.py maps numpy dtypes to). */
std::string explain_build(int64_t rows, const std::string& dtype, const cagra::index_params& params,
                          cagra::backend target, int num_threads) {
  cagra::dtype t;
  if (dtype == "f32")
    t = cagra::dtype::f32;
  else if (dtype == "f16")
    t = cagra::dtype::f16;
  else if (dtype == "u8")
    t = cagra::dtype::u8;
  else if (dtype == "i8")
    t = cagra::dtype::i8;
  else
    throw nb::value_error(("unknown vector dtype '" + dtype + "'").c_str());
  return cagra::to_string(cagra::plan_build(make_resources(target, num_threads), params, rows, t));
}

/** The search plan line (cagra::plan_search + to_string) of one call with `batch` host queries,
 *  under the filter (if any) that search would get. */
std::string explain_search(const py_index& p, uint32_t k, int64_t batch,
                           const cagra::search_params& params, cagra::backend target,
                           int num_threads, std::optional<filter_words_in> filter_words,
                           bool filter_per_query) {
  return read_locked(p, [&](const cagra::index& idx) {
    const cagra::row_filter filter = to_row_filter(filter_words, filter_per_query, idx);
    return cagra::to_string(cagra::plan_search(make_resources(target, num_threads), params, idx, k,
                                               batch, cagra::memory_space::host, filter));
  });
}

/** The owner of a numpy view of the index's memory (graph or vectors): keeps the Index alive,
 *  and takes back the count in p.views (which the caller took under the lock) when it dies. */
nb::capsule view_owner(nb::handle self) {
  struct owner {
    nb::object self;
    py_index* p;
  };
  auto& p = nb::cast<py_index&>(self);
  auto* o = new (std::nothrow) owner{nb::borrow(self), &p};
  if (o == nullptr) {
    --p.views;
    throw std::bad_alloc();
  }
  nb::capsule keep;
  try {
    keep = nb::capsule(o, [](void* v) noexcept {
      auto* w = static_cast<owner*>(v);
      --w->p->views;
      delete w;  // drops the reference to the Index (the capsule dies with the GIL held)
    });
  } catch (...) {
    --p.views;
    delete o;
    throw;
  }
  return keep;
}

nb::tuple read_neighbors(const std::string& path) {
  cagra::io::neighbors_file f;
  {
    nb::gil_scoped_release nogil;
    f = cagra::io::read_neighbors(path);
  }
  nb::object distances = nb::none();
  if (!f.distances.empty()) distances = nb::cast(to_numpy(std::move(f.distances)));
  return nb::make_tuple(to_numpy(std::move(f.ids)), distances);
}

}  // namespace

NB_MODULE(_cagra, m) {
  m.doc() = "Binding of the cagra C++ library; use the `cagra` package, not this module.";
  nb::exception<cagra::error> cagra_error(m, "CagraError", PyExc_ValueError);
  // nb::exception's translator sets the message with PyErr_SetString, which decodes strictly: a
  // byte that is not UTF-8 would raise UnicodeDecodeError instead of CagraError. The library
  // escapes the file bytes it quotes, so its messages are ASCII; should one still hold such a
  // byte, this translator (registered later, so tried first) shows it as \xNN.
  nb::register_exception_translator(
      [](const std::exception_ptr& p, void* type) {
        try {
          std::rethrow_exception(p);
        } catch (const cagra::error& e) {
          const std::string what = e.what();
          PyObject* msg =
              PyUnicode_DecodeUTF8(what.data(), Py_ssize_t(what.size()), "backslashreplace");
          if (msg == nullptr) {  // cannot happen with backslashreplace; never lose the error
            PyErr_Clear();
            msg = PyUnicode_FromString("cagra error (message not decodable)");
          }
          PyErr_SetObject(static_cast<PyObject*>(type), msg);
          Py_XDECREF(msg);
        }
      },
      cagra_error.ptr());
  m.attr("built_with_cuda") =
#ifdef CAGRA_PY_CUDA
      true;
#else
      false;
#endif

  nb::enum_<cagra::metric>(m, "Metric")
      .value("l2", cagra::metric::l2)
      .value("inner_product", cagra::metric::inner_product)
      .value("cosine", cagra::metric::cosine);
  nb::enum_<cagra::backend>(m, "Backend")
      .value("auto", cagra::backend::automatic)
      .value("cpu", cagra::backend::cpu)
      .value("cuda", cagra::backend::cuda);
  nb::enum_<cagra::knn_algo>(m, "KnnAlgo")
      .value("auto", cagra::knn_algo::automatic)
      .value("nn_descent", cagra::knn_algo::nn_descent)
      .value("brute_force", cagra::knn_algo::brute_force);
  nb::enum_<cagra::reorder_kind>(m, "Reorder")
      .value("rank", cagra::reorder_kind::rank)
      .value("distance", cagra::reorder_kind::distance);
  nb::enum_<cagra::storage_type>(m, "Storage")
      .value("same", cagra::storage_type::same_as_input)
      .value("f32", cagra::storage_type::f32)
      .value("f16", cagra::storage_type::f16);
  nb::enum_<cagra::search_algo>(m, "SearchAlgo")
      .value("auto", cagra::search_algo::automatic)
      .value("single_cta", cagra::search_algo::single_cta)
      .value("multi_cta", cagra::search_algo::multi_cta);
  nb::enum_<cagra::filter_algo>(m, "FilterAlgo")
      .value("auto", cagra::filter_algo::automatic)
      .value("graph", cagra::filter_algo::graph)
      .value("exact", cagra::filter_algo::exact);
  m.attr("INVALID_ID") = cagra::kInvalidId;

  // The parameter structs, default-constructed: their fields are the C++ defaults that
  // python/cagra/__init__.py uses as its keyword defaults.
  using ip = cagra::index_params;
  nb::class_<ip>(m, "IndexParams")
      .def(nb::init<>())
      .def_rw("metric", &ip::metric)
      .def_rw("graph_degree", &ip::graph_degree)
      .def_rw("intermediate_graph_degree", &ip::intermediate_graph_degree)
      .def_prop_rw(
          "knn_algo", [](const ip& p) { return p.knn.algo; },
          [](ip& p, cagra::knn_algo v) { p.knn.algo = v; })
      .def_prop_rw(
          "knn_max_iterations", [](const ip& p) { return p.knn.max_iterations; },
          [](ip& p, uint32_t v) { p.knn.max_iterations = v; })
      .def_prop_rw(
          "knn_termination_threshold", [](const ip& p) { return p.knn.termination_threshold; },
          [](ip& p, float v) { p.knn.termination_threshold = v; })
      .def_prop_rw(
          "knn_sample_rate", [](const ip& p) { return p.knn.sample_rate; },
          [](ip& p, float v) { p.knn.sample_rate = v; })
      .def_rw("reorder", &ip::reorder)
      .def_rw("storage", &ip::storage)
      .def_rw("seed", &ip::seed);
  using sp = cagra::search_params;
  nb::class_<sp>(m, "SearchParams")
      .def(nb::init<>())
      .def_rw("itopk_size", &sp::itopk_size)
      .def_rw("search_width", &sp::search_width)
      .def_rw("max_iterations", &sp::max_iterations)
      .def_rw("min_iterations", &sp::min_iterations)
      .def_rw("team_size", &sp::team_size)
      .def_rw("algo", &sp::algo)
      .def_rw("hash_bits", &sp::hash_bits)
      .def_rw("hash_reset_interval", &sp::hash_reset_interval)
      .def_rw("persistent", &sp::persistent)
      .def_rw("num_random_samplings", &sp::num_random_samplings)
      .def_rw("seed", &sp::seed)
      .def_rw("filter", &sp::filter);

  using ep = cagra::extend_params;
  nb::class_<ep>(m, "ExtendParams")
      .def(nb::init<>())
      .def_rw("chunk_size", &ep::chunk_size)
      .def_rw("candidates", &ep::candidates)
      .def_rw("itopk_size", &ep::itopk_size);

  // Every property reads under the index's lock (py_index).
  const auto prop = [](auto get) {
    return [get](const py_index& p) { return read_locked(p, get); };
  };
  nb::class_<py_index>(m, "Index")
      .def_prop_ro("size", prop([](const cagra::index& i) { return i.size(); }))
      .def_prop_ro("dim", prop([](const cagra::index& i) { return i.dim(); }))
      .def_prop_ro("graph_degree", prop([](const cagra::index& i) { return i.graph_degree(); }))
      .def_prop_ro("metric", prop([](const cagra::index& i) { return i.metric(); }))
      .def_prop_ro("dtype", prop([](const cagra::index& i) {
                     return std::string(to_string(i.storage_dtype()));
                   }))
      .def_prop_ro("deleted_count", prop([](const cagra::index& i) { return i.deleted_count(); }))
      .def_prop_ro("live_size", prop([](const cagra::index& i) { return i.live_size(); }))
      // A copy (None without labels): labels change with extend and compact.
      .def_prop_ro(
          "labels",
          [](const py_index& p) -> std::optional<nb::ndarray<nb::numpy, int64_t>> {
            std::vector<int64_t> labels =
                read_locked(p, [](const cagra::index& i) { return i.labels(); });
            if (labels.empty()) return std::nullopt;
            auto* owner = new std::vector<int64_t>(std::move(labels));
            nb::capsule deleter(
                owner, [](void* v) noexcept { delete static_cast<std::vector<int64_t>*>(v); });
            return nb::ndarray<nb::numpy, int64_t>(owner->data(), {owner->size()}, deleter);
          },
          nb::rv_policy::reference)  // the arrays own their memory (capsules)
      // Read-only views into the index, no copies; they keep the Index alive, and extend and
      // compact raise BufferError while one does (py_index::views).
      .def_prop_ro(
          "graph",
          [](nb::handle self) {
            const auto& p = nb::cast<const py_index&>(self);
            struct shape {
              const void* data;
              size_t rows, cols;
            };
            const shape s = read_locked(p, [&](const cagra::index& i) {
              ++p.views;
              return shape{i.graph().data, size_t(i.size()), size_t(i.graph_degree())};
            });
            return nb::ndarray<nb::numpy, const uint32_t, nb::ndim<2>>(s.data, {s.rows, s.cols},
                                                                       view_owner(self));
          },
          nb::rv_policy::reference)
      .def_prop_ro(
          "vectors",
          [](nb::handle self) {
            const auto& p = nb::cast<const py_index&>(self);
            struct shape {
              const void* data;
              size_t rows, cols;
              cagra::dtype type;
            };
            const shape s = read_locked(p, [&](const cagra::index& i) {
              ++p.views;
              return shape{i.vectors().data(), size_t(i.size()), size_t(i.dim()),
                           i.storage_dtype()};
            });
            return nb::ndarray<nb::numpy, nb::ro, nb::ndim<2>>(
                s.data, {s.rows, s.cols}, view_owner(self), {}, to_dlpack(s.type));
          },
          nb::rv_policy::reference);

  m.def("build", &build, "dataset"_a, "params"_a, "backend"_a, "num_threads"_a,
        "labels"_a.none() = nb::none());
  m.def("extend", &extend, "index"_a, "vectors"_a, "labels"_a.none(), "params"_a, "backend"_a,
        "num_threads"_a);
  m.def("remove", &remove_rows, "index"_a, "labels"_a, "compact_above"_a, "backend"_a,
        "num_threads"_a);
  m.def("compact", &compact, "index"_a, "backend"_a, "num_threads"_a);
  m.def("search", &search, "index"_a, "queries"_a, "k"_a, "params"_a, "backend"_a, "num_threads"_a,
        "framework"_a = "", "filter_words"_a.none() = nb::none(), "filter_per_query"_a = false);
  m.def("explain_build", &explain_build, "rows"_a, "dtype"_a, "params"_a, "backend"_a,
        "num_threads"_a);
  m.def("explain_search", &explain_search, "index"_a, "k"_a, "batch"_a, "params"_a, "backend"_a,
        "num_threads"_a, "filter_words"_a.none() = nb::none(), "filter_per_query"_a = false);
  m.def(
      "_raise_error",
      [](const nb::bytes& what) { throw cagra::error(std::string(what.c_str(), what.size())); },
      "what"_a,
      "Raises CagraError with these bytes as the message (the tests' check of the "
      "message translation).");
  m.def(
      "_host_copies", [] { return g_host_copies.load(); },
      "Device -> host copies of CUDA arrays made so far (build, brute_force, optimize; never "
      "search).");
  m.def("build_knn_graph", &build_knn_graph, "dataset"_a, "params"_a, "backend"_a, "num_threads"_a);
  m.def("optimize", &optimize, "knn_ids"_a, "knn_distances"_a.none(), "graph_degree"_a, "reorder"_a,
        "dataset"_a.none(), "metric"_a, "backend"_a, "num_threads"_a);
  m.def("analyze", &analyze, "graph"_a, "two_hop_samples"_a, "num_threads"_a);
  m.def("brute_force", &brute_force, "dataset"_a, "queries"_a, "k"_a, "metric"_a, "exclude_self"_a,
        "backend"_a, "num_threads"_a);
  m.def(
      "save",
      [](const py_index& p, const std::string& path) {
        read_locked(p, [&](const cagra::index& idx) { cagra::save(idx, path); });
      },
      "index"_a, "path"_a);
  m.def(
      "load",
      [](const std::string& path) {
        nb::gil_scoped_release nogil;
        return std::make_unique<py_index>(cagra::load(path));
      },
      "path"_a);
  m.def(
      "read_matrix",
      [](const std::string& path) {
        cagra::host_matrix mat;
        {
          nb::gil_scoped_release nogil;
          mat = cagra::io::read_matrix(path);
        }
        return to_numpy(std::move(mat));
      },
      "path"_a);
  m.def("read_neighbors", &read_neighbors, "path"_a);
  m.def(
      "recall",
      [](const ids_in& found, const ids_in& truth, uint32_t k) {
        const auto view = [](const ids_in& a) {
          return cagra::matrix_view<const uint32_t>{a.data(), int64_t(a.shape(0)),
                                                    int64_t(a.shape(1))};
        };
        return cagra::recall(view(found), view(truth), k);
      },
      "found"_a, "truth"_a, "k"_a);
  m.def("version", &cagra::version);
  m.def("cuda_available", &cagra::cuda_available);
  m.def(
      "search_backend",
      [](cagra::backend target) { return cagra::search_backend(make_resources(target, 0)); },
      "backend"_a);
  m.def("cuda_device_name", &cagra::cuda_device_name, "device"_a);
  bind_hnswlib(m, [](nb::handle h, const std::function<void(const cagra::index&)>& f) {
    read_locked(nb::cast<const py_index&>(h), f);
  });
}
