// The sharded-index functions of the C interface (include/cagra/c_api_sharded.h): build,
// search, save, load, info, offsets and cagra_is_sharded_file, each a checked call into
// cagra/multi_gpu.hpp inside c_api::guarded. The sizes a C caller passes as int64_t are checked
// here before they narrow to the C++ API's types, so that a bad count reads as the caller's
// mistake.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <system_error>

#include "c_api/support.hpp"

using namespace cagra::c_api;

namespace {

/** Host or device sharded search into global row ids. */
cagra_status_t sharded_search(const cagra_sharded_index_t* index,
                              const cagra_search_params_t* params, const void* queries,
                              cagra_dtype_t dtype, int64_t num_queries, int64_t dim, uint32_t k,
                              uint32_t* neighbors, float* distances, const cagra_filter_t* filter,
                              cagra::memory_space space, const char* f) {
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(index != nullptr, f, "index is NULL");
    require(queries != nullptr, f, "queries is NULL");
    require(num_queries >= 1, f, "num_queries must be >= 1");
    require(dim >= 1, f, "dim must be >= 1");
    require(neighbors != nullptr, f, "neighbors is NULL");
    require_cuda_for_device(space, f, "cagra_sharded_index_search");
    const cagra::dataset_view q{queries, to_dtype(dtype, f), num_queries, dim, space};
    const cagra::resources res = to_search_resources(params, f);
    const cagra::search_params sp = to_search_params(params, f);
    const cagra::row_filter rf = to_row_filter(filter, f);
    const int64_t kk = k;
    cagra::search(res, sp, index->idx, q, k, {neighbors, num_queries, kk, space},
                  {distances, distances ? num_queries : 0, distances ? kk : 0, space}, rf);
  });
}

}  // namespace

extern "C" {

cagra_status_t cagra_sharded_index_build(const cagra_build_params_t* params, const void* data,
                                         cagra_dtype_t dtype, int64_t rows, int64_t dim,
                                         int64_t shards, cagra_sharded_index_t** index) {
  const char* f = "cagra_sharded_index_build";
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(index != nullptr, f, "index (where the new handle goes) is NULL");
    require(data != nullptr, f, "data is NULL");
    require(rows >= 1, f, "rows must be >= 1");
    require(dim >= 1, f, "dim must be >= 1");
    // 0 is refused rather than read as the C++ API's "one shard per device": a zeroed field is
    // more often a mistake than a choice, and the caller has the device count in hand.
    if (shards < 1 || shards > rows || shards > std::numeric_limits<uint32_t>::max())
      throw status_error(CAGRA_ERROR_INVALID_ARGUMENT,
                         std::string(f) + ": shards is " + std::to_string(shards) +
                             ", it must be in [1, rows] = [1, " + std::to_string(rows) + "]");
    const cagra::dataset_view v{data, to_dtype(dtype, f), rows, dim};
    const cagra::resources res = to_resources(params ? &params->resources : nullptr, f);
    cagra::sharded_index built =
        cagra::build_sharded(res, to_index_params(params), v, static_cast<uint32_t>(shards));
    *index = new cagra_sharded_index(std::move(built));
  });
}

cagra_status_t cagra_sharded_index_free(cagra_sharded_index_t* index) {
  delete index;
  return CAGRA_OK;
}

cagra_status_t cagra_sharded_index_get_info(const cagra_sharded_index_t* index,
                                            cagra_sharded_index_info_t* info) {
  const char* f = "cagra_sharded_index_get_info";
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(index != nullptr, f, "index is NULL");
    require(info != nullptr, f, "info is NULL");
    const cagra::sharded_index& idx = index->idx;
    cagra_sharded_index_info_t out{};
    out.rows = idx.size();
    out.dim = idx.dim();
    out.graph_degree = idx.graph_degree();
    out.dtype = static_cast<cagra_dtype_t>(idx.storage_dtype());
    out.metric = static_cast<cagra_metric_t>(idx.metric());
    out.shards = static_cast<int64_t>(idx.shard_count());
    *info = out;
  });
}

cagra_status_t cagra_sharded_index_get_offsets(const cagra_sharded_index_t* index, int64_t* offsets,
                                               int64_t capacity) {
  const char* f = "cagra_sharded_index_get_offsets";
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(index != nullptr, f, "index is NULL");
    require(offsets != nullptr, f, "offsets is NULL");
    const cagra::sharded_index& idx = index->idx;
    const int64_t n = static_cast<int64_t>(idx.shard_count());
    if (capacity < n + 1)
      throw status_error(CAGRA_ERROR_INVALID_ARGUMENT,
                         std::string(f) + ": capacity " + std::to_string(capacity) +
                             " is below shards + 1 = " + std::to_string(n + 1));
    for (int64_t s = 0; s < n; ++s) offsets[s] = idx.shard_offset(static_cast<size_t>(s));
    offsets[n] = idx.size();
  });
}

cagra_status_t cagra_sharded_index_search(const cagra_sharded_index_t* index,
                                          const cagra_search_params_t* params, const void* queries,
                                          cagra_dtype_t dtype, int64_t num_queries, int64_t dim,
                                          uint32_t k, uint32_t* neighbors, float* distances,
                                          const cagra_filter_t* filter) {
  return sharded_search(index, params, queries, dtype, num_queries, dim, k, neighbors, distances,
                        filter, cagra::memory_space::host, "cagra_sharded_index_search");
}

cagra_status_t cagra_sharded_index_search_device(const cagra_sharded_index_t* index,
                                                 const cagra_search_params_t* params,
                                                 const void* queries, cagra_dtype_t dtype,
                                                 int64_t num_queries, int64_t dim, uint32_t k,
                                                 uint32_t* neighbors, float* distances,
                                                 const cagra_filter_t* filter) {
  return sharded_search(index, params, queries, dtype, num_queries, dim, k, neighbors, distances,
                        filter, cagra::memory_space::device, "cagra_sharded_index_search_device");
}

cagra_status_t cagra_sharded_index_save(const cagra_sharded_index_t* index, const char* path) {
  const char* f = "cagra_sharded_index_save";
  return guarded(CAGRA_ERROR_IO, [&] {
    require(index != nullptr, f, "index is NULL");
    require(path != nullptr, f, "path is NULL");
    cagra::save(index->idx, path);
  });
}

cagra_status_t cagra_sharded_index_load(const char* path, cagra_sharded_index_t** index) {
  const char* f = "cagra_sharded_index_load";
  return guarded(CAGRA_ERROR_IO, [&] {
    require(path != nullptr, f, "path is NULL");
    require(index != nullptr, f, "index (where the new handle goes) is NULL");
    // A regular file that is no manifest: say so in the C API's terms (the C++ message names
    // cagra::load). Missing and unreadable files get the C++ message ("cannot open ...").
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec) && !cagra::is_sharded_file(path))
      throw status_error(CAGRA_ERROR_IO, std::string(f) + ": '" + path +
                                             "' is not the manifest of a sharded index (a single "
                                             "index file loads with cagra_index_load)");
    cagra::sharded_index loaded = cagra::load_sharded(path);
    *index = new cagra_sharded_index(std::move(loaded));
  });
}

int cagra_is_sharded_file(const char* path) {
  if (path == nullptr) return 0;
  try {
    return cagra::is_sharded_file(path) ? 1 : 0;
  } catch (...) {  // std::string's allocation; is_sharded_file itself reports no errors
    return 0;
  }
}

}  // extern "C"
