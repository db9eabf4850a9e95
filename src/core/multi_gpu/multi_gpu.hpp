// The multi-device layer's internal pieces (cagra/multi_gpu.hpp is the public side): running one
// task per device in parallel host threads, slicing a filter to a row range or a query range,
// and the replicated search that core's cagra::search hands a multi-device call to. Everything
// here calls the single-device entry points: no backend is reached around them (DESIGN.md §8).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/filter.hpp>

namespace cagra::core {

/** Runs task(0) .. task(n - 1), each on its own host thread when `parallel` (else in order on
 *  this one), and rethrows the first exception (by task number) after all have ended. */
void run_tasks(size_t n, bool parallel, const std::function<void(size_t)>& task);

/** `res` narrowed to one device: devices cleared, device = `device`, `threads` host threads. */
resources single_device(const resources& res, int device, int threads);

/** The filter `f` (non-empty, checked) cut to the rows [first, first + rows): bit r of the result
 *  is bit first + r of `f`, per query for a per-query filter. Written into `storage`. */
row_filter slice_rows(const row_filter& f, int64_t first, int64_t rows,
                      std::vector<uint32_t>& storage);

/** The filter `f` for queries [first, first + count) of the batch (a view into `f`: a shared
 *  bitset is the same for every slice). */
row_filter slice_queries(const row_filter& f, int64_t first, int64_t count);

/** cagra::search over several devices (`devices`, two or more; host memory): a lone call's
 *  batch of at least kReplicaMinSlice queries per device is split into contiguous slices
 *  searched in parallel; a smaller batch, or a call made while other replicated searches are in
 *  flight, goes whole to the least busy device (replicated.cpp). Arguments as cagra::search,
 *  already checked. */
void search_replicated(const resources& res, const std::vector<int>& devices,
                       const search_params& params, const index& idx, dataset_view queries,
                       uint32_t k, matrix_view<uint32_t> neighbors, matrix_view<float> distances,
                       const row_filter& filter);

/** The checkpoint of one shard of a sharded build (checkpoint.cpp, docs/multi_gpu.md
 *  "Checkpoints"): DIR/shard-S-of-N.cagra and its fingerprint DIR/shard-S-of-N.fingerprint. */
struct shard_checkpoint {
  std::string index_path, fingerprint_path;
  /** What the shard is built from, as ordered (key, value) pairs: the fingerprint file holds
   *  these and the shard file's size and checksum. */
  std::vector<std::pair<std::string, std::string>> inputs;
};

/** Size and trailing checksum (last 8 bytes, little-endian) of a saved index file. */
void index_file_identity(const std::string& path, uint64_t& bytes, uint64_t& sum);

/** Makes `dir` (and its parents) when missing; throws when it is not a writable folder. */
void prepare_checkpoint_dir(const std::string& dir);

/** The checkpoint of shard s of n, rows [first, first + rows) of `dataset`, built with
 *  `params` (hashes the shard's rows). */
shard_checkpoint make_shard_checkpoint(const std::string& dir, const index_params& params,
                                       dataset_view dataset, size_t s, size_t n, int64_t first,
                                       int64_t rows);

/** Loads the shard of `c` into `out` when its files exist and match `c.inputs` (true); false
 *  with `reason` set when they are missing or were made from other inputs (empty when the folder
 *  has no files of the shard). Throws a cagra::error for a file it cannot read. */
bool resume_shard(const shard_checkpoint& c, index& out, std::string& reason);

/** Saves a built shard into its checkpoint: the fingerprint is removed first, the shard file
 *  replaced (cagra::save), then the fingerprint written (temporary file and rename), so that a
 *  fingerprint always names the shard file beside it. */
void save_shard_checkpoint(const shard_checkpoint& c, const index& shard);

/** Fewest queries per device for which a lone replicated search splits its batch: below, one
 *  GPU handles the batch while the others serve concurrent callers. */
constexpr int64_t kReplicaMinSlice = 512;

}  // namespace cagra::core
