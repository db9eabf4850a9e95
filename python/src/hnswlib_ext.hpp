// The hnswlib export of the extension module (hnswlib_ext.cpp): Index.to_hnswlib's binding.
// cagra_ext.cpp owns the Index type and its lock; it hands this file a reader that calls a
// function with the cagra::index inside an Index object, held for reading with the GIL released.
#pragma once

#include <functional>

#include <nanobind/nanobind.h>

#include <cagra/index.hpp>

/** Calls `f` with the index inside the extension's Index object `index` (read-locked). */
using read_index_fn = void (*)(nanobind::handle index,
                               const std::function<void(const cagra::index&)>& f);

/** Adds `_export_hnswlib(index, path, M, seed, ef_construction, backend, num_threads)` (a dict of
 *  cagra::hnswlib_export_report's fields back) to the module. */
void bind_hnswlib(nanobind::module_& m, read_index_fn read_index);
