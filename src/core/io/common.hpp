// Internal pieces shared by the dataset readers/writers (src/core/io/*.cpp): format detection
// from the file name, a checked file reader, an atomic (temp + rename) file writer, overflow-safe
// size arithmetic, and the per-format entry points that io.cpp dispatches to.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <cagra/io.hpp>
#include <cagra/types.hpp>

// The binary formats are little-endian and the bulk of every file is copied straight into
// memory, so a big-endian host would need byte swapping everywhere; refuse to build there.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "cagra I/O assumes a little-endian host");

namespace cagra::io::detail {

enum class format { fvecs, ivecs, bvecs, fbin, u8bin, i8bin, ibin, npy, idx, hdf5 };

/** What a user path names: the file, its format and (HDF5 only) the dataset after ':'. */
struct path_spec {
  std::string file;     ///< the path without any ":dataset" suffix
  std::string dataset;  ///< HDF5 dataset name, empty when not given
  format fmt = format::fbin;
};

/** Picks the format from the file name (case-insensitive); throws for unknown extensions. */
path_spec parse_path(const std::string& path);
/** ".fvecs", ".npy", "IDX", ... for messages. */
const char* format_name(format f);
/** The extensions every reader accepts, for "unknown extension" messages. */
const char* supported_extensions();

/** Bytes from a file made safe to quote in an error message: printable ASCII as is (a backslash
 *  doubled), every other byte as \xNN, cut after `max_chars` characters of output with "..."
 *  appended. Every message that quotes file contents goes through it, so that a hostile file
 *  cannot put terminal escapes, control bytes, invalid UTF-8 (a UnicodeDecodeError in Python) or
 *  kilobytes of text on the one error line. */
std::string quote_bytes(const std::string& bytes, size_t max_chars = 80);

/** a * b, throwing "<path>: <what> overflows" when it does not fit in 64 bits. */
uint64_t mul_checked(uint64_t a, uint64_t b, const std::string& path, const char* what);

/** A host_matrix whose allocation failure becomes a cagra::error naming the file. `zeroed`
 *  false leaves the bytes as the allocator gives them, for a reader that sets every one (with
 *  input_file::read_bulk, whose threads fault the pages in as they copy). */
host_matrix alloc_matrix(const std::string& path, dtype t, int64_t rows, int64_t cols,
                         bool zeroed = true);

/** What read_pieces did: bytes from the start read before the first that could not be (n when
 *  all were), and the errno of a failed read (0 when the file ended first). */
struct pieces_read {
  uint64_t done = 0;
  int error = 0;
};
/** Reads `n` bytes at `offset` of the open file `fd` into `dst` (the file position is not
 *  used or moved): from 64 MiB on, 16 MiB pieces with pread on up to 8 threads, which copy out
 *  of the page cache and fault the destination's pages in at once (one read of a 1.5 GB body
 *  into zeroed memory took ~1.3 s on a 16-core H200 host, the pieces 0.16 s). */
pieces_read read_pieces(int fd, void* dst, uint64_t n, uint64_t offset);
/** read_pieces that also calls `consume(first, bytes)` for each piece of the body, in file
 *  order, on one thread, as soon as it and every piece before it are read (a short piece and
 *  the ones after it are not handed over), so that work that must run in order overlaps the
 *  reads of later pieces (read_pieces.cpp). `consume` must not throw. */
pieces_read read_pieces_in_order(int fd, void* dst, uint64_t n, uint64_t offset,
                                 const std::function<void(uint64_t, uint64_t)>& consume);

/** Read-only regular file with its size known up front. Every read is exact: a short read is
 *  reported as "truncated <what>" with the path, never as partially filled memory. */
class input_file {
 public:
  /** Throws for a missing path, a directory, a non-regular file, an unreadable or empty file. */
  explicit input_file(const std::string& path);
  ~input_file();
  input_file(const input_file&) = delete;
  input_file& operator=(const input_file&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  uint64_t offset() const { return offset_; }
  uint64_t remaining() const { return size_ - offset_; }

  void read(void* dst, uint64_t n, const char* what);
  /** read() of a matrix's values through read_pieces (threads from 64 MiB on); same errors. */
  void read_bulk(void* dst, uint64_t n, const char* what);
  void seek(uint64_t offset);

 private:
  void expect_room(uint64_t n, const char* what) const;

  std::string path_;
  std::FILE* f_ = nullptr;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
};

/** What `path` names when it exists but is not a regular file, symlinks followed: "a directory",
 *  "a FIFO", "a character device", "a block device", "a socket"; nullptr for a regular file or a
 *  missing path. Writers refuse such a target even when asked to replace it: the rename() that
 *  publishes a new file would put a plain file in place of the pipe or device node. */
const char* non_regular_kind(const std::string& path);
/** Throws "<path>: is <kind>, not a regular file; refusing to replace it" when
 *  non_regular_kind(path) (a directory: "is a directory, cannot write a file there"). */
void check_replaceable(const std::string& path);

/** Removes, from folder `dir`, the temporary files of writers that were killed mid-write (kill -9,
 *  a crash, a power cut): names `<prefix><pid><sep><n>` (decimal pid and n) whose pid is not a
 *  running process (kill(pid, 0) fails with ESRCH) and that nothing has written for a minute.
 *  A live process's temporary is never touched: its pid answers kill(). The minute also spares
 *  a writer whose pid we cannot see (another pid namespace or host sharing the folder), since a
 *  writer keeps updating its file. Best effort: every error is ignored. Called by cagra::save
 *  and output_file for their own naming schemes before they create a new temporary. */
void remove_stale_temporaries(const std::string& dir, const std::string& prefix, char sep);

/** Writes a file under a temporary name (`.<name>.tmp-<pid>-<n>`) in the target's folder and
 *  renames it over the target on commit(). Destroying it uncommitted (an exception) removes the
 *  temporary file, so an existing target is only ever replaced by a complete file; stale
 *  temporaries of the same target left by killed writers are removed first. A target that
 *  exists and is not a regular file (check_replaceable) is refused. Writes are buffered. */
class output_file {
 public:
  explicit output_file(const std::string& target);
  ~output_file();
  output_file(const output_file&) = delete;
  output_file& operator=(const output_file&) = delete;

  void write(const void* data, size_t n);
  void commit();

 private:
  void flush();
  void write_raw(const void* data, size_t n);
  [[noreturn]] void fail(const char* what, int err);

  std::string target_;
  std::string temp_;
  int fd_ = -1;
  bool committed_ = false;
  std::vector<uint8_t> buffer_;
};

/** Checks what every writer needs before any file is touched: host memory, data present,
 *  rows and cols > 0. */
void check_writable(const std::string& path, const dataset_view& m, const char* what);
/** Throws unless every value of a u32 matrix is < 2^31 (so it can be stored as int32). */
void check_u32_fits_i32(const std::string& path, const dataset_view& m);
/** i32 ids as u32, rejecting negative values (message names the row and column). */
host_matrix ids_from_i32(const std::string& path, const host_matrix& m);

// ---- per-format entry points (one .cpp per family) -------------------------------------------

/** .fvecs/.ivecs/.bvecs; `t` is the format's element type. */
host_matrix read_vecs(const std::string& path, dtype t);
void write_vecs(const std::string& path, dtype t, const dataset_view& m);

/** .fbin/.u8bin/.i8bin/.ibin. For `t` == i32 (.ibin) the file may carry rows*cols f32 distances
 *  after the ids; they are returned through `distances` when it is not null. */
host_matrix read_bin(const std::string& path, dtype t, host_matrix* distances);
/** Header + `m` (+ `distances`, when not null, right after). */
void write_bin(const std::string& path, const dataset_view& m, const dataset_view* distances);

/** .npy. With `as_ids` the integer dtypes (i4/u4/i8/u8) are returned as range-checked u32 and
 *  every other dtype is an error; without it i8/u8 (64-bit) are errors. f8 is read as f32; then
 *  `converted_from`, when not null, is set to "float64". */
host_matrix read_npy(const std::string& path, bool as_ids, std::string* converted_from = nullptr);
void write_npy(const std::string& path, const dataset_view& m);

/** IDX / IDX.gz (MNIST family): u8, i8 or f32 rows = dim0, cols = product of the other dims. */
host_matrix read_idx(const std::string& path);

/** How the HDF5 reader runs (hdf5.cpp). Internal on purpose: the public read functions, the CLI
 *  and Python always use the defaults; the tests choose other values through the read_matrix
 *  and read_neighbors overloads below. */
struct hdf5_options {
  /** The reader process is stopped when it makes no progress for this long; in (0, 1e6],
   *  anything else is an error. */
  double timeout_seconds = 60;
  /** Read in the calling process instead of a forked reader process: the same checks, but a
   *  crash inside libhdf5 then ends the caller. Always the case off Linux (isolate.hpp). */
  bool in_process = false;
};

/** One dataset of an HDF5 file. `as_ids`: integer datasets returned as range-checked u32.
 *  When `optional` and the dataset is missing an empty matrix is returned. A 64-bit float
 *  dataset is read as f32; then `converted_from`, when not null, is set to "float64". */
host_matrix read_hdf5(const std::string& file, const std::string& dataset, bool as_ids,
                      bool optional, const hdf5_options& options,
                      std::string* converted_from = nullptr);

/** io::read_matrix and io::read_neighbors (io.cpp) with the HDF5 reader's options; the public
 *  functions call these with hdf5_options{}. Other formats ignore `hdf5`. `converted_from`: as
 *  io::read_notes says. */
host_matrix read_matrix(const std::string& path, const hdf5_options& hdf5,
                        std::string* converted_from = nullptr);
neighbors_file read_neighbors(const std::string& path, const hdf5_options& hdf5);

}  // namespace cagra::io::detail
