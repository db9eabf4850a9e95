// The index's user labels and tombstones (cagra/index.hpp): the label -> row lookup, set_labels,
// and the bitset of live rows that remove() starts.
#include <algorithm>

#include <cagra/index.hpp>

#include "core/update/editor.hpp"

namespace cagra {

int64_t index::row_of(int64_t label) const {
  if (labels_.empty()) return label >= 0 && label < size() ? label : -1;
  auto it = std::lower_bound(label_rows_.begin(), label_rows_.end(),
                             std::pair<int64_t, uint32_t>{label, 0u});
  return it != label_rows_.end() && it->first == label ? int64_t{it->second} : -1;
}

void index::set_labels(std::vector<int64_t> labels) {
  CAGRA_EXPECTS(int64_t(labels.size()) == size(), "%zu labels given for an index of %lld rows",
                labels.size(), (long long)size());
  std::vector<int64_t> old = std::move(labels_);
  labels_ = std::move(labels);
  labels_stamp_ = row_filter::new_stamp();  // (again if restored: a copy may hold either)
  try {
    detail::index_editor::index_labels(*this);
  } catch (...) {
    labels_ = std::move(old);
    detail::index_editor::index_labels(*this);
    throw;
  }
}

namespace detail {

void index_editor::index_labels(index& i) {
  std::vector<std::pair<int64_t, uint32_t>> rows;
  rows.reserve(i.labels_.size());
  for (size_t r = 0; r < i.labels_.size(); ++r) rows.emplace_back(i.labels_[r], uint32_t(r));
  std::sort(rows.begin(), rows.end());
  CAGRA_EXPECTS(rows.empty() || rows.front().first >= 0,
                "label %lld (row %u) is negative: labels are >= 0 (-1 marks an empty result slot)",
                (long long)(rows.empty() ? 0 : rows.front().first),
                rows.empty() ? 0u : rows.front().second);
  for (size_t r = 1; r < rows.size(); ++r)
    CAGRA_EXPECTS(rows[r].first != rows[r - 1].first,
                  "label %lld is given to two rows (%u and %u): labels must be unique",
                  (long long)rows[r].first, rows[r - 1].second, rows[r].second);
  i.label_rows_ = std::move(rows);
}

void index_editor::reserve_labels(index& i, int64_t rows) {
  if (i.labels_.empty()) {  // the existing rows' labels become their row numbers
    i.labels_stamp_ = row_filter::new_stamp();
    const int64_t n = i.size();
    i.labels_.resize(size_t(n));
    i.label_rows_.resize(size_t(n));
    for (int64_t r = 0; r < n; ++r) {
      i.labels_[size_t(r)] = r;
      i.label_rows_[size_t(r)] = {r, uint32_t(r)};
    }
  }
  // Grown by half again at least, so that many small extends copy the labels rarely.
  const size_t room = std::max(size_t(rows), i.labels_.size() + i.labels_.size() / 2);
  if (i.labels_.capacity() < size_t(rows)) i.labels_.reserve(room);
  if (i.label_rows_.capacity() < size_t(rows)) i.label_rows_.reserve(room);
}

void index_editor::append_labels(index& i, const int64_t* labels, int64_t n) {
  const int64_t old_rows = int64_t(i.labels_.size());
  i.labels_stamp_ = row_filter::new_stamp();
  i.labels_.insert(i.labels_.end(), labels, labels + n);
  const size_t mid = i.label_rows_.size();
  for (int64_t r = 0; r < n; ++r) i.label_rows_.push_back({labels[r], uint32_t(old_rows + r)});
  std::sort(i.label_rows_.begin() + int64_t(mid), i.label_rows_.end());
  std::inplace_merge(i.label_rows_.begin(), i.label_rows_.begin() + int64_t(mid),
                     i.label_rows_.end());
}

void index_editor::start_tombstones(index& i) {
  const int64_t n = i.size();
  std::vector<uint32_t>& live = index_editor::live(i);
  live.assign(size_t((n + 31) / 32), ~0u);
  if (n & 31) live.back() = (1u << (n & 31)) - 1u;
  i.deleted_ = 0;
}

}  // namespace detail
}  // namespace cagra
