// cagra::remove and cagra::compact (docs/living_index.md).
//
// remove marks rows deleted in the index's bitset of live rows; every search ANDs it with the
// caller's filter (core::visible_rows), so a deleted row is never returned while the graph keeps
// walking through it. compact drops the deleted rows:
//  1. each live row that pointed at deleted rows keeps its live edges, in order, and refills the
//     freed slots through the deleted neighbours' own neighbours (then theirs, one level more),
//     in rank order, with the build's rank rule: a candidate that a kept neighbour already links
//     to is a detour and comes after every other candidate; then 2-hop rows through kept
//     neighbours, then (tiny graphs only) any live row;
//  2. a live row that nobody points at any more gets an in-edge from the first of its own
//     neighbours that can take one (core::insert_in_edge);
//  3. rows are renumbered in order; labels follow their rows (an index without labels gets its
//     old row numbers as labels, so the ids users hold stay valid).
// Like the build's optimization, compaction needs no vectors or distances and is deterministic;
// it runs on the host for both backends.
#include <algorithm>
#include <cstring>
#include <numeric>

#include <omp.h>

#include <cagra/cagra.hpp>

#include "core/backend.hpp"
#include "core/update/editor.hpp"
#include "core/update/graph_edit.hpp"

namespace cagra {
namespace {

using detail::index_editor;

/** The rows of `labels` (row numbers for an index without labels); throws for an unknown, deleted
 *  or repeated one. */
std::vector<uint32_t> rows_to_remove(const index& idx, const int64_t* labels, int64_t n) {
  std::vector<uint32_t> rows(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = idx.row_of(labels[i]);
    CAGRA_EXPECTS(r >= 0, "remove: label %lld (position %lld) is not in the index",
                  (long long)labels[i], (long long)i);
    CAGRA_EXPECTS(!idx.is_deleted(r), "remove: label %lld (position %lld) was removed before",
                  (long long)labels[i], (long long)i);
    rows[size_t(i)] = uint32_t(r);
  }
  std::vector<uint32_t> sorted = rows;
  std::sort(sorted.begin(), sorted.end());
  auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  CAGRA_EXPECTS(dup == sorted.end(), "remove: label %lld is listed twice",
                (long long)idx.label_of(dup == sorted.end() ? 0 : *dup));
  return rows;
}

/** Per-thread marks over the rows (epoch stamps: no clearing between rows). */
struct repair_scratch {
  std::vector<uint32_t> in_row, seen, linked;  // out or x / a candidate / linked by a kept row
  std::vector<uint32_t> cands, level, next;
  uint32_t epoch = 0;
  explicit repair_scratch(int64_t n) : in_row(size_t(n)), seen(size_t(n)), linked(size_t(n)) {}
};

/** The repaired row of live `x` (old ids; degree entries), step 1 above. */
void repair_row(const index& idx, uint32_t x, uint32_t* out, repair_scratch& s) {
  const uint32_t d = idx.graph_degree();
  const uint32_t* own = idx.graph().row(x);
  if (std::none_of(own, own + d, [&](uint32_t id) { return idx.is_deleted(id); })) {
    std::copy(own, own + d, out);
    return;
  }
  const uint32_t e = ++s.epoch;
  const size_t max_cands = 4 * size_t{d};
  auto nbrs = [&](uint32_t v) { return idx.graph().row(v); };
  uint32_t n_out = 0;
  auto add = [&](uint32_t id) {
    out[n_out++] = id;
    s.in_row[id] = e;
  };
  s.in_row[x] = e;
  for (uint32_t t = 0; t < d; ++t)
    if (!idx.is_deleted(nbrs(x)[t])) add(nbrs(x)[t]);
  const uint32_t kept = n_out;
  for (uint32_t k = 0; k < kept; ++k)
    for (uint32_t t = 0; t < d; ++t) s.linked[nbrs(out[k])[t]] = e;
  // Candidates through the deleted neighbours, then through theirs, in rank order.
  s.cands.clear();
  s.level.assign(1, x);
  for (int depth = 0; depth < 2 && s.cands.size() < max_cands; ++depth) {
    s.next.clear();
    for (uint32_t v : s.level)
      for (uint32_t t = 0; t < d; ++t) {
        const uint32_t dn = nbrs(v)[t];
        if (!idx.is_deleted(dn)) continue;
        s.next.push_back(dn);
        for (uint32_t u = 0; u < d && s.cands.size() < max_cands; ++u) {
          const uint32_t c = nbrs(dn)[u];
          if (idx.is_deleted(c) || s.in_row[c] == e || s.seen[c] == e) continue;
          s.seen[c] = e;
          s.cands.push_back(c);
        }
      }
    std::swap(s.level, s.next);
  }
  // The rank rule: candidates a kept neighbour links to come last.
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t c : s.cands)
      if (n_out < d && (s.linked[c] == e) == (pass == 1) && s.in_row[c] != e) add(c);
  for (uint32_t k = 0; k < kept && n_out < d; ++k)  // 2-hop through kept neighbours
    for (uint32_t t = 0; t < d && n_out < d; ++t) {
      const uint32_t c = nbrs(out[k])[t];
      if (!idx.is_deleted(c) && s.in_row[c] != e) add(c);
    }
  const int64_t n = idx.size();
  for (int64_t step = 1; step < n && n_out < d; ++step) {  // tiny graphs: any live row
    const uint32_t c = uint32_t((x + step) % n);
    if (!idx.is_deleted(c) && s.in_row[c] != e) add(c);
  }
}

}  // namespace

int64_t remove(const resources& res, index& idx, const int64_t* labels, int64_t n,
               double compact_above) {
  CAGRA_EXPECTS(n >= 0 && (n == 0 || labels != nullptr), "remove: no labels given");
  CAGRA_EXPECTS(compact_above >= 0 && compact_above <= 1,
                "remove: compact_above must be in [0, 1] (got %g)", compact_above);
  const std::vector<uint32_t> rows = rows_to_remove(idx, labels, n);
  if (rows.empty()) return 0;
  if (idx.deleted_count() == 0) index_editor::start_tombstones(idx);
  std::vector<uint32_t>& live = index_editor::live(idx);
  for (uint32_t r : rows) live[r >> 5] &= ~(1u << (r & 31));
  index_editor::deleted(idx) += n;
  if (compact_above > 0 && double(idx.deleted_count()) > compact_above * double(idx.size()))
    compact(res, idx);
  return n;
}

void compact(const resources& res, index& idx) {
  if (idx.deleted_count() == 0) return;
  const uint32_t d = idx.graph_degree();
  const int64_t n = idx.size(), m = idx.live_size();
  CAGRA_EXPECTS(m > int64_t{d},
                "compact: %lld rows would remain, but graph degree %u needs at least %u rows",
                (long long)m, d, d + 1);
  const int nt = core::host_threads(res.num_threads);
  std::vector<uint32_t> new_id(static_cast<size_t>(n), kInvalidId), old_id(static_cast<size_t>(m));
  for (int64_t r = 0, k = 0; r < n; ++r)
    if (!idx.is_deleted(r)) {
      new_id[size_t(r)] = uint32_t(k);
      old_id[size_t(k++)] = uint32_t(r);
    }

  // 1. Repaired rows, old ids.
  std::vector<uint32_t> g(static_cast<size_t>(m) * d);
#pragma omp parallel num_threads(nt)
  {
    repair_scratch scratch(n);
#pragma omp for schedule(dynamic, 256)
    for (int64_t k = 0; k < m; ++k) repair_row(idx, old_id[size_t(k)], g.data() + k * d, scratch);
  }
  for (uint32_t& id : g) id = new_id[id];

  // 2. In-edges for rows nobody points at.
  std::vector<uint32_t> in_degree = core::in_degrees(g, m, m);
  auto never_deleted = [](uint32_t) { return false; };
  for (int64_t w = 0; w < m; ++w)
    for (uint32_t s = 0; s < d && in_degree[size_t(w)] == 0; ++s)
      core::insert_in_edge(g.data() + size_t(g[size_t(w) * d + s]) * d, d, uint32_t(w), in_degree,
                           never_deleted);

  // 3. Renumbered rows and labels.
  const host_matrix& old_vec = idx.vectors();
  host_matrix vec(old_vec.type(), m, old_vec.cols());
  const size_t row_bytes = size_t(old_vec.cols()) * dtype_size(old_vec.type());
  auto* dst = static_cast<uint8_t*>(vec.data());
  for (int64_t k = 0; k < m; ++k)
    std::memcpy(dst + size_t(k) * row_bytes, old_vec.row_bytes(old_id[size_t(k)]), row_bytes);
  std::vector<int64_t> lab(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k) lab[size_t(k)] = idx.label_of(old_id[size_t(k)]);

  index_editor::vectors(idx) = std::move(vec);
  index_editor::graph(idx) = std::move(g);
  index_editor::labels(idx) = std::move(lab);
  index_editor::live(idx).clear();
  index_editor::deleted(idx) = 0;
  index_editor::index_labels(idx);
  index_editor::drop_backend_state(idx);
}

}  // namespace cagra
