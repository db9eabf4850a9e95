/**
 * @file multi_gpu.hpp
 * @brief Several GPUs: replicated and sharded indexes, a layer over single-GPU indexes.
 *
 * Two ways to outgrow one GPU (docs/multi_gpu.md):
 *  - **Replicated** (the query rate outgrows one GPU): the same cagra::index on every device of
 *    `resources::devices`. A plain cagra::search with two or more devices there splits a lone
 *    caller's large batch into one contiguous slice per device, searched in parallel (each
 *    device keeps its own copy of the index, made on first use); a small batch, or a call made
 *    while other threads search the devices too, goes whole to the least busy device, so that
 *    concurrent callers each get a GPU. The results are those of the single-device search of
 *    each slice.
 *  - **Sharded** (the index outgrows one GPU): cagra::sharded_index splits the rows into S
 *    contiguous parts and builds one CAGRA graph per part; shard s lives on
 *    `devices[s % devices.size()]` (several shards may share a device: the same code runs on one
 *    GPU, or on the CPU backend). A search runs every shard with the same queries in parallel
 *    and merges the S top-k lists by (distance, global id); ids come back global.
 *
 * @code
 *   cagra::resources res;  res.devices = {0, 1, 2, 3};
 *   cagra::sharded_index sh = cagra::build_sharded(res, ip, base);          // 4 shards, 4 GPUs
 *   cagra::search(res, sp, sh, queries, 10, ids, dists);                    // global ids
 *   cagra::save(sh, "base.cagra");        // base.cagra + base.cagra.shard-{0..3}-of-4
 *   cagra::sharded_index again = cagra::load_sharded("base.cagra");       // any device count
 *
 *   cagra::index idx = cagra::load("single.cagra");
 *   cagra::search(res, sp, idx, queries, 10, ids, dists);                   // replicated x 4
 * @endcode
 */
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>

namespace cagra {

/** An index whose rows are split into shards, each a complete cagra::index over a contiguous
 *  range of global row ids. Move-only, like cagra::index. */
class sharded_index {
 public:
  sharded_index() = default;
  /** Assembles shards (in global row order): all with the same metric, dimension, storage
   *  dtype and graph degree, none empty, none with labels or deleted rows (throws otherwise). */
  explicit sharded_index(std::vector<index> shards);
  sharded_index(sharded_index&&) noexcept = default;
  sharded_index& operator=(sharded_index&&) noexcept = default;
  sharded_index(const sharded_index&) = delete;
  sharded_index& operator=(const sharded_index&) = delete;

  /** Rows of all shards together. */
  int64_t size() const { return offsets_.empty() ? 0 : offsets_.back(); }
  uint32_t dim() const { return shards_.empty() ? 0 : shards_[0].dim(); }
  uint32_t graph_degree() const { return shards_.empty() ? 0 : shards_[0].graph_degree(); }
  cagra::metric metric() const { return shards_.empty() ? metric::l2 : shards_[0].metric(); }
  dtype storage_dtype() const { return shards_.empty() ? dtype::f32 : shards_[0].storage_dtype(); }

  size_t shard_count() const { return shards_.size(); }
  const index& shard(size_t s) const { return shards_.at(s); }
  /** Global id of shard s's first row (its row r is global id shard_offset(s) + r). */
  int64_t shard_offset(size_t s) const { return offsets_.at(s); }
  /** The shard holding global row `row` (0 <= row < size()). */
  size_t shard_of(int64_t row) const;

 private:
  std::vector<index> shards_;
  std::vector<int64_t> offsets_;  // shard_count() + 1 prefix sums of the shard sizes
};

/** The CUDA devices a multi-device call uses: `res.devices`, or {res.device} when it is empty.
 *  Throws for a negative or repeated ordinal. */
std::vector<int> devices_of(const resources& res);

/** Builds a sharded index: `shards` contiguous row ranges of `dataset` (as equal as possible;
 *  0 = one shard per device of devices_of(res)), each built with `params` like cagra::build.
 *  On the CUDA backend the devices build in parallel (one host thread each; the shards of one
 *  device one after another); on the CPU backend shard after shard, each with every thread.
 *  Deterministic: the same input gives the same shards whatever the device count.
 *  @param[out] report optional: summed stage times; total_seconds is the wall clock */
sharded_index build_sharded(const resources& res, const index_params& params, dataset_view dataset,
                            uint32_t shards = 0, build_report* report = nullptr);

/** What build_sharded did with one shard (shard_build_options::on_shard). */
struct shard_event {
  size_t shard = 0;        ///< its number, 0 .. shard_count - 1
  size_t shard_count = 0;  ///< shards of the build
  int64_t first_row = 0;   ///< global id of its first row
  int64_t rows = 0;        ///< its rows
  bool resumed = false;    ///< loaded from the checkpoint folder (false: built by this call)
  /** Why a shard was built although the checkpoint folder had files for it (e.g.
   *  "graph_degree: 32 in the checkpoint, 64 now"); empty when the folder had none for it or
   *  there is no folder. */
  std::string reason;
};

/** build_sharded's options beyond the parameters of each shard. */
struct shard_build_options {
  /** Shards to build; 0 = one per device of devices_of(res). */
  uint32_t shards = 0;
  /** Checkpoint folder (made when missing; empty = none). Every shard is saved there as soon as
   *  it is built (shard-S-of-N.cagra, written to a temporary file and renamed) with a
   *  fingerprint of its inputs (shard-S-of-N.fingerprint: rows, dimension, dtype, the shard's
   *  row range and count, every index_params field that changes the graph, and an XXH64 of the
   *  shard's rows). A later build with the same folder loads each shard whose fingerprint
   *  matches instead of building it, and builds (and replaces) those that are missing or do not
   *  match. A fingerprint or shard file that cannot be read (garbled, truncated, not a regular
   *  file) is an error before any shard is built: the folder is not this build's to overwrite
   *  blindly. Other files in the folder (a killed save's temporary file among them) are
   *  ignored. One build per folder at a time (docs/multi_gpu.md, "Checkpoints"). */
  std::string checkpoint_dir;
  /** Called once per shard as it is resumed or built (and, with a checkpoint folder, saved),
   *  from the building thread under a lock: calls never overlap. */
  std::function<void(const shard_event&)> on_shard;
};

/** build_sharded with options (a checkpoint folder, a per-shard callback); `report` also counts
 *  the shards built and resumed. */
sharded_index build_sharded(const resources& res, const index_params& params, dataset_view dataset,
                            const shard_build_options& options, build_report* report = nullptr);

/** Searches every shard with the same queries, shard s on devices_of(res)[s % n], the shards in
 *  parallel, and merges their top-k lists by (distance, global id). `filter` (cagra/filter.hpp)
 *  covers the global rows; each shard sees its slice. Arguments as cagra::search, less
 *  params.persistent (each shard launches its kernels per call). Queries,
 *  neighbors and distances are all host memory, or all device memory on one device that holds a
 *  shard (the CUDA backend): the queries then go from there to the other shards' devices and
 *  the lists come back there to be merged on the GPU (NCCL, opened at run time, when the shards
 *  span several devices; docs/multi_gpu.md "Device queries"). */
void search(const resources& res, const search_params& params, const sharded_index& idx,
            dataset_view queries, uint32_t k, matrix_view<uint32_t> neighbors,
            matrix_view<float> distances, const row_filter& filter = {});

/** Merges sorted per-query candidate lists (`ids[s]` / `distances[s]`: [nq, w_s], ids already
 *  global, kInvalidId = an empty slot, empty slots last) into the k best of each query by
 *  (distance, id); slots past the candidates hold kInvalidId / +inf. Lists of disjoint rows (the
 *  shards') give unique ids; duplicates across lists are not removed. The merge step of a
 *  sharded search, exposed for tests and for callers that search shards themselves. */
void merge_topk(const std::vector<matrix_view<const uint32_t>>& ids,
                const std::vector<matrix_view<const float>>& distances, uint32_t k,
                matrix_view<uint32_t> out_ids, matrix_view<float> out_distances);

/** Writes a sharded index as one file set: `path` (a small manifest naming the shards and the
 *  checksum of each) and `path.shard-S-of-N` (cagra::save files, each loadable alone). Shards
 *  are written first, the manifest last; each file is replaced only by a complete one. */
void save(const sharded_index& idx, const std::string& path);

/** Reads a file set written by save(sharded_index): checks that every shard file is the one the
 *  manifest names (size and checksum), so a set mixed from two saves is refused. The index is
 *  placed on devices at search time, so it loads onto any number of GPUs. */
sharded_index load_sharded(const std::string& path);

/** Whether `path` is the manifest of a sharded index (reads its first bytes; false for a missing
 *  or unreadable file). cagra::load refuses a manifest with a message naming load_sharded. */
bool is_sharded_file(const std::string& path);

}  // namespace cagra
