// One dataset of an HDF5 file, opened, checked and read (hdf5_reader.hpp). Runs inside the
// reader process (hdf5.cpp, isolate.hpp), so a libhdf5 failure here cannot hurt the caller.
//
// Before any data is read the dataset must pass every check we can make from its metadata: a
// hard or soft link, a supported standard element type, rank 1 or 2 with nonzero dimensions,
// contiguous, compact or chunked storage inside this file (no external files, no virtual
// dataset), a stored size that matches the shape and fits in the file, sane chunks (rank,
// bytes, every chunk present) and only the deflate, shuffle and fletcher32 filters. HDF5
// converts element types on read, so float64 arrives as float32 (a value beyond float32's
// range is an error) and any integer id width as the type we ask for.
#include "core/io/hdf5_reader.hpp"

#ifdef CAGRA_HAVE_HDF5
#include <algorithm>
#include <optional>
#include <vector>

#include "core/io/common.hpp"

namespace cagra::io::detail::h5 {

namespace {

// Largest chunk we let libhdf5 allocate and decompress (HDF5's own limit is 4 GiB; h5py's
// automatic chunks are at most 1 MiB).
constexpr uint64_t kMaxChunkBytes = uint64_t{256} << 20;
// zlib's deflate never expands data by more than about 1032:1.
constexpr uint64_t kDeflateMaxRatio = 1032;
// A row of chunks (all the chunks that hold one row) is cached while it is read: at most this.
constexpr uint64_t kMaxChunkRowBytes = uint64_t{1} << 30;
// Data goes to the caller in pieces of about this size (whole rows), each a progress step.
constexpr uint64_t kPieceBytes = uint64_t{4} << 20;

}  // namespace

// Opens, validates and reads one dataset; runs in the reader process (or in-process).
void read_dataset(isolate_context& ctx, const request& q) {
  const std::string& file = q.file;
  const uint64_t file_size = q.file_size;
  const std::string where = file + ":" + q.dataset;
  const char* doing = "opening the file";
  ctx.phase(doing);
  const htri_t is_hdf5 = H5Fis_hdf5(file.c_str());
  CAGRA_H5_EXPECTS(is_hdf5 > 0, "%s: not an HDF5 file (bad signature)", file.c_str());
  handle f(H5Fopen(file.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  CAGRA_H5_EXPECTS(f.ok(), "%s: cannot open HDF5 file (corrupt or truncated?)", file.c_str());

  doing = "looking up the dataset";
  ctx.phase(doing);
  handle lapl(H5Pcreate(H5P_LINK_ACCESS), H5Pclose);
  handle dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
  CAGRA_H5_EXPECTS(lapl.ok() && dapl.ok() &&
                       H5Pset_elink_cb(lapl.get(), refuse_external_link, nullptr) >= 0 &&
                       H5Pset_elink_cb(dapl.get(), refuse_external_link, nullptr) >= 0,
                   "%s: cannot set up HDF5 property lists", file.c_str());
  const char* name = q.dataset.c_str();
  const htri_t exists = H5Lexists(f.get(), name, lapl.get());
  if (exists == 0) {
    if (q.optional) {
      ctx.meta[kMetaFound] = 0;
      return;
    }
    CAGRA_FAIL("%s: no dataset '%s' in the file (it has: %s)", file.c_str(), shown(name).c_str(),
               list_members(f.get()).c_str());
  }
  CAGRA_H5_EXPECTS(exists > 0,
                   "%s: cannot look up '%s' (a group on its path is missing or is an external "
                   "link, or the file is corrupt)",
                   file.c_str(), shown(name).c_str());
  H5L_info_t link{};
  CAGRA_H5_EXPECTS(H5Lget_info(f.get(), name, &link, lapl.get()) >= 0,
                   "%s: cannot read the link '%s' (corrupt file)", file.c_str(),
                   shown(name).c_str());
  CAGRA_EXPECTS(link.type != H5L_TYPE_EXTERNAL,
                "%s: '%s' is an external link (it names a dataset in another file); cagra "
                "refuses to follow it",
                file.c_str(), shown(name).c_str());
  CAGRA_EXPECTS(link.type == H5L_TYPE_HARD || link.type == H5L_TYPE_SOFT,
                "%s: '%s' is a user-defined link (type %d); cagra refuses to follow it",
                file.c_str(), shown(name).c_str(), static_cast<int>(link.type));
  handle d(H5Dopen2(f.get(), name, dapl.get()), H5Dclose);
  CAGRA_H5_EXPECTS(d.ok(), "%s: '%s' is not a dataset (or its header is corrupt)", file.c_str(),
                   shown(name).c_str());

  // ---- everything the metadata can tell, before any data is read ----
  doing = "checking the dataset";
  ctx.phase(doing);
  handle dcpl(H5Dget_create_plist(d.get()), H5Pclose);
  CAGRA_H5_EXPECTS(dcpl.ok(), "%s: cannot read the dataset's storage properties (corrupt file)",
                   where.c_str());
  const int n_external = H5Pget_external_count(dcpl.get());
  CAGRA_H5_EXPECTS(n_external >= 0, "%s: cannot read the dataset's storage list (corrupt file)",
                   where.c_str());
  if (n_external > 0) {
    char target[256] = "";
    off_t offset = 0;
    hsize_t bytes = 0;
    H5Pget_external(dcpl.get(), 0, sizeof(target), target, &offset, &bytes);
    target[sizeof(target) - 1] = '\0';
    CAGRA_FAIL(
        "%s: the dataset uses external storage (its data lives outside the HDF5 file, in %d "
        "other file(s), the first '%s'); cagra refuses to read external storage",
        where.c_str(), n_external, shown(target).c_str());
  }
  const H5D_layout_t layout = H5Pget_layout(dcpl.get());
  CAGRA_EXPECTS(layout != H5D_VIRTUAL,
                "%s: the dataset is a virtual dataset (H5D_VIRTUAL: its data is mapped from "
                "other datasets, possibly in other files); cagra refuses to follow the mapping: "
                "copy the data into a regular dataset",
                where.c_str());
  CAGRA_H5_EXPECTS(layout == H5D_CONTIGUOUS || layout == H5D_COMPACT || layout == H5D_CHUNKED,
                   "%s: unknown storage layout %d (corrupt file)", where.c_str(),
                   static_cast<int>(layout));

  handle space(H5Dget_space(d.get()), H5Sclose);
  CAGRA_H5_EXPECTS(space.ok() && H5Sget_simple_extent_type(space.get()) == H5S_SIMPLE,
                   "%s: the dataset is not an array (scalar or empty dataspace); expected a 2-D "
                   "array",
                   where.c_str());
  const int rank = H5Sget_simple_extent_ndims(space.get());
  CAGRA_EXPECTS(rank == 1 || rank == 2,
                "%s: dataset has %d dimensions; expected a 2-D array "
                "(or 1-D for a single row)",
                where.c_str(), rank);
  hsize_t dims[2] = {0, 0};
  CAGRA_H5_EXPECTS(H5Sget_simple_extent_dims(space.get(), dims, nullptr) == rank,
                   "%s: cannot read the dataset's dimensions (corrupt file)", where.c_str());
  const uint64_t rows = rank == 2 ? dims[0] : 1;
  const uint64_t cols = rank == 2 ? dims[1] : dims[0];
  CAGRA_EXPECTS(rows > 0 && cols > 0, "%s: dataset is %llu x %llu; zero rows or columns",
                where.c_str(), (unsigned long long)rows, (unsigned long long)cols);

  handle type(H5Dget_type(d.get()), H5Tclose);
  CAGRA_H5_EXPECTS(type.ok(), "%s: cannot read the element type (corrupt file)", where.c_str());
  const element_type et = pick_type(type.get(), q.as_ids, where);
  const size_t size = H5Tget_size(type.get());

  const uint64_t count = mul_checked(rows, cols, where, "dataset element count");
  const uint64_t raw_bytes = mul_checked(count, size, where, "dataset size");
  const uint64_t out_bytes = mul_checked(count, dtype_size(et.out), where, "dataset size");
  // The bytes the dataset occupies in the file: 0 when unallocated (and on error).
  const uint64_t storage = H5Dget_storage_size(d.get());
  hsize_t chunk[2] = {0, 0};
  uint64_t chunk_bytes = 0;   // decompressed; 0 unless chunked
  uint64_t cache_chunks = 0;  // the chunks of one row of chunks
  uint64_t cache_bytes = 0;   // and their bytes
  const int n_filters = H5Pget_nfilters(dcpl.get());
  CAGRA_H5_EXPECTS(n_filters >= 0, "%s: cannot read the dataset's filters (corrupt file)",
                   where.c_str());
  if (layout != H5D_CHUNKED) {
    CAGRA_EXPECTS(n_filters == 0, "%s: %d filter(s) on a dataset that is not chunked (corrupt)",
                  where.c_str(), n_filters);
    // Uncompressed storage holds exactly rows * cols * element-size bytes, inside the file.
    CAGRA_EXPECTS(raw_bytes <= file_size,
                  "%s: dataset claims %llu x %llu values of %zu bytes (%llu bytes), more than "
                  "the %llu-byte file holds",
                  where.c_str(), (unsigned long long)rows, (unsigned long long)cols, size,
                  (unsigned long long)raw_bytes, (unsigned long long)file_size);
  }
  CAGRA_EXPECTS(storage > 0,
                "%s: the dataset has no data stored (created but never written: it would read "
                "as fill values)",
                where.c_str());
  CAGRA_EXPECTS(storage <= file_size,
                "%s: the dataset claims %llu bytes of storage, more than the %llu-byte file "
                "holds (truncated or corrupt)",
                where.c_str(), (unsigned long long)storage, (unsigned long long)file_size);
  if (layout != H5D_CHUNKED) {
    CAGRA_EXPECTS(storage == raw_bytes,
                  "%s: the dataset stores %llu bytes, but %llu x %llu values of %zu bytes are "
                  "%llu (corrupt)",
                  where.c_str(), (unsigned long long)storage, (unsigned long long)rows,
                  (unsigned long long)cols, size, (unsigned long long)raw_bytes);
    if (layout == H5D_CONTIGUOUS) {
      const haddr_t at = H5Dget_offset(d.get());
      CAGRA_EXPECTS(at != HADDR_UNDEF && at <= file_size - raw_bytes,
                    "%s: the dataset's %llu bytes at offset %llu run past the end of the "
                    "%llu-byte file (truncated or corrupt)",
                    where.c_str(), (unsigned long long)raw_bytes, (unsigned long long)at,
                    (unsigned long long)file_size);
    }
  } else {
    hsize_t cdims[H5S_MAX_RANK] = {};
    const int chunk_rank = H5Pget_chunk(dcpl.get(), H5S_MAX_RANK, cdims);
    CAGRA_EXPECTS(chunk_rank == rank, "%s: chunks of rank %d in a rank-%d dataset (corrupt)",
                  where.c_str(), chunk_rank, rank);
    chunk[0] = rank == 2 ? cdims[0] : 1;
    chunk[1] = rank == 2 ? cdims[1] : cdims[0];
    CAGRA_EXPECTS(chunk[0] > 0 && chunk[1] > 0, "%s: a chunk dimension is 0 (corrupt)",
                  where.c_str());
    CAGRA_EXPECTS(!__builtin_mul_overflow(uint64_t{chunk[0]}, uint64_t{chunk[1]}, &chunk_bytes) &&
                      !__builtin_mul_overflow(chunk_bytes, uint64_t{size}, &chunk_bytes) &&
                      chunk_bytes <= kMaxChunkBytes,
                  "%s: chunks of %llu x %llu values of %zu bytes exceed the %llu MiB that cagra "
                  "accepts (rewrite the file with smaller chunks)",
                  where.c_str(), (unsigned long long)chunk[0], (unsigned long long)chunk[1], size,
                  (unsigned long long)(kMaxChunkBytes >> 20));
    const uint64_t col_chunks = (cols + chunk[1] - 1) / chunk[1];
    const uint64_t n_chunks =
        mul_checked((rows + chunk[0] - 1) / chunk[0], col_chunks, where, "chunk count");
    // The read caches one row of chunks (a 1-D dataset: one chunk); bound it.
    cache_chunks = rank == 2 ? col_chunks : 1;
    CAGRA_EXPECTS(!__builtin_mul_overflow(chunk_bytes, cache_chunks, &cache_bytes) &&
                      cache_bytes <= kMaxChunkRowBytes,
                  "%s: one row of chunks (%llu chunks of %llu x %llu) holds more than the %llu "
                  "MiB that cagra caches while it reads (rewrite the file with chunks of fewer "
                  "rows)",
                  where.c_str(), (unsigned long long)cache_chunks, (unsigned long long)chunk[0],
                  (unsigned long long)chunk[1], (unsigned long long)(kMaxChunkRowBytes >> 20));
    bool deflate = false;
    bool fletcher = false;
    for (int i = 0; i < n_filters; ++i) {
      unsigned flags = 0;
      unsigned config = 0;
      size_t n_values = 0;  // 0: the filter's parameters are not needed
      char fname[128] = "";
      const H5Z_filter_t id = H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags,
                                             &n_values, nullptr, sizeof(fname), fname, &config);
      fname[sizeof(fname) - 1] = '\0';
      const std::string label = fname[0] != '\0' ? " ('" + shown(fname, 40) + "')" : "";
      CAGRA_EXPECTS(
          id == H5Z_FILTER_DEFLATE || id == H5Z_FILTER_SHUFFLE || id == H5Z_FILTER_FLETCHER32,
          "%s: the dataset uses HDF5 filter %d%s, which cagra does not read; accepted: deflate "
          "(gzip), shuffle, fletcher32 (rewrite the file with gzip compression or none)",
          where.c_str(), static_cast<int>(id), label.c_str());
      CAGRA_EXPECTS(H5Zfilter_avail(id) > 0, "%s: this libhdf5 lacks HDF5 filter %d%s",
                    where.c_str(), static_cast<int>(id), label.c_str());
      deflate = deflate || id == H5Z_FILTER_DEFLATE;
      fletcher = fletcher || id == H5Z_FILTER_FLETCHER32;
    }
#if H5_VERSION_GE(1, 10, 5)
    hsize_t stored_chunks = 0;
    CAGRA_H5_EXPECTS(H5Dget_num_chunks(d.get(), space.get(), &stored_chunks) >= 0,
                     "%s: cannot read the dataset's chunk index (corrupt file)", where.c_str());
    CAGRA_EXPECTS(stored_chunks == n_chunks,
                  "%s: %llu of the dataset's %llu chunks are stored (a missing chunk would "
                  "read as fill values; truncated or corrupt file)",
                  where.c_str(), (unsigned long long)stored_chunks, (unsigned long long)n_chunks);
#endif
    if (!deflate) {
      // Unfiltered (or shuffled) chunks are stored whole, edge chunks included; fletcher32
      // adds a 4-byte checksum to each.
      const uint64_t expect =
          mul_checked(n_chunks, chunk_bytes + (fletcher ? 4 : 0), where, "chunk storage");
      CAGRA_EXPECTS(storage == expect,
                    "%s: the dataset stores %llu bytes, but its %llu uncompressed chunks are "
                    "%llu (corrupt)",
                    where.c_str(), (unsigned long long)storage, (unsigned long long)n_chunks,
                    (unsigned long long)expect);
    } else {
      const uint64_t expanded = mul_checked(n_chunks, chunk_bytes, where, "chunk storage");
      CAGRA_EXPECTS(expanded / kDeflateMaxRatio <= storage,
                    "%s: %llu bytes of compressed chunks cannot expand to the %llu bytes the "
                    "dataset claims (deflate expands at most %llu:1; corrupt)",
                    where.c_str(), (unsigned long long)storage, (unsigned long long)expanded,
                    (unsigned long long)kDeflateMaxRatio);
    }
  }

  // ---- the read ----
  // Results go to the caller in pieces of about kPieceBytes: whole rows (for a 1-D dataset,
  // runs of elements), each a progress step. A chunked dataset is read through a chunk cache
  // that holds one row of chunks, so that each chunk is decompressed once although a piece
  // covers only part of it.
  const uint64_t unit_bytes = (rank == 2 ? cols : 1) * dtype_size(et.out);
  const uint64_t units = rank == 2 ? rows : cols;
  const uint64_t piece_units = std::max<uint64_t>(1, kPieceBytes / unit_bytes);
  // Working memory: the chunk cache, a chunk and its compressed copy (deflate grows its output
  // buffer by doubling), and a piece of 64-bit ids before they are narrowed.
  const uint64_t working =
      cache_bytes + 3 * chunk_bytes + (et.wide_ids ? 2 * piece_units * unit_bytes : 0);
  ctx.meta[kMetaFound] = 1;
  ctx.meta[kMetaType] = static_cast<uint64_t>(et.out);
  ctx.meta[kMetaRows] = rows;
  ctx.meta[kMetaCols] = cols;
  ctx.meta[kMetaFromFloat64] = !q.as_ids && et.out == dtype::f32 && size == 8 ? 1 : 0;
  ctx.begin_result(out_bytes, piece_units * unit_bytes, working);
  doing = "reading the dataset";
  ctx.phase(doing);
  std::optional<handle> cached;  // the dataset again, opened with the chunk cache
  if (layout == H5D_CHUNKED) {
    handle cache_apl(H5Pcopy(dapl.get()), H5Pclose);
    const size_t slots = static_cast<size_t>(std::max<uint64_t>(521, 2 * cache_chunks + 1));
    CAGRA_H5_EXPECTS(cache_apl.ok() && H5Pset_chunk_cache(cache_apl.get(), slots,
                                                          cache_bytes + chunk_bytes, 1.0) >= 0,
                     "%s: cannot set up the chunk cache", where.c_str());
    cached.emplace(H5Dopen2(f.get(), name, cache_apl.get()), H5Dclose);
    CAGRA_H5_EXPECTS(cached->ok(), "%s: cannot reopen the dataset", where.c_str());
  }
  const hid_t dset = cached ? cached->get() : d.get();
  handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  conv_state conv;
  CAGRA_H5_EXPECTS(dxpl.ok() && H5Pset_type_conv_cb(dxpl.get(), refuse_overflow, &conv) >= 0,
                   "%s: cannot set up the HDF5 transfer", where.c_str());
  std::vector<int64_t> wide;  // ids: one piece as 64-bit integers
  if (et.wide_ids) wide.resize(static_cast<size_t>(piece_units * unit_bytes / 4));

  for (uint64_t u0 = 0; u0 < units; u0 += piece_units) {
    const uint64_t n = std::min(piece_units, units - u0);
    const hsize_t start[2] = {u0, 0};
    const hsize_t shape[2] = {n, cols};  // rank 1: {n}
    const bool selected =
        H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start, nullptr, shape, nullptr) >= 0;
    handle mspace(H5Screate_simple(rank, shape, nullptr), H5Sclose);
    CAGRA_H5_EXPECTS(selected && mspace.ok(), "%s: cannot select %s %llu..%llu", where.c_str(),
                     rank == 2 ? "rows" : "elements", (unsigned long long)u0,
                     (unsigned long long)(u0 + n - 1));
    void* out = ctx.stage(u0 * unit_bytes, n * unit_bytes);
    const herr_t got = H5Dread(dset, et.mem, mspace.get(), space.get(), dxpl.get(),
                               et.wide_ids ? static_cast<void*>(wide.data()) : out);
    CAGRA_EXPECTS(got >= 0 || !conv.overflow,
                  "%s: a value in %s %llu..%llu does not fit in float32", where.c_str(),
                  rank == 2 ? "rows" : "elements", (unsigned long long)u0,
                  (unsigned long long)(u0 + n - 1));
    CAGRA_H5_EXPECTS(got >= 0, "%s: cannot read the dataset (corrupt or truncated file)",
                     where.c_str());
    if (et.wide_ids) {  // narrow to u32, checking the range
      const uint64_t first = u0 * unit_bytes / 4;
      const uint64_t m = n * unit_bytes / 4;
      auto* ids = static_cast<uint32_t*>(out);
      for (uint64_t j = 0; j < m; ++j) {
        // Unsigned 64-bit values were read into the same bits; compare them as unsigned.
        const int64_t v = wide[j];
        const bool ok = et.ids_signed ? (v >= 0 && v <= int64_t{UINT32_MAX})
                                      : static_cast<uint64_t>(v) <= UINT32_MAX;
        const uint64_t at = first + j;
        CAGRA_EXPECTS(
            ok, "%s: neighbor id at row %llu, column %llu is %s (ids must be in [0, 2^32))",
            where.c_str(), (unsigned long long)(at / cols), (unsigned long long)(at % cols),
            et.ids_signed && v < 0 ? "negative" : "too large");
        ids[j] = static_cast<uint32_t>(v);
      }
    }
    ctx.commit(u0 * unit_bytes, n * unit_bytes);
  }
}

#undef CAGRA_H5_EXPECTS

}  // namespace cagra::io::detail::h5

#endif  // CAGRA_HAVE_HDF5
