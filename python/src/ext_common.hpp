// What the source files of the extension `cagra._cagra` share: the array types it takes, the
// Index it hands out (py_index, with the lock every use holds), the checked vector input
// (vectors_in), numpy outputs that take over C++ memory, and the functions each file defines for
// the module table in cagra_ext.cpp. Internal to python/src; the extension includes only public
// headers of the library (scripts/check-includes.sh).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
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
#include <nanobind/stl/vector.h>

#include <cagra/cagra.hpp>
#include <cagra/multi_gpu.hpp>

namespace cagra_py {

namespace nb = nanobind;

/** Any array, any dtype, layout or device; read-only arrays welcome. Checked by vectors_in. */
using any_array = nb::ndarray<nb::ro>;
/** uint32 id matrices (graphs, kNN lists): python/cagra/_arrays.py converts to this first. */
using ids_in = nb::ndarray<nb::ro, const uint32_t, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
using dist_in = nb::ndarray<nb::ro, const float, nb::ndim<2>, nb::c_contig, nb::device::cpu>;
template <typename T>
using numpy_out = nb::ndarray<nb::numpy, T, nb::ndim<2>>;
/** Filter bitset words (cagra/filter.hpp): [words] shared or [nq, words] per query, built by
 *  python/cagra/_filter.py (_filter_words) from a boolean mask or a list of row ids. */
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

/** The extension's ShardedIndex (cagra::sharded_index): nothing changes it after it is made, so
 *  searches, saves and property reads share it without a lock. */
struct py_sharded {
  cagra::sharded_index idx;
  explicit py_sharded(cagra::sharded_index i) : idx(std::move(i)) {}
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

/** The DLPack dtype of a cagra dtype (numpy arrays over index or file memory). */
nb::dlpack::dtype to_dlpack(cagra::dtype t);

/** Device -> host copies made so far by vectors_in::host() (build, brute_force and optimize
 *  take host memory); search never makes one. Exposed as _host_copies() for the tests. */
extern std::atomic<int64_t> g_host_copies;

/** A [rows, dim] matrix of vectors handed in from Python: checked on construction (GIL held).
 *  Host arrays are used in place. CUDA arrays (only with the CUDA backend; refused otherwise)
 *  go to search in place through device_view(); host() copies them to the host for the
 *  functions that run on the CPU (build, brute_force, optimize). host() and device_view() may be
 *  called with the GIL released. Defined in arrays.cpp. */
class vectors_in {
 public:
  vectors_in(any_array a, const char* what);

  cagra::dataset_view host();
  int64_t rows() const { return view_.rows; }
  bool on_device() const { return on_device_; }
  int device_id() const { return array_.device_id(); }
  /** The caller's CUDA memory as a device view (on_device() only): no copy. */
  cagra::dataset_view device_view() const {
    return {view_.data, view_.type, view_.rows, view_.cols, cagra::memory_space::device};
  }

 private:
#ifdef CAGRA_PY_CUDA
  cagra::host_matrix copy_to_host() const;
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
nb::ndarray<nb::numpy, nb::ndim<2>> to_numpy(cagra::host_matrix&& m);

inline cagra::resources make_resources(cagra::backend target, int num_threads,
                                       std::vector<int> devices = {}) {
  cagra::resources res;
  res.target = target;
  res.num_threads = num_threads;
  res.devices = std::move(devices);
  return res;
}

// ---- what the module table in cagra_ext.cpp binds, by file ---------------------------------

// params_ext.cpp: the enums and parameter structs.
void bind_enums(nb::module_& m);
void bind_params(nb::module_& m);

// index_ext.cpp: the Index class (properties, zero-copy views), save and load.
void bind_index_class(nb::module_& m);
void save(const py_index& p, const std::string& path);
std::unique_ptr<py_index> load(const std::string& path);

// build_ext.cpp: build and its two stages, brute force, graph analysis, the build plan.
std::unique_ptr<py_index> build(any_array dataset, const cagra::index_params& params,
                                cagra::backend target, int num_threads,
                                std::optional<labels_in> labels, std::vector<int> devices);
nb::tuple build_knn_graph(any_array dataset, const cagra::index_params& params,
                          cagra::backend target, int num_threads);
numpy_out<uint32_t> optimize(const ids_in& knn_ids, std::optional<dist_in> knn_distances,
                             uint32_t graph_degree, cagra::reorder_kind reorder,
                             std::optional<any_array> dataset, cagra::metric metric,
                             cagra::backend target, int num_threads);
nb::dict analyze(const ids_in& graph, int64_t two_hop_samples, int num_threads);
nb::tuple brute_force(any_array dataset, any_array queries, uint32_t k, cagra::metric metric,
                      bool exclude_self, cagra::backend target, int num_threads);
std::string explain_build(int64_t rows, int64_t dim, const std::string& dtype,
                          const cagra::index_params& params, cagra::backend target,
                          int num_threads);
/** Checks `labels` for `rows` rows before any work (count, uniqueness); living_ext.cpp too. */
void check_labels(const labels_in& labels, int64_t rows, const char* rows_what);

// living_ext.cpp: extend, remove, compact.
void extend(py_index& p, any_array vectors, std::optional<labels_in> labels,
            const cagra::extend_params& params, cagra::backend target, int num_threads);
int64_t remove_rows(py_index& p, const labels_in& labels, double compact_above,
                    cagra::backend target, int num_threads);
void compact(py_index& p, cagra::backend target, int num_threads);

// search_ext.cpp: search (host and CUDA queries, filters) and the search plan.
// CUDA queries: `out_ids` / `out_distances` (device pointers, 0: none) are [nq, k] uint32 /
// float32 results that the caller allocated on the queries' device (Python allocates them with
// the queries' framework): written in place, and None returned, unless the index has labels.
nb::object search(const py_index& p, any_array queries, uint32_t k,
                  const cagra::search_params& params, cagra::backend target, int num_threads,
                  const std::string& framework, std::optional<filter_words_in> filter_words,
                  bool filter_per_query, std::vector<int> devices, uint64_t stream,
                  int64_t filter_count, uint64_t filter_stamp, bool stream_ordered,
                  uint64_t out_ids, uint64_t out_distances);
nb::object search_sharded(const py_sharded& p, any_array queries, uint32_t k,
                          const cagra::search_params& params, cagra::backend target,
                          int num_threads, const std::string& framework,
                          std::optional<filter_words_in> filter_words, bool filter_per_query,
                          std::vector<int> devices, uint64_t stream, uint64_t out_ids,
                          uint64_t out_distances);
std::string explain_search(const py_index& p, uint32_t k, int64_t batch,
                           const cagra::search_params& params, cagra::backend target,
                           int num_threads, std::optional<filter_words_in> filter_words,
                           bool filter_per_query);

// multi_gpu_ext.cpp: the ShardedIndex class, build_sharded, its save and load.
void bind_sharded_class(nb::module_& m);
std::unique_ptr<py_sharded> build_sharded(any_array dataset, const cagra::index_params& params,
                                          cagra::backend target, int num_threads, uint32_t shards,
                                          std::vector<int> devices, std::string checkpoint);
void save_sharded(const py_sharded& p, const std::string& path);
std::unique_ptr<py_sharded> load_sharded(const std::string& path);

// io_ext.cpp: vector and neighbor files, recall.
nb::ndarray<nb::numpy, nb::ndim<2>> read_matrix(const std::string& path);
nb::tuple read_neighbors(const std::string& path);
double recall(const ids_in& found, const ids_in& truth, uint32_t k);

}  // namespace cagra_py
