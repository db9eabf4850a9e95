// The table below is wider than the column limit: not formatted.
// clang-format off
/**
 * @file io.hpp
 * @brief Reading and writing vector files: fvecs/ivecs/bvecs, fbin/u8bin/i8bin/ibin, npy,
 *        IDX and IDX.gz (Fashion-MNIST), ann-benchmarks HDF5 (when built with HDF5).
 *
 * The format is chosen from the file name's extension (case-insensitive; a trailing ".gz" is
 * allowed for IDX). Every reader checks the whole file against its header (size, dimension,
 * element type) and throws cagra::error with the file name and what is wrong: a truncated,
 * garbled, empty or mismatched file never gives a crash or silently wrong data.
 *
 * | extension                    | element type          | layout                              |
 * |------------------------------|-----------------------|-------------------------------------|
 * | .fvecs / .ivecs / .bvecs     | f32 / i32 / u8        | per row: int32 dim, then dim values |
 * | .fbin / .u8bin / .i8bin      | f32 / u8 / i8         | uint32 rows, uint32 cols, values    |
 * | .ibin                        | i32 (ids)             | as .fbin; may be followed by rows*cols f32 distances |
 * | .npy                         | f4, f2, u1, i1, i4, u4; f8 read as f4 | NumPy v1/v2/v3, C order, 2-D (1-D = one row) |
 * | .idx/-ubyte (optionally .gz) | u8 (images flattened) | IDX magic 0x0000080N, dims          |
 * | .hdf5 / .h5                  | dataset named by `[:name]` suffix, default "train"; float64 read as f32 | |
 */
// clang-format on
#pragma once

#include <string>

#include <cagra/types.hpp>

namespace cagra::io {

/** Reads a matrix; the dtype comes from the file. `path` may end in ":name" for HDF5 to select
 *  a dataset ("file.hdf5:test"). */
host_matrix read_matrix(const std::string& path);

/** What read_matrix converted on the way in. */
struct read_notes {
  /** The file's element type when its values were converted to the matrix's dtype: "float64"
   *  for a .npy '<f8' array or an HDF5 64-bit float dataset, both read as f32 (rounded to
   *  nearest; a value beyond float32's range is an error). Empty when read as stored. */
  std::string converted_from;
};
/** read_matrix that also fills `notes` (the CLI prints a conversion as a note on stderr). */
host_matrix read_matrix(const std::string& path, read_notes& notes);

/** Ground truth / neighbor file: ids (as u32) and, when the file carries them, distances. */
struct neighbors_file {
  host_matrix ids;        ///< u32 [rows, k]
  host_matrix distances;  ///< f32 [rows, k], or empty
};
/** Reads ids from .ibin (with optional trailing distances), .ivecs, .npy (i4/u4/i8/u8) or
 *  HDF5 ("file.hdf5" reads "neighbors" and "distances"). Negative ids are rejected. */
neighbors_file read_neighbors(const std::string& path);

/** Writes `m` in the format named by the extension (.fbin/.u8bin/.i8bin/.ibin/.fvecs/.ivecs/
 *  .bvecs/.npy). The element type must fit the format. The file is written to a temporary name
 *  and renamed, so an existing file is replaced only by a complete one. */
void write_matrix(const std::string& path, dataset_view m);

/** Writes neighbors (u32 ids) and optionally distances to an .ibin file (ids then distances). */
void write_neighbors(const std::string& path, matrix_view<const uint32_t> ids,
                     matrix_view<const float> distances = {});

}  // namespace cagra::io
