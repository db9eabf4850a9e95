// A sharded index: the rows split into contiguous ranges, one complete CAGRA index per range,
// shard s on device devices[s % n]. Building runs one host thread per device (the shards of a
// device one after another, so that a device holds one build at a time); searching runs every
// shard with the same queries, one host thread per shard, and merges the per-shard top-k lists
// (merge.cpp). Each shard is an ordinary cagra::index searched by the ordinary entry point, so
// filters, plans and both backends work on shards as they do on one index; several shards on one
// GPU run concurrently on their own streams (each index's device copy has its own).
#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>

#include <cagra/multi_gpu.hpp>

#include "core/backend.hpp"
#include "core/device_memory.hpp"
#include "core/filter.hpp"
#include "core/multi_gpu/multi_gpu.hpp"

namespace cagra {

sharded_index::sharded_index(std::vector<index> shards) {
  CAGRA_EXPECTS(!shards.empty(), "a sharded index needs at least one shard");
  const index& first = shards[0];
  std::vector<int64_t> offsets{0};
  for (size_t s = 0; s < shards.size(); ++s) {
    const index& x = shards[s];
    CAGRA_EXPECTS(x.size() > 0, "shard %zu is empty", s);
    CAGRA_EXPECTS(x.dim() == first.dim() && x.metric() == first.metric() &&
                      x.storage_dtype() == first.storage_dtype() &&
                      x.graph_degree() == first.graph_degree(),
                  "shard %zu (dim %u, %s, %s, degree %u) differs from shard 0 (dim %u, %s, %s, "
                  "degree %u): shards must share dimension, metric, dtype and degree",
                  s, x.dim(), to_string(x.metric()), to_string(x.storage_dtype()), x.graph_degree(),
                  first.dim(), to_string(first.metric()), to_string(first.storage_dtype()),
                  first.graph_degree());
    CAGRA_EXPECTS(!x.has_labels() && x.deleted_count() == 0,
                  "shard %zu has labels or deleted rows: a sharded index numbers its rows "
                  "globally and takes shards without them",
                  s);
    offsets.push_back(offsets.back() + x.size());
  }
  CAGRA_EXPECTS(offsets.back() <= kMaxRows, "the shards hold %lld rows together (at most %lld)",
                (long long)offsets.back(), (long long)kMaxRows);
  shards_ = std::move(shards);
  offsets_ = std::move(offsets);
}

size_t sharded_index::shard_of(int64_t row) const {
  CAGRA_EXPECTS(row >= 0 && row < size(), "row %lld is outside [0, %lld)", (long long)row,
                (long long)size());
  return size_t(std::upper_bound(offsets_.begin(), offsets_.end(), row) - offsets_.begin() - 1);
}

namespace {

using clock_type = std::chrono::steady_clock;

/** Rows of shard s of `shards` over `rows` rows: [rows * s / shards, rows * (s + 1) / shards). */
int64_t shard_start(int64_t rows, size_t s, size_t shards) {
  return rows * int64_t(s) / int64_t(shards);  // rows < 2^31, s < 2^32: no overflow
}

dataset_view row_range(dataset_view v, int64_t first, int64_t count) {
  v.data = static_cast<const uint8_t*>(v.data) + size_t(first) * v.row_bytes();
  v.rows = count;
  return v;
}

}  // namespace

sharded_index build_sharded(const resources& res, const index_params& params, dataset_view dataset,
                            uint32_t shards, build_report* report) {
  shard_build_options options;
  options.shards = shards;
  return build_sharded(res, params, dataset, options, report);
}

sharded_index build_sharded(const resources& res, const index_params& params, dataset_view dataset,
                            const shard_build_options& options, build_report* report) {
  const auto t0 = clock_type::now();
  const std::vector<int> devices = devices_of(res);
  CAGRA_EXPECTS(dataset.data != nullptr && dataset.rows > 0 && dataset.cols > 0,
                "dataset is empty (%lld x %lld)", (long long)dataset.rows, (long long)dataset.cols);
  CAGRA_EXPECTS(dataset.space == memory_space::host, "a sharded build takes host memory");
  const size_t n_shards = options.shards ? options.shards : devices.size();
  CAGRA_EXPECTS(int64_t(n_shards) <= dataset.rows, "%zu shards for %lld rows", n_shards,
                (long long)dataset.rows);
  const bool gpu = core::resolve_backend(res) == backend::cuda;
  const auto first_row = [&](size_t s) { return shard_start(dataset.rows, s, n_shards); };
  const auto rows_of = [&](size_t s) { return first_row(s + 1) - first_row(s); };

  std::mutex progress_mutex;  // serializes res.progress and options.on_shard
  const auto tell = [&](size_t s, bool resumed, const std::string& reason) {
    if (!options.on_shard) return;
    shard_event e;
    e.shard = s;
    e.shard_count = n_shards;
    e.first_row = first_row(s);
    e.rows = rows_of(s);
    e.resumed = resumed;
    e.reason = reason;
    std::lock_guard<std::mutex> lock(progress_mutex);
    options.on_shard(e);
  };

  // Shards keep their own checkpoints (options.checkpoint_dir), not their kNN stages'.
  index_params shard_params = params;
  shard_params.knn.checkpoint_dir.clear();
  // A checkpoint folder: before building anything, fingerprint every shard and load those whose
  // checkpoint matches (a file that cannot be read stops the build here, not hours later).
  std::vector<index> built(n_shards);
  std::vector<char> resumed(n_shards, 0);
  std::vector<std::string> reasons(n_shards);
  std::vector<core::shard_checkpoint> checkpoints;
  if (!options.checkpoint_dir.empty()) {
    core::prepare_checkpoint_dir(options.checkpoint_dir);
    checkpoints.resize(n_shards);
    const size_t hashers = std::min<size_t>(n_shards, size_t(core::host_threads(res.num_threads)));
    core::run_tasks(hashers, hashers > 1, [&](size_t w) {
      for (size_t s = w; s < n_shards; s += hashers) {
        checkpoints[s] = core::make_shard_checkpoint(options.checkpoint_dir, params, dataset, s,
                                                     n_shards, first_row(s), rows_of(s));
        resumed[s] = core::resume_shard(checkpoints[s], built[s], reasons[s]);
      }
    });
    for (size_t s = 0; s < n_shards; ++s)
      if (resumed[s]) tell(s, true, "");
  }
  std::vector<size_t> to_build;
  for (size_t s = 0; s < n_shards; ++s)
    if (!resumed[s]) to_build.push_back(s);

  // Devices in parallel on the GPU; on the CPU one shard after another with every thread.
  const size_t workers = gpu ? std::min(devices.size(), n_shards) : 1;
  const int threads = std::max(1, core::host_threads(res.num_threads) / int(workers));
  if (gpu && !to_build.empty()) {
    // Before any shard starts: the largest shard to build must fit each device that builds one.
    int64_t largest = 0;
    for (size_t s : to_build) largest = std::max(largest, rows_of(s));
    for (size_t w = 0; w < workers; ++w) {
      const resources r = core::single_device(res, devices[w], threads);
      const build_plan plan = plan_build(r, params, largest, dataset.cols, dataset.type);
      try {
        core::check_build_memory(r, params, plan, largest, dataset.cols, dataset.rows);
      } catch (const error& e) {
        // The message keeps its "out of device memory: " lead (the C API's status reads it).
        const std::string m = e.what(), lead = "out of device memory: ";
        const bool led = m.compare(0, lead.size(), lead) == 0;
        CAGRA_FAIL("%s%zu shards of at most %lld rows each: %s", lead.c_str(), n_shards,
                   (long long)largest, (led ? m.substr(lead.size()) : m).c_str());
      }
    }
  }
  resources shared = res;
  if (res.progress)
    shared.progress = [&](const char* stage, double f) {
      std::lock_guard<std::mutex> lock(progress_mutex);
      res.progress(stage, f);
    };
  std::vector<build_report> reports(n_shards);
  core::run_tasks(workers, workers > 1, [&](size_t w) {
    const resources r = core::single_device(shared, devices[w], gpu ? threads : res.num_threads);
    for (size_t s = w; s < n_shards; s += workers) {
      if (resumed[s]) continue;
      const int64_t first = first_row(s), count = rows_of(s);
      try {
        built[s] = build(r, shard_params, row_range(dataset, first, count), &reports[s]);
        if (!checkpoints.empty()) core::save_shard_checkpoint(checkpoints[s], built[s]);
      } catch (const error& e) {
        CAGRA_FAIL("shard %zu of %zu (rows %lld .. %lld): %s", s, n_shards, (long long)first,
                   (long long)(first + count - 1), e.what());
      }
      tell(s, false, reasons[s]);
    }
  });
  sharded_index out(std::move(built));
  if (report) {
    build_report rep;
    rep.backend_used = gpu ? backend::cuda : backend::cpu;
    if (!to_build.empty()) rep = reports[to_build[0]];
    for (size_t i = 1; i < to_build.size(); ++i) {
      const build_report& r = reports[to_build[i]];
      rep.knn_seconds += r.knn_seconds;
      rep.optimize_seconds += r.optimize_seconds;
      rep.knn_iterations = std::max(rep.knn_iterations, r.knn_iterations);
    }
    rep.shards_built = uint32_t(to_build.size());
    rep.shards_resumed = uint32_t(n_shards - to_build.size());
    rep.total_seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    *report = rep;
  }
  return out;
}

namespace {

/** A sharded search of queries in device memory: the queries' device broadcasts them to the
 *  other shard devices, each shard is searched on its device, and its lists come back to the
 *  queries' device to be merged there (core::device_shard_search, run by the CUDA backend). */
void search_device_queries(const resources& res, const std::vector<int>& devices,
                           const search_params& params, const sharded_index& idx,
                           dataset_view queries, uint32_t k, matrix_view<uint32_t> neighbors,
                           matrix_view<float> distances, const row_filter& filter) {
  const size_t n = idx.shard_count();
  const int64_t nq = queries.rows;
  core::device_shard_search job;
  job.queries = queries.data;
  job.nq = nq;
  job.row_bytes = queries.row_bytes();
  job.k = k;
  for (size_t s = 0; s < n; ++s) {
    const int d = devices[s % devices.size()];
    job.shard_device.push_back(d);
    job.shard_k.push_back(uint32_t(std::min<int64_t>(k, idx.shard(s).size())));
    job.shard_offset.push_back(idx.shard_offset(s));
    if (std::find(job.devices.begin(), job.devices.end(), d) == job.devices.end())
      job.devices.push_back(d);
  }
  const int threads = std::max(1, core::host_threads(res.num_threads) / int(n));
  job.search_shard = [&](size_t s, const void* q, uint32_t* ids, float* dist) {
    const index& shard = idx.shard(s);
    std::vector<uint32_t> storage;
    const row_filter f = filter.empty()
                             ? filter
                             : core::slice_rows(filter, idx.shard_offset(s), shard.size(), storage);
    dataset_view qv = queries;
    qv.data = q;
    const int64_t w = job.shard_k[s];
    // A shard on the queries' device reads them in place, after the caller's stream; the
    // others read the broadcast copy, which the broadcast waited for that stream to make.
    resources on = core::single_device(res, job.shard_device[s], threads);
    if (q != job.queries) on.cuda_stream = nullptr;
    on.stream_ordered = false;  // the shard's lists are merged once they are complete
    search(on, params, shard, qv, job.shard_k[s], {ids, nq, w, memory_space::device},
           {dist, nq, w, memory_space::device}, f);
  };
  job.ids = neighbors.data;
  job.distances = distances.data;
  job.caller_stream = res.cuda_stream;
  core::backend_for(backend::cuda).search_shards_on_devices(job);
}

}  // namespace

void search(const resources& res, const search_params& params, const sharded_index& idx,
            dataset_view queries, uint32_t k, matrix_view<uint32_t> neighbors,
            matrix_view<float> distances, const row_filter& filter) {
  CAGRA_EXPECTS(idx.shard_count() > 0, "the sharded index is empty");
  const std::vector<int> devices = devices_of(res);
  CAGRA_EXPECTS(queries.data && queries.rows > 0 && queries.cols > 0, "queries are empty");
  const memory_space space = queries.space;
  CAGRA_EXPECTS(neighbors.space == space && (!distances.data || distances.space == space),
                "queries, neighbors and distances of a sharded search must all be in host memory "
                "or all in device memory");
  CAGRA_EXPECTS(queries.cols == idx.dim(), "queries have dimension %lld but the index has %u",
                (long long)queries.cols, idx.dim());
  const int64_t nq = queries.rows;
  CAGRA_EXPECTS(neighbors.data != nullptr && neighbors.rows == nq && neighbors.cols == k,
                "neighbors must be a [%lld, %u] matrix (got [%lld, %lld])", (long long)nq, k,
                (long long)neighbors.rows, (long long)neighbors.cols);
  CAGRA_EXPECTS(!distances.data || (distances.rows == nq && distances.cols == k),
                "distances must be a [%lld, %u] matrix or empty (got [%lld, %lld])", (long long)nq,
                k, (long long)distances.rows, (long long)distances.cols);
  CAGRA_EXPECTS(k >= 1 && int64_t{k} <= idx.size(), "k = %u must be in [1, %lld] (the index size)",
                k, (long long)idx.size());
  if (!filter.empty()) core::check_filter(filter, idx.size(), nq);

  const size_t n = idx.shard_count();
  const bool gpu = core::resolve_backend(res) == backend::cuda;
  // Each shard launches its kernels per call: resident batch-1 kernels (search_params::
  // persistent), one per shard, would hold their SMs side by side on a device.
  search_params shard_params = params;
  shard_params.persistent = false;
  if (space == memory_space::device) {
    CAGRA_EXPECTS(gpu,
                  "queries in device memory need the CUDA backend (backend::cuda or automatic)");
    search_device_queries(res, devices, shard_params, idx, queries, k, neighbors, distances,
                          filter);
    return;
  }
  const int threads =
      gpu ? std::max(1, core::host_threads(res.num_threads) / int(n)) : res.num_threads;
  // A shard smaller than k returns all its rows (a search's k may not exceed its index's size):
  // the merge takes lists of any width.
  std::vector<uint32_t> ks(n);
  for (size_t s = 0; s < n; ++s) ks[s] = uint32_t(std::min<int64_t>(k, idx.shard(s).size()));
  std::vector<std::vector<uint32_t>> ids(n);
  std::vector<std::vector<float>> dist(n);
  for (size_t s = 0; s < n; ++s) {
    ids[s].resize(size_t(nq) * ks[s]);
    dist[s].resize(size_t(nq) * ks[s]);
  }
  core::run_tasks(n, gpu, [&](size_t s) {
    const index& shard = idx.shard(s);
    const int64_t offset = idx.shard_offset(s);
    std::vector<uint32_t> storage;
    const row_filter f =
        filter.empty() ? filter : core::slice_rows(filter, offset, shard.size(), storage);
    search(core::single_device(res, devices[s % devices.size()], threads), shard_params, shard,
           queries, ks[s], {ids[s].data(), nq, int64_t{ks[s]}},
           {dist[s].data(), nq, int64_t{ks[s]}}, f);
    for (uint32_t& id : ids[s])
      if (id != kInvalidId) id = uint32_t(int64_t{id} + offset);
  });
  std::vector<matrix_view<const uint32_t>> id_views;
  std::vector<matrix_view<const float>> dist_views;
  for (size_t s = 0; s < n; ++s) {
    id_views.push_back({ids[s].data(), nq, int64_t{ks[s]}});
    dist_views.push_back({dist[s].data(), nq, int64_t{ks[s]}});
  }
  merge_topk(id_views, dist_views, k, neighbors, distances);
}

}  // namespace cagra
