// The living index from Python: extend, remove and compact change an Index in place while other
// Python threads may search it (py_index's lock), and refuse to move its memory while a numpy
// view of it is alive (BufferError). The pythonic layer is python/cagra/_living.py.
#include <utility>

#include "ext_common.hpp"

namespace cagra_py {

void extend(py_index& p, any_array vectors, std::optional<labels_in> labels,
            const cagra::extend_params& params, cagra::backend target, int num_threads) {
  vectors_in data(std::move(vectors), "vectors");
  if (labels) check_labels(*labels, data.rows(), "vectors");
  write_locked(
      p, "extend", [](const cagra::index&) { return true; },
      [&](cagra::index& idx) {
        cagra::extend(make_resources(target, num_threads), params, idx, data.host(),
                      labels ? labels->data() : nullptr);
      });
}

int64_t remove_rows(py_index& p, const labels_in& labels, double compact_above,
                    cagra::backend target, int num_threads) {
  const auto n = static_cast<int64_t>(labels.shape(0));
  // Only a removal that compacts moves memory (cagra::remove's rule for compact_above).
  auto compacts = [&](const cagra::index& idx) {
    return compact_above > 0 &&
           double(idx.deleted_count() + n) > compact_above * double(idx.size());
  };
  return write_locked(p, "remove (compacting)", compacts, [&](cagra::index& idx) {
    return cagra::remove(make_resources(target, num_threads), idx, labels.data(), n, compact_above);
  });
}

void compact(py_index& p, cagra::backend target, int num_threads) {
  write_locked(
      p, "compact", [](const cagra::index& idx) { return idx.deleted_count() > 0; },
      [&](cagra::index& idx) { cagra::compact(make_resources(target, num_threads), idx); });
}

}  // namespace cagra_py
