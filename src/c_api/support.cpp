// The C interface's errors, library facts and parameters (include/cagra/c_api.h): the thread's
// last error text, status names, version, the *_params_default initializers, and the checked
// conversion of the C structs into cagra/params.hpp's. Defaults come from the C++ structs
// themselves, so the two interfaces cannot drift apart.
#include <cstddef>
#include <cstring>

#include "c_api/support.hpp"

// The layout rules c_api.h states for cagra_resources_t: fields only appended (the first three
// at their old offsets), and each params struct ending with its resources, so that fields added
// to a params struct go after them. A change that breaks these is an ABI change: see c_api.h.
static_assert(offsetof(cagra_resources_t, backend) == 0 &&
                  offsetof(cagra_resources_t, num_threads) == 4 &&
                  offsetof(cagra_resources_t, device) == 8 &&
                  offsetof(cagra_resources_t, num_devices) == 12,
              "cagra_resources_t: fields may only be appended");
static_assert(sizeof(void*) != 8 ||
                  (offsetof(cagra_resources_t, devices) == 16 && sizeof(cagra_resources_t) == 24),
              "cagra_resources_t: 24 bytes on 64-bit targets (c_api.h says so)");
static_assert(offsetof(cagra_build_params_t, resources) + sizeof(cagra_resources_t) ==
                      offsetof(cagra_build_params_t, max_device_memory) &&
                  offsetof(cagra_build_params_t, max_device_memory) + 8 ==
                      offsetof(cagra_build_params_t, knn_partition_rows) &&
                  offsetof(cagra_build_params_t, knn_partition_rows) + 8 ==
                      offsetof(cagra_build_params_t, knn_checkpoint_dir) &&
                  offsetof(cagra_search_params_t, resources) + sizeof(cagra_resources_t) ==
                      offsetof(cagra_search_params_t, traversal) &&
                  offsetof(cagra_extend_params_t, resources) + sizeof(cagra_resources_t) ==
                      sizeof(cagra_extend_params_t),
              "each params struct ends with its cagra_resources_t (new fields after it)");
static_assert(
    offsetof(cagra_search_params_t, traversal) + 4 == offsetof(cagra_search_params_t, rerank) &&
        offsetof(cagra_search_params_t, rerank) + 4 ==
            offsetof(cagra_search_params_t, persistent_lifetime_us) &&
        (sizeof(void*) != 8 ||
         (offsetof(cagra_search_params_t, persistent_lifetime_us) + 8 ==
              offsetof(cagra_search_params_t, cuda_stream) &&
          offsetof(cagra_search_params_t, cuda_stream) + 8 ==
              offsetof(cagra_search_params_t, stored_rows) &&
          offsetof(cagra_search_params_t, stored_rows) + 4 ==
              offsetof(cagra_search_params_t, stream_ordered) &&
          offsetof(cagra_search_params_t, stored_rows) + 8 == sizeof(cagra_search_params_t))),
    "cagra_search_params_t: traversal, rerank, persistent_lifetime_us (then 4 bytes of "
    "padding on 64-bit targets), cuda_stream, stored_rows and stream_ordered (in what was "
    "stored_rows' padding) appended after resources");

namespace cagra::c_api {
namespace {

thread_local std::string last_error_text;
/** Set when recording a message itself ran out of memory (last_error_text is then stale). */
thread_local const char* last_error_fallback = nullptr;

/** Whether `e` is one of the values 0 .. last of its C enum (a C caller may pass any int). */
template <typename E>
bool enum_in(E e, E last) {
  const long long v = static_cast<long long>(e);
  return v >= 0 && v <= static_cast<long long>(last);
}

bool starts_with(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

backend to_backend(cagra_backend_t b, const char* function) {
  require(enum_in(b, CAGRA_BACKEND_CUDA), function, "backend is not a cagra_backend_t value");
  return static_cast<backend>(b);
}

}  // namespace

void require_cuda_for_device(cagra::memory_space space, const char* function,
                             const char* host_function) {
  if (space == cagra::memory_space::device && !cagra::cuda_available())
    throw status_error(CAGRA_ERROR_UNSUPPORTED,
                       std::string(function) +
                           ": device pointers need the CUDA backend and a GPU, but no CUDA "
                           "device is usable (this build has no CUDA backend, or no GPU is "
                           "visible): search host memory with " +
                           host_function);
}

cagra_status_t fail(cagra_status_t status, const char* message) noexcept {
  try {
    last_error_text = message;
    last_error_fallback = nullptr;
  } catch (...) {
    last_error_fallback = "out of host memory (while recording the error message)";
  }
  return status;
}

cagra_status_t status_of(const cagra::error& e, cagra_status_t fallback) noexcept {
  const char* m = e.what();
  if (starts_with(m, "CUDA error in ") || starts_with(m, "cuBLAS error in "))
    return CAGRA_ERROR_CUDA;
  if (starts_with(m, "out of device memory")) return CAGRA_ERROR_OUT_OF_MEMORY;
  if (std::strstr(m, "this build has no CUDA backend") != nullptr ||
      std::strstr(m, "no CUDA device is visible") != nullptr)
    return CAGRA_ERROR_UNSUPPORTED;
  return fallback;
}

dtype to_dtype(cagra_dtype_t t, const char* function) {
  require(enum_in(t, CAGRA_DTYPE_I8), function,
          "dtype is not a cagra_dtype_t value (f32, f16, u8 or i8)");
  return static_cast<dtype>(t);
}

resources to_resources(const cagra_resources_t* r, const char* function) {
  resources res;
  if (r == nullptr) return res;
  res.target = to_backend(r->backend, function);
  res.num_threads = r->num_threads;
  res.device = r->device;
  // The list is checked here, before any work, with the C field names (cagra::devices_of makes
  // the same checks, but its messages name resources::devices).
  require(r->num_devices >= 0, function, "resources.num_devices must be >= 0");
  require(r->num_devices == 0 || r->devices != nullptr, function,
          "resources.devices is NULL but resources.num_devices is above 0");
  for (int32_t i = 0; i < r->num_devices; ++i) {
    const int32_t d = r->devices[i];
    if (d < 0)
      throw status_error(CAGRA_ERROR_INVALID_ARGUMENT,
                         std::string(function) + ": resources.devices[" + std::to_string(i) +
                             "] is " + std::to_string(d) + " (device ordinals are >= 0)");
    for (int32_t j = 0; j < i; ++j)
      if (r->devices[j] == d)
        throw status_error(CAGRA_ERROR_INVALID_ARGUMENT,
                           std::string(function) + ": resources.devices lists device " +
                               std::to_string(d) + " twice (at " + std::to_string(j) + " and " +
                               std::to_string(i) + "; each device may appear once)");
  }
  res.devices.assign(r->devices, r->devices + r->num_devices);
  if (res.target == backend::cuda && !cuda_available())
    throw status_error(CAGRA_ERROR_UNSUPPORTED,
                       std::string(function) +
                           ": backend CAGRA_BACKEND_CUDA was asked for, but no CUDA device is "
                           "usable (this build has no CUDA backend, or no GPU is visible)");
  return res;
}

index_params to_index_params(const cagra_build_params_t* p) {
  index_params ip;
  if (p == nullptr) return ip;
  const char* f = "cagra_index_build";
  require(enum_in(p->metric, CAGRA_METRIC_COSINE), f,
          "params->metric is not a cagra_metric_t value");
  require(enum_in(p->knn_algo, CAGRA_KNN_BRUTE_FORCE), f,
          "params->knn_algo is not a cagra_knn_algo_t value");
  require(enum_in(p->storage, CAGRA_STORAGE_F16), f,
          "params->storage is not a cagra_storage_t value");
  ip.metric = static_cast<metric>(p->metric);
  ip.graph_degree = p->graph_degree;
  ip.intermediate_graph_degree = p->intermediate_graph_degree;
  ip.knn.algo = static_cast<knn_algo>(p->knn_algo);
  ip.knn.max_iterations = p->nn_descent_max_iterations;
  ip.knn.termination_threshold = p->nn_descent_termination_threshold;
  ip.knn.sample_rate = p->nn_descent_sample_rate;
  ip.storage = static_cast<storage_type>(p->storage);
  ip.seed = p->seed;
  ip.max_device_memory = p->max_device_memory;
  ip.knn.partition_rows = p->knn_partition_rows;
  if (p->knn_checkpoint_dir) ip.knn.checkpoint_dir = p->knn_checkpoint_dir;
  return ip;
}

resources to_search_resources(const cagra_search_params_t* p, const char* function) {
  resources res = to_resources(p ? &p->resources : nullptr, function);
  if (p) {
    require(p->stream_ordered == 0 || p->stream_ordered == 1, function,
            "params->stream_ordered must be 0 or 1");
    res.cuda_stream = p->cuda_stream;
    res.stream_ordered = p->stream_ordered != 0;
  }
  return res;
}

search_params to_search_params(const cagra_search_params_t* p, const char* f) {
  search_params sp;
  if (p == nullptr) return sp;
  require(enum_in(p->algo, CAGRA_SEARCH_ALGO_MULTI_CTA), f,
          "params->algo is not a cagra_search_algo_t value");
  require(enum_in(p->filter_algo, CAGRA_FILTER_ALGO_EXACT), f,
          "params->filter_algo is not a cagra_filter_algo_t value");
  require(p->persistent == 0 || p->persistent == 1, f, "params->persistent must be 0 or 1");
  require(enum_in(p->traversal, CAGRA_TRAVERSAL_INT8), f,
          "params->traversal is not a cagra_traversal_t value");
  require(enum_in(p->stored_rows, CAGRA_ROWS_HOST), f,
          "params->stored_rows is not a cagra_rows_location_t value");
  sp.itopk_size = p->itopk_size;
  sp.search_width = p->search_width;
  sp.max_iterations = p->max_iterations;
  sp.min_iterations = p->min_iterations;
  sp.team_size = p->team_size;
  sp.algo = static_cast<search_algo>(p->algo);
  sp.hash_bits = p->hash_bits;
  sp.hash_reset_interval = p->hash_reset_interval;
  sp.num_random_samplings = p->num_random_samplings;
  sp.seed = p->seed;
  sp.persistent = p->persistent != 0;
  sp.filter = static_cast<filter_algo>(p->filter_algo);
  sp.traversal = static_cast<traversal_type>(p->traversal);
  sp.rerank = p->rerank;
  sp.persistent_lifetime_us = p->persistent_lifetime_us;
  sp.stored_rows = static_cast<rows_location>(p->stored_rows);
  return sp;
}

extend_params to_extend_params(const cagra_extend_params_t* p) {
  extend_params ep;
  if (p == nullptr) return ep;
  ep.chunk_size = p->chunk_size;
  ep.candidates = p->candidates;
  ep.itopk_size = p->itopk_size;
  return ep;
}

}  // namespace cagra::c_api

using namespace cagra::c_api;

extern "C" {

const char* cagra_last_error(void) {
  return last_error_fallback != nullptr ? last_error_fallback : last_error_text.c_str();
}

const char* cagra_status_name(cagra_status_t status) {
  switch (status) {
    case CAGRA_OK: return "CAGRA_OK";
    case CAGRA_ERROR_INVALID_ARGUMENT: return "CAGRA_ERROR_INVALID_ARGUMENT";
    case CAGRA_ERROR_IO: return "CAGRA_ERROR_IO";
    case CAGRA_ERROR_CUDA: return "CAGRA_ERROR_CUDA";
    case CAGRA_ERROR_OUT_OF_MEMORY: return "CAGRA_ERROR_OUT_OF_MEMORY";
    case CAGRA_ERROR_UNSUPPORTED: return "CAGRA_ERROR_UNSUPPORTED";
    case CAGRA_ERROR_UNKNOWN: return "CAGRA_ERROR_UNKNOWN";
  }
  return "unknown status";
}

const char* cagra_version(void) { return cagra::version(); }

int cagra_cuda_available(void) {
  try {
    return cagra::cuda_available() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

cagra_status_t cagra_resources_default(cagra_resources_t* resources) {
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(resources != nullptr, "cagra_resources_default", "resources is NULL");
    const cagra::resources d;
    resources->backend = static_cast<cagra_backend_t>(d.target);
    resources->num_threads = d.num_threads;
    resources->device = d.device;
    resources->num_devices = static_cast<int32_t>(d.devices.size());  // 0: `device` alone
    resources->devices = nullptr;
  });
}

cagra_status_t cagra_build_params_default(cagra_build_params_t* params) {
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(params != nullptr, "cagra_build_params_default", "params is NULL");
    const cagra::index_params d;
    params->metric = static_cast<cagra_metric_t>(d.metric);
    params->graph_degree = d.graph_degree;
    params->intermediate_graph_degree = d.intermediate_graph_degree;
    params->knn_algo = static_cast<cagra_knn_algo_t>(d.knn.algo);
    params->nn_descent_max_iterations = d.knn.max_iterations;
    params->nn_descent_termination_threshold = d.knn.termination_threshold;
    params->nn_descent_sample_rate = d.knn.sample_rate;
    params->storage = static_cast<cagra_storage_t>(d.storage);
    params->seed = d.seed;
    cagra_resources_default(&params->resources);
    params->max_device_memory = d.max_device_memory;
    params->knn_partition_rows = d.knn.partition_rows;
    params->knn_checkpoint_dir = nullptr;
  });
}

cagra_status_t cagra_search_params_default(cagra_search_params_t* params) {
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(params != nullptr, "cagra_search_params_default", "params is NULL");
    const cagra::search_params d;
    params->itopk_size = d.itopk_size;
    params->search_width = d.search_width;
    params->max_iterations = d.max_iterations;
    params->min_iterations = d.min_iterations;
    params->team_size = d.team_size;
    params->algo = static_cast<cagra_search_algo_t>(d.algo);
    params->hash_bits = d.hash_bits;
    params->hash_reset_interval = d.hash_reset_interval;
    params->num_random_samplings = d.num_random_samplings;
    params->seed = d.seed;
    params->persistent = d.persistent ? 1 : 0;
    params->filter_algo = static_cast<cagra_filter_algo_t>(d.filter);
    cagra_resources_default(&params->resources);
    params->traversal = static_cast<cagra_traversal_t>(d.traversal);
    params->rerank = d.rerank;
    params->persistent_lifetime_us = d.persistent_lifetime_us;
    params->cuda_stream = nullptr;
    params->stored_rows = static_cast<cagra_rows_location_t>(d.stored_rows);
    params->stream_ordered = 0;
  });
}

cagra_status_t cagra_extend_params_default(cagra_extend_params_t* params) {
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(params != nullptr, "cagra_extend_params_default", "params is NULL");
    const cagra::extend_params d;
    params->chunk_size = d.chunk_size;
    params->candidates = d.candidates;
    params->itopk_size = d.itopk_size;
    cagra_resources_default(&params->resources);
  });
}

}  // extern "C"
