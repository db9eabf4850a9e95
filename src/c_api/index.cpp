// The index functions of the C interface (include/cagra/c_api.h): build, load, save, info,
// search (host, labels, device), extend, remove, compact and labels, each a checked call into
// cagra/cagra.hpp inside c_api::guarded, so that no C++ exception reaches a C caller. Readers
// share the handle's lock, changes take it alone (the C++ index leaves that to its user).
#include <string>
#include <vector>

#include "c_api/support.hpp"

using namespace cagra::c_api;

namespace {

/** The queries of a search call as a view, after the checks the C++ API cannot make (NULL). */
cagra::dataset_view query_view(const cagra_index_t* index, const void* queries, cagra_dtype_t dtype,
                               int64_t num_queries, int64_t dim, cagra::memory_space space,
                               const char* f) {
  require(index != nullptr, f, "index is NULL");
  require(queries != nullptr, f, "queries is NULL");
  require(num_queries >= 1, f, "num_queries must be >= 1");
  require(dim >= 1, f, "dim must be >= 1");
  return {queries, to_dtype(dtype, f), num_queries, dim, space};
}

/** The rows of `n` vectors for build and extend, after the checks for NULL and sizes. */
cagra::dataset_view vectors_view(const void* data, cagra_dtype_t dtype, int64_t rows, int64_t dim,
                                 const char* f) {
  require(data != nullptr, f, "data is NULL");
  require(rows >= 1, f, "rows must be >= 1");
  require(dim >= 1, f, "dim must be >= 1");
  return {data, to_dtype(dtype, f), rows, dim};
}

/** The searches: neighbors (uint32 row ids) or labels (int64) out, in host or device `space`
 *  with the queries and the distances; `what` names the output in messages. */
template <typename Out>
cagra_status_t search_into(const cagra_index_t* index, const cagra_search_params_t* params,
                           const void* queries, cagra_dtype_t dtype, int64_t num_queries,
                           int64_t dim, uint32_t k, Out* out, const char* what, float* distances,
                           const cagra_filter_t* filter, cagra::memory_space space, const char* f) {
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    const cagra::dataset_view q = query_view(index, queries, dtype, num_queries, dim, space, f);
    require(out != nullptr, f, (std::string(what) + " is NULL").c_str());
    const std::string name(f);  // the host call's name: f without "_device"
    require_cuda_for_device(space, f, name.substr(0, name.rfind("_device")).c_str());
    const cagra::resources res = to_search_resources(params, f);
    const cagra::search_params sp = to_search_params(params, f);
    const cagra::row_filter rf = to_row_filter(filter, f);
    const int64_t kk = k;
    const auto reading = index->lock.read();
    cagra::search(res, sp, index->idx, q, k, cagra::matrix_view<Out>{out, num_queries, kk, space},
                  {distances, distances ? num_queries : 0, distances ? kk : 0, space}, rf);
  });
}

}  // namespace

extern "C" {

cagra_status_t cagra_index_build(const cagra_build_params_t* params, const void* data,
                                 cagra_dtype_t dtype, int64_t rows, int64_t dim,
                                 cagra_index_t** index) {
  const char* f = "cagra_index_build";
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(index != nullptr, f, "index (where the new handle goes) is NULL");
    const cagra::dataset_view v = vectors_view(data, dtype, rows, dim, f);
    const cagra::resources res = to_resources(params ? &params->resources : nullptr, f);
    cagra::index built = cagra::build(res, to_index_params(params), v);
    *index = new cagra_index(std::move(built));
  });
}

cagra_status_t cagra_index_free(cagra_index_t* index) {
  delete index;
  return CAGRA_OK;
}

cagra_status_t cagra_index_get_info(const cagra_index_t* index, cagra_index_info_t* info) {
  const char* f = "cagra_index_get_info";
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(index != nullptr, f, "index is NULL");
    require(info != nullptr, f, "info is NULL");
    const auto reading = index->lock.read();
    const cagra::index& idx = index->idx;
    cagra_index_info_t out{};
    out.rows = idx.size();
    out.dim = idx.dim();
    out.graph_degree = idx.graph_degree();
    out.dtype = static_cast<cagra_dtype_t>(idx.storage_dtype());
    out.metric = static_cast<cagra_metric_t>(idx.metric());
    out.live_rows = idx.live_size();
    out.deleted_rows = idx.deleted_count();
    out.has_labels = idx.has_labels() ? 1 : 0;
    *info = out;
  });
}

cagra_status_t cagra_index_save(const cagra_index_t* index, const char* path) {
  const char* f = "cagra_index_save";
  return guarded(CAGRA_ERROR_IO, [&] {
    require(index != nullptr, f, "index is NULL");
    require(path != nullptr, f, "path is NULL");
    const auto reading = index->lock.read();
    cagra::save(index->idx, path);
  });
}

cagra_status_t cagra_index_load(const char* path, cagra_index_t** index) {
  const char* f = "cagra_index_load";
  return guarded(CAGRA_ERROR_IO, [&] {
    require(path != nullptr, f, "path is NULL");
    require(index != nullptr, f, "index (where the new handle goes) is NULL");
    // cagra::load refuses a manifest too, but its message names the C++ function to use.
    if (cagra::is_sharded_file(path))
      throw status_error(CAGRA_ERROR_IO, std::string(f) + ": '" + path +
                                             "' is the manifest of a sharded index: load it with "
                                             "cagra_sharded_index_load");
    cagra::index loaded = cagra::load(path);
    *index = new cagra_index(std::move(loaded));
  });
}

cagra_status_t cagra_index_search(const cagra_index_t* index, const cagra_search_params_t* params,
                                  const void* queries, cagra_dtype_t dtype, int64_t num_queries,
                                  int64_t dim, uint32_t k, uint32_t* neighbors, float* distances,
                                  const cagra_filter_t* filter) {
  return search_into(index, params, queries, dtype, num_queries, dim, k, neighbors, "neighbors",
                     distances, filter, cagra::memory_space::host, "cagra_index_search");
}

cagra_status_t cagra_index_search_device(const cagra_index_t* index,
                                         const cagra_search_params_t* params, const void* queries,
                                         cagra_dtype_t dtype, int64_t num_queries, int64_t dim,
                                         uint32_t k, uint32_t* neighbors, float* distances,
                                         const cagra_filter_t* filter) {
  return search_into(index, params, queries, dtype, num_queries, dim, k, neighbors, "neighbors",
                     distances, filter, cagra::memory_space::device, "cagra_index_search_device");
}

cagra_status_t cagra_index_search_labels(const cagra_index_t* index,
                                         const cagra_search_params_t* params, const void* queries,
                                         cagra_dtype_t dtype, int64_t num_queries, int64_t dim,
                                         uint32_t k, int64_t* labels, float* distances,
                                         const cagra_filter_t* filter) {
  return search_into(index, params, queries, dtype, num_queries, dim, k, labels, "labels",
                     distances, filter, cagra::memory_space::host, "cagra_index_search_labels");
}

cagra_status_t cagra_index_search_labels_device(const cagra_index_t* index,
                                                const cagra_search_params_t* params,
                                                const void* queries, cagra_dtype_t dtype,
                                                int64_t num_queries, int64_t dim, uint32_t k,
                                                int64_t* labels, float* distances,
                                                const cagra_filter_t* filter) {
  return search_into(index, params, queries, dtype, num_queries, dim, k, labels, "labels",
                     distances, filter, cagra::memory_space::device,
                     "cagra_index_search_labels_device");
}

cagra_status_t cagra_index_extend(cagra_index_t* index, const cagra_extend_params_t* params,
                                  const void* data, cagra_dtype_t dtype, int64_t rows, int64_t dim,
                                  const int64_t* labels) {
  const char* f = "cagra_index_extend";
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(index != nullptr, f, "index is NULL");
    const cagra::dataset_view v = vectors_view(data, dtype, rows, dim, f);
    const cagra::resources res = to_resources(params ? &params->resources : nullptr, f);
    const auto writing = index->lock.write();
    cagra::extend(res, to_extend_params(params), index->idx, v, labels);
  });
}

cagra_status_t cagra_index_remove(cagra_index_t* index, const cagra_resources_t* resources,
                                  const int64_t* labels, int64_t n, double compact_above,
                                  int64_t* removed) {
  const char* f = "cagra_index_remove";
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(index != nullptr, f, "index is NULL");
    require(labels != nullptr || n == 0, f, "labels is NULL");
    require(n >= 0, f, "n must be >= 0");
    const cagra::resources res = to_resources(resources, f);
    const auto writing = index->lock.write();
    const int64_t count = cagra::remove(res, index->idx, labels, n, compact_above);
    if (removed != nullptr) *removed = count;
  });
}

cagra_status_t cagra_index_remove_rows(cagra_index_t* index, const cagra_resources_t* resources,
                                       const int64_t* row_ids, int64_t n, double compact_above,
                                       int64_t* removed) {
  const char* f = "cagra_index_remove_rows";
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(index != nullptr, f, "index is NULL");
    require(row_ids != nullptr || n == 0, f, "row_ids is NULL");
    require(n >= 0, f, "n must be >= 0");
    const cagra::resources res = to_resources(resources, f);
    const auto writing = index->lock.write();
    const cagra::index& idx = index->idx;
    std::vector<int64_t> labels(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = row_ids[i];
      if (row < 0 || row >= idx.size())
        throw status_error(CAGRA_ERROR_INVALID_ARGUMENT, std::string(f) + ": row id " +
                                                             std::to_string(row) +
                                                             " is outside the index's rows [0, " +
                                                             std::to_string(idx.size()) + ")");
      labels[size_t(i)] = idx.label_of(row);
    }
    const int64_t count = cagra::remove(res, index->idx, labels.data(), n, compact_above);
    if (removed != nullptr) *removed = count;
  });
}

cagra_status_t cagra_index_compact(cagra_index_t* index, const cagra_resources_t* resources) {
  const char* f = "cagra_index_compact";
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(index != nullptr, f, "index is NULL");
    const cagra::resources res = to_resources(resources, f);
    const auto writing = index->lock.write();
    cagra::compact(res, index->idx);
  });
}

cagra_status_t cagra_index_set_labels(cagra_index_t* index, const int64_t* labels, int64_t n) {
  const char* f = "cagra_index_set_labels";
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(index != nullptr, f, "index is NULL");
    require(labels != nullptr, f, "labels is NULL");
    const auto writing = index->lock.write();
    if (n != index->idx.size())
      throw status_error(CAGRA_ERROR_INVALID_ARGUMENT,
                         std::string(f) + ": " + std::to_string(n) + " labels for an index of " +
                             std::to_string(index->idx.size()) + " rows (one per row is needed)");
    index->idx.set_labels(std::vector<int64_t>(labels, labels + n));
  });
}

cagra_status_t cagra_index_get_labels(const cagra_index_t* index, int64_t* labels,
                                      int64_t capacity) {
  const char* f = "cagra_index_get_labels";
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(index != nullptr, f, "index is NULL");
    require(labels != nullptr, f, "labels is NULL");
    const auto reading = index->lock.read();
    const cagra::index& idx = index->idx;
    if (capacity < idx.size())
      throw status_error(CAGRA_ERROR_INVALID_ARGUMENT,
                         std::string(f) + ": capacity " + std::to_string(capacity) +
                             " is below the index's " + std::to_string(idx.size()) + " rows");
    for (int64_t row = 0; row < idx.size(); ++row) labels[row] = idx.label_of(row);
  });
}

}  // extern "C"
