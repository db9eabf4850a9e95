// cagra::remove and cagra::compact (docs/living_index.md).
//
// remove marks rows deleted in the index's bitset of live rows; every search ANDs it with the
// caller's filter (core::visible_rows), so a deleted row is never returned while the graph keeps
// walking through it. compact drops the deleted rows:
//  1. each live row that pointed at deleted rows keeps its live edges, in order, and refills the
//     freed slots from a pool: the deleted neighbours' own neighbours (then theirs, one level
//     more) and 2-hop rows through kept neighbours, ordered by distance to the row, with the
//     build's rank rule: a candidate that a kept neighbour already links to is a detour and comes
//     after every other candidate; (tiny graphs only) then any live row;
//  2. the first d / 2 refills of a row ask to be pointed back at, as extend's reverse edges do
//     (at most d / 4 per row, each replacing the weakest replaceable edge), and a live row that
//     nobody points at any more gets an in-edge from the first of its own neighbours that can
//     take one (core::insert_in_edge);
//  3. rows are renumbered in order; labels follow their rows (an index without labels gets its
//     old row numbers as labels, so the ids users hold stay valid).
// Compaction is deterministic and runs on the host for both backends (the distances of step 1
// come from the CPU backend's kernels, core::row_distances).
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
  std::vector<uint32_t> cands, level, next, order;
  std::vector<float> dist;
  uint32_t epoch = 0;
  explicit repair_scratch(int64_t n) : in_row(size_t(n)), seen(size_t(n)), linked(size_t(n)) {}
};

/** The repaired row of live `x` (old ids; degree entries), step 1 above. Returns how many of
 *  its first entries are the row's own live edges (the rest are refills). */
uint32_t repair_row(const index& idx, uint32_t x, uint32_t* out, repair_scratch& s) {
  const uint32_t d = idx.graph_degree();
  const uint32_t* own = idx.graph().row(x);
  if (std::none_of(own, own + d, [&](uint32_t id) { return idx.is_deleted(id); })) {
    std::copy(own, own + d, out);
    return d;
  }
  const uint32_t e = ++s.epoch;
  // The pool: up to 4d rows through deleted neighbours, then up to 2d more through kept ones.
  const size_t max_deleted_path = 4 * size_t{d}, max_cands = 6 * size_t{d};
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
  for (int depth = 0; depth < 2 && s.cands.size() < max_deleted_path; ++depth) {
    s.next.clear();
    for (uint32_t v : s.level)
      for (uint32_t t = 0; t < d; ++t) {
        const uint32_t dn = nbrs(v)[t];
        if (!idx.is_deleted(dn)) continue;
        s.next.push_back(dn);
        for (uint32_t u = 0; u < d && s.cands.size() < max_deleted_path; ++u) {
          const uint32_t c = nbrs(dn)[u];
          if (idx.is_deleted(c) || s.in_row[c] == e || s.seen[c] == e) continue;
          s.seen[c] = e;
          s.cands.push_back(c);
        }
      }
    std::swap(s.level, s.next);
  }
  // 2-hop rows through kept neighbours join the pool; the pool is ordered by distance to x.
  for (uint32_t k = 0; k < kept && s.cands.size() < max_cands; ++k)
    for (uint32_t t = 0; t < d && s.cands.size() < max_cands; ++t) {
      const uint32_t c = nbrs(out[k])[t];
      if (idx.is_deleted(c) || s.in_row[c] == e || s.seen[c] == e) continue;
      s.seen[c] = e;
      s.cands.push_back(c);
    }
  s.dist.resize(s.cands.size());
  core::row_distances(idx.vectors(), idx.metric(), x, s.cands.data(), s.cands.size(),
                      s.dist.data());
  s.order.resize(s.cands.size());
  for (uint32_t i = 0; i < s.order.size(); ++i) s.order[i] = i;
  std::sort(s.order.begin(), s.order.end(), [&](uint32_t a, uint32_t b) {
    return s.dist[a] != s.dist[b] ? s.dist[a] < s.dist[b] : s.cands[a] < s.cands[b];
  });
  // The rank rule: candidates a kept neighbour links to come last.
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t i : s.order) {
      const uint32_t c = s.cands[i];
      if (n_out < d && (s.linked[c] == e) == (pass == 1) && s.in_row[c] != e) add(c);
    }
  const int64_t n = idx.size();
  for (int64_t step = 1; step < n && n_out < d; ++step) {  // tiny graphs: any live row
    const uint32_t c = uint32_t((x + step) % n);
    if (!idx.is_deleted(c) && s.in_row[c] != e) add(c);
  }
  return kept;
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
  std::vector<uint32_t> g(static_cast<size_t>(m) * d), kept(static_cast<size_t>(m));
#pragma omp parallel num_threads(nt)
  {
    repair_scratch scratch(n);
#pragma omp for schedule(dynamic, 256)
    for (int64_t k = 0; k < m; ++k)
      kept[size_t(k)] = repair_row(idx, old_id[size_t(k)], g.data() + k * d, scratch);
  }
  for (uint32_t& id : g) id = new_id[id];

  // 2. Reverse edges for a row's first d / 2 refills (extend's step 4: at most d / 4
  //    per row, each replacing the row's weakest replaceable edge), then an in-edge for every
  //    row nobody points at.
  std::vector<uint32_t> in_degree = core::in_degrees(g, m, m, nt);
  auto never_deleted = [](uint32_t) { return false; };
  struct ask {
    uint32_t row, rank, from;
  };
  std::vector<ask> asks;
  for (int64_t w = 0; w < m; ++w)
    for (uint32_t r = kept[size_t(w)]; r < std::min(d, kept[size_t(w)] + d / 2); ++r)
      asks.push_back({g[size_t(w) * d + r], r - kept[size_t(w)], uint32_t(w)});
  std::sort(asks.begin(), asks.end(), [](const ask& a, const ask& c) {
    return a.row != c.row ? a.row < c.row : a.rank != c.rank ? a.rank < c.rank : a.from < c.from;
  });
  const uint32_t quota = std::max(1u, d / 4);
  for (size_t i = 0; i < asks.size();) {
    size_t end = i;
    while (end < asks.size() && asks[end].row == asks[i].row) ++end;
    uint32_t taken = 0;
    for (; i < end && taken < quota; ++i)
      taken += core::insert_in_edge(g.data() + size_t(asks[i].row) * d, d, asks[i].from, in_degree,
                                    never_deleted);
    i = end;
  }
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

  // The backends' copies go first: one may pin the old rows in host memory.
  index_editor::drop_backend_state(idx);
  index_editor::drop_derived(idx);
  index_editor::vectors(idx) = std::move(vec);
  index_editor::graph(idx) = std::move(g);
  index_editor::labels(idx) = std::move(lab);
  index_editor::live(idx).clear();
  index_editor::deleted(idx) = 0;
  index_editor::in_degree(idx).clear();
  index_editor::index_labels(idx);
}

}  // namespace cagra
