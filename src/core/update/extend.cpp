// cagra::extend: inserting new rows into a built index (docs/living_index.md).
//
// The new rows go in chunks. For each chunk:
//  1. candidates: the index's own search finds each new row's nearest existing (live) rows, and
//     an exact kNN among the chunk's rows lets the chunk see itself; the two lists are merged by
//     distance and cut to `candidates` (the build's intermediate degree);
//  2. forward edges: the build's rank-based pruning (core::prune_by_rank) on that list, where an
//     existing candidate's own list is its graph row and a new one's is its candidate list;
//  3. the new rows' graph rows: the pruned list merged with the chunk's own reverse edges, as the
//     build's last step merges (core::merge_row);
//  4. reverse edges into existing rows: each new row asks the first half of its pruned list to
//     point back at it; a row takes at most degree / 4 such edges per chunk, in (rank, new row)
//     order, each replacing its weakest replaceable edge (core::replace_edge): an edge to a
//     deleted row, else one whose target keeps an in-edge however the other asked rows decide
//     (its in-degree exceeds the asked rows that could drop it). Rows are rewritten in parallel
//     and the result does not depend on the threads;
//  5. a new row nobody points at yet gets one in-edge from the first of its neighbours that can
//     take one.
// Steps 2-5 are the same code for both backends; step 1 runs on the backend `res` names. An
// error anywhere leaves the index as it was (rewritten rows are restored from an undo log,
// appended rows cut off).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>

#include <omp.h>

#include <cagra/cagra.hpp>

#include "core/backend.hpp"
#include "core/convert.hpp"
#include "core/int8_traversal.hpp"
#include "core/update/editor.hpp"
#include "core/update/graph_edit.hpp"

namespace cagra {
namespace {

using detail::index_editor;

struct extend_plan {
  uint32_t chunk = 0, candidates = 0, itopk = 0;
};

extend_plan plan_extend(const resources& res, const extend_params& p, const index& idx) {
  const uint32_t d = idx.graph_degree();
  extend_plan e;
  e.chunk =
      p.chunk_size ? p.chunk_size : (core::resolve_backend(res) == backend::cuda ? 10000u : 2000u);
  e.candidates = p.candidates ? p.candidates : 2 * d;
  e.itopk = p.itopk_size ? p.itopk_size : ((std::max(64u, 2 * e.candidates) + 31) / 32) * 32;
  return e;
}

/** The new vectors in the index's storage type (the conversion a build of them would make). */
host_matrix new_rows(const index& idx, dataset_view v, int nt) {
  const dtype t = idx.storage_dtype();
  const storage_type s = t == dtype::f32   ? storage_type::f32
                         : t == dtype::f16 ? storage_type::f16
                                           : storage_type::same_as_input;
  const dtype would = core::storage_dtype_for(v.type, idx.metric(), s);
  CAGRA_EXPECTS(would == t, "the index stores %s vectors; %s vectors would become %s (pass %s)",
                to_string(t), to_string(v.type), to_string(would), to_string(t));
  return core::to_storage(v, idx.metric(), s, nt);
}

/** Checks the new labels against each other and the index; returns them (or row numbers). */
void check_new_labels(const index& idx, const int64_t* labels, int64_t n) {
  std::vector<std::pair<int64_t, int64_t>> sorted(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) sorted[size_t(i)] = {labels[i], i};
  std::sort(sorted.begin(), sorted.end());
  CAGRA_EXPECTS(sorted.front().first >= 0,
                "label %lld (new row %lld) is negative: labels are >= 0 (-1 marks an empty result "
                "slot)",
                (long long)sorted.front().first, (long long)sorted.front().second);
  for (size_t i = 1; i < sorted.size(); ++i)
    CAGRA_EXPECTS(sorted[i].first != sorted[i - 1].first,
                  "label %lld is given to two new rows (%lld and %lld): labels must be unique",
                  (long long)sorted[i].first, (long long)sorted[i - 1].second,
                  (long long)sorted[i].second);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t row = idx.row_of(labels[i]);
    CAGRA_EXPECTS(row < 0, "label %lld (new row %lld) is already in the index (row %lld%s)",
                  (long long)labels[i], (long long)i, (long long)row,
                  idx.is_deleted(row) ? ", deleted: compact the index before reusing it" : "");
  }
}

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/** The rows an extend call rewrote, as they were before (restored if the call fails). Only
 *  chunks before the last need it: nothing after the last chunk's rewrites can fail. */
struct undo_log {
  bool active = false;
  std::vector<uint8_t> saved;  // [rows before the call]: 1 once the row is in the log
  std::vector<uint32_t> rows, values;
  void save(const std::vector<uint32_t>& g, uint32_t row, uint32_t d) {
    if (!active || row >= saved.size() || saved[row]) return;
    saved[row] = 1;
    rows.push_back(row);
    values.insert(values.end(), g.begin() + int64_t(row) * d, g.begin() + int64_t(row + 1) * d);
  }
  void restore(std::vector<uint32_t>& g, uint32_t d) const {
    for (size_t i = 0; i < rows.size(); ++i)
      std::copy_n(values.begin() + int64_t(i) * d, d, g.begin() + int64_t(rows[i]) * d);
  }
};

/** A new row's request to be pointed at by an existing row. */
struct ask {
  uint32_t row, rank, from;
};

/** Stable sort of `asks` by row: LSD radix, two 16-bit passes, for many; a comparison sort for
 *  a few (the passes' 2 x 65,536 counts took ~70 us of a one-row extend). Both are stable, so
 *  the order is the same. */
void sort_by_row(std::vector<ask>& asks) {
  if (asks.size() < (size_t{1} << 14)) {
    std::stable_sort(asks.begin(), asks.end(),
                     [](const ask& a, const ask& b) { return a.row < b.row; });
    return;
  }
  std::vector<ask> tmp(asks.size());
  std::vector<size_t> start(65537);
  for (int shift : {0, 16}) {
    std::fill(start.begin(), start.end(), size_t{0});
    for (const ask& a : asks) ++start[((a.row >> shift) & 0xFFFFu) + 1];
    for (size_t k = 1; k < start.size(); ++k) start[k] += start[k - 1];
    for (const ask& a : asks) tmp[start[(a.row >> shift) & 0xFFFFu]++] = a;
    asks.swap(tmp);
  }
}

/** One chunk: rows [n, n + chunk.rows()) are added to `idx`; in_degree is kept up to date. */
void extend_chunk(const resources& res, const extend_plan& e, index& idx, const host_matrix& chunk,
                  std::vector<uint32_t>& in_degree, undo_log& undo, std::vector<uint32_t>& held,
                  extend_report& rep) {
  const int64_t n = idx.size();
  const int64_t b = chunk.rows();
  const uint32_t d = idx.graph_degree();
  // The chunk's steps are sized by its rows: a team of every thread for a one-row extend cost
  // more than the work (a thread woken, or ended and started again, for each step).
  const int nt = static_cast<int>(std::clamp<int64_t>(b, 1, core::host_threads(res.num_threads)));

  // 1. Candidates: from the index (live rows only: search skips deleted ones) ...
  auto t0 = clock_type::now();
  const uint32_t ks = static_cast<uint32_t>(std::min<int64_t>(e.candidates, idx.live_size()));
  std::vector<uint32_t> ann_ids(static_cast<size_t>(b) * ks);
  std::vector<float> ann_dist(static_cast<size_t>(b) * ks);
  search_params sp;
  sp.itopk_size = std::max(e.itopk, ks);
  search(res, sp, idx, chunk, ks, {ann_ids.data(), b, ks}, {ann_dist.data(), b, ks});
  rep.search_seconds += seconds_since(t0);
  // ... and from the chunk itself.
  t0 = clock_type::now();
  const uint32_t kb = static_cast<uint32_t>(std::min<int64_t>(e.candidates, b - 1));
  knn_graph own;
  if (kb > 0) own = brute_force_knn(res, idx.metric(), chunk, chunk, kb, true);

  rep.chunk_knn_seconds += seconds_since(t0);
  t0 = clock_type::now();
  const uint32_t kc = e.candidates;
  std::vector<uint32_t> cand(static_cast<size_t>(b) * kc, kInvalidId);
  std::vector<uint32_t> cand_n(static_cast<size_t>(b), 0);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t j = 0; j < b; ++j) {
    const uint32_t* ai = ann_ids.data() + j * ks;
    const float* ad = ann_dist.data() + j * ks;
    const uint32_t* oi = kb ? own.ids.data() + j * kb : nullptr;
    const float* od = kb ? own.distances.data() + j * kb : nullptr;
    uint32_t* out = cand.data() + j * kc;
    uint32_t ia = 0, io = 0, m = 0;
    while (m < kc) {
      const bool a_ok = ia < ks && ai[ia] != kInvalidId;
      const bool o_ok = io < kb;
      if (!a_ok && !o_ok) break;
      // Ties: the existing row first (its id is the smaller).
      if (a_ok && (!o_ok || ad[ia] <= od[io]))
        out[m++] = ai[ia++];
      else
        out[m++] = static_cast<uint32_t>(n + oi[io++]);
    }
    cand_n[size_t(j)] = m;
  }

  // 2. Forward edges by the rank rule.
  const std::vector<uint32_t>& graph = index_editor::graph(idx);
  auto neighbors_of = [&](uint32_t z) {
    if (z < n) return core::id_list{graph.data() + size_t(z) * d, d};
    const size_t j = z - size_t(n);
    return core::id_list{cand.data() + j * kc, cand_n[j]};
  };
  std::vector<uint32_t> fwd(static_cast<size_t>(b) * d, kInvalidId);
  std::vector<uint32_t> fwd_n(static_cast<size_t>(b), 0);
#pragma omp parallel num_threads(nt)
  {
    // The thread's own rank array, kept between calls (4 bytes a row for each thread): filled
    // anew on every call it was dearer than the pruning it speeds up.
    thread_local core::prune_scratch own_scratch;
    own_scratch.cover(size_t(n + b));
#pragma omp for schedule(dynamic, 64)
    for (int64_t j = 0; j < b; ++j)
      fwd_n[size_t(j)] = core::prune_by_rank(cand.data() + j * kc, cand_n[size_t(j)], neighbors_of,
                                             d, fwd.data() + j * d, own_scratch);
  }
  for (int64_t j = 0; j < b; ++j)
    CAGRA_EXPECTS(fwd_n[size_t(j)] == d,
                  "new row %lld found %u neighbour candidates, fewer than the graph degree %u "
                  "(the index has %lld live rows)",
                  (long long)(n + j), fwd_n[size_t(j)], d, (long long)idx.live_size());

  // 3. The new rows' graph rows: forward edges merged with the chunk's reverse edges.
  std::vector<uint32_t> rev(static_cast<size_t>(b) * d), rev_n(static_cast<size_t>(b), 0);
  for (uint32_t r = 0; r < d; ++r)
    for (int64_t j = 0; j < b; ++j) {
      const uint32_t y = fwd[size_t(j) * d + r];
      if (y < n) continue;
      uint32_t& c = rev_n[y - size_t(n)];
      if (c < d) rev[(y - size_t(n)) * d + c++] = static_cast<uint32_t>(n + j);
    }
  std::vector<uint32_t> rows(static_cast<size_t>(b) * d);
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t j = 0; j < b; ++j)
    core::merge_row(fwd.data() + j * d, rev.data() + j * d, rev_n[size_t(j)], d,
                    rows.data() + j * d);

  rep.prune_seconds += seconds_since(t0);
  t0 = clock_type::now();
  // Append (the graph grows; `graph` may move).
  index_editor::vectors(idx).append_rows(chunk);
  std::vector<uint32_t>& g = index_editor::graph(idx);
  g.insert(g.end(), rows.begin(), rows.end());
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t i = 0; i < int64_t(rows.size()); ++i) {
#pragma omp atomic
    ++in_degree[rows[size_t(i)]];
  }
  std::vector<uint32_t>& live = index_editor::live(idx);
  if (!live.empty()) {
    live.resize(size_t((n + b + 31) / 32), 0u);
    for (int64_t r = n; r < n + b; ++r) live[size_t(r >> 5)] |= 1u << (r & 31);
  }

  // 4. Reverse edges into existing rows, in (row, rank, new row) order.
  std::vector<ask> asks;
  asks.reserve(size_t(b) * (d / 2 + 1));
  const uint32_t half = std::max(1u, d / 2);
  for (uint32_t r = 0; r < half; ++r)  // generated in (rank, new row) order ...
    for (int64_t j = 0; j < b; ++j) {
      const uint32_t y = fwd[size_t(j) * d + r];
      if (y < n) asks.push_back({y, r, static_cast<uint32_t>(n + j)});
    }
  // ... so a stable sort by row gives (row, rank, new row): two 16-bit radix passes.
  sort_by_row(asks);
  auto is_deleted = [&](uint32_t id) { return idx.is_deleted(id); };
  const uint32_t quota = std::max(1u, d / 4);
  std::vector<size_t> group;  // asks[group[k] .. group[k + 1]) ask the same row
  for (size_t i = 0; i < asks.size(); ++i)
    if (i == 0 || asks[i].row != asks[i - 1].row) group.push_back(i);
  const int64_t groups = int64_t(group.size());
  group.push_back(asks.size());
  // The rows are rewritten in parallel: an edge to z may go when z keeps another in-edge even
  // if every asked row holding z in its replaceable half lost its edge to z (at most one each):
  // in_degree[z] > (asked rows holding z there). The counts come first, the decisions read them
  // only, and the in-degrees change after: the same graph on any number of threads.
  // Only the entries the decisions read are zeroed, not all n (a one-row extend of a 1M-row
  // index zeroed 4 MB).
#pragma omp parallel for num_threads(nt) schedule(dynamic, 256)
  for (int64_t k = 0; k < groups; ++k) {
    const uint32_t* row = g.data() + size_t(asks[group[size_t(k)]].row) * d;
    for (uint32_t s = d / 2; s < d; ++s) {
#pragma omp atomic write
      held[row[s]] = 0;
    }
  }
#pragma omp parallel for num_threads(nt) schedule(dynamic, 256)
  for (int64_t k = 0; k < groups; ++k) {
    const uint32_t* row = g.data() + size_t(asks[group[size_t(k)]].row) * d;
    for (uint32_t s = d / 2; s < d; ++s) {
#pragma omp atomic
      ++held[row[s]];
    }
  }
  for (int64_t k = 0; k < groups; ++k) undo.save(g, asks[group[size_t(k)]].row, d);
  std::vector<uint32_t> gone(asks.size(), kInvalidId);  // per ask: the edge it replaced
  std::vector<uint32_t> changed;  // existing rows rewritten (for the backends' copies)
  changed.reserve(size_t(groups) + size_t(b));  // from here on nothing allocates, nothing throws
#pragma omp parallel for num_threads(nt) schedule(dynamic, 256)
  for (int64_t k = 0; k < groups; ++k) {
    const size_t first = group[size_t(k)], end = group[size_t(k) + 1];
    uint32_t* row = g.data() + size_t(asks[first].row) * d;
    uint32_t taken = 0;
    for (size_t i = first; i < end && taken < quota; ++i) {
      gone[i] = core::replace_edge(row, d, asks[i].from, is_deleted,
                                   [&](uint32_t z) { return in_degree[z] > held[z]; });
      taken += gone[i] != kInvalidId;
    }
  }
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t i = 0; i < int64_t(asks.size()); ++i) {
    if (gone[size_t(i)] == kInvalidId) continue;
#pragma omp atomic
    --in_degree[gone[size_t(i)]];
#pragma omp atomic
    ++in_degree[asks[size_t(i)].from];
  }
  for (int64_t k = 0; k < groups; ++k) {  // in row order: `changed` comes out sorted
    const size_t first = group[size_t(k)], end = group[size_t(k) + 1];
    for (size_t i = first; i < end; ++i)
      if (gone[i] != kInvalidId) {
        changed.push_back(asks[first].row);
        break;
      }
  }
  const size_t sorted_part = changed.size();

  // 5. Every new row gets an in-edge.
  for (int64_t j = 0; j < b; ++j) {
    const uint32_t x = static_cast<uint32_t>(n + j);
    for (uint32_t r = 0; r < d && in_degree[x] == 0; ++r) {
      const uint32_t y = fwd[size_t(j) * d + r];
      undo.save(g, y, d);
      if (core::insert_in_edge(g.data() + size_t(y) * d, d, x, in_degree, is_deleted) && y < n)
        changed.push_back(y);
    }
  }
  std::sort(changed.begin() + int64_t(sorted_part), changed.end());  // step 5's few
  std::inplace_merge(changed.begin(), changed.begin() + int64_t(sorted_part), changed.end());
  changed.erase(std::unique(changed.begin(), changed.end()), changed.end());
  // New rows that received an in-edge in step 5 are uploaded with the new rows.
  rep.reverse_seconds += seconds_since(t0);

  t0 = clock_type::now();
  try {
    for (backend b : {backend::cpu, backend::cuda})
      core::backend_for(b).index_changed(idx, n, changed, nt);
  } catch (...) {
    // The index itself is complete: a backend that could not follow copies it anew on its next
    // search (and reports there what stops it).
    index_editor::drop_backend_state(idx);
  }
  core::int8_copy_extended(idx, n, changed, nt);  // the int8 traversal's copy, if there is one
  rep.device_seconds += seconds_since(t0);
  ++rep.chunks;
}

}  // namespace

void extend(const resources& res, const extend_params& params, index& idx, dataset_view vectors,
            const int64_t* labels, extend_report* report) {
  const auto t_start = clock_type::now();
  CAGRA_EXPECTS(idx.size() > 0, "extend: the index is empty (build one first)");
  CAGRA_EXPECTS(vectors.rows > 0 && vectors.data != nullptr,
                "extend: no vectors given (an empty batch)");
  CAGRA_EXPECTS(vectors.cols == idx.dim(),
                "extend: vectors have dimension %lld but the index has %u", (long long)vectors.cols,
                idx.dim());
  CAGRA_EXPECTS(vectors.space == memory_space::host, "extend: vectors must be in host memory");
  CAGRA_EXPECTS(idx.size() + vectors.rows <= kMaxRows,
                "extend: %lld + %lld rows exceed the 2^31-1 rows an index holds",
                (long long)idx.size(), (long long)vectors.rows);
  CAGRA_EXPECTS(labels != nullptr || !idx.has_labels(),
                "extend: the index has labels; give one label per new vector");
  params.validate(idx.graph_degree());
  const extend_plan e = plan_extend(res, params, idx);
  const int nt = core::host_threads(res.num_threads);
  host_matrix add = new_rows(idx, vectors, nt);
  if (labels) check_new_labels(idx, labels, vectors.rows);

  const int64_t n0 = idx.size(), total = n0 + vectors.rows;
  extend_report rep;
  rep.backend_used = core::resolve_backend(res);
  host_matrix& vec = index_editor::vectors(idx);
  std::vector<uint32_t>& g = index_editor::graph(idx);
  std::vector<int64_t>& lab = index_editor::labels(idx);
  std::vector<uint32_t>& live = index_editor::live(idx);
  const uint32_t d = idx.graph_degree();
  // Extend only appends to the live bitset (its last word and words after it), so the undo keeps
  // that word and the size, not a copy: 125 KB a call at 1M rows with removals, 9 us of a
  // one-row extend's ~1 ms (scripts/dev/extend-one-row.cpp), and 100x that at 100M rows.
  const size_t live_words = live.size();
  const uint32_t live_last = live.empty() ? 0u : live.back();
  const bool had_labels = !lab.empty();
  undo_log undo;
  try {
    // Room grows by half again at least when it must grow, so that many small extends copy the
    // index rarely.
    const int64_t room = std::max(total, n0 + n0 / 2);
    // The rows may move: a device copy reading them in place lets go of them first.
    if (const auto& cache = idx.backend_cache()) cache->release_host_rows();
    vec.reserve_rows(total);
    if (g.capacity() < size_t(total) * d) g.reserve(size_t(room) * d);
    if (vectors.rows > e.chunk) undo.saved.assign(size_t(n0), 0);
    if (labels) index_editor::reserve_labels(idx, total);
    std::vector<uint32_t>& in_degree = index_editor::in_degree(idx);  // kept between calls
    if (int64_t(in_degree.size()) != n0) in_degree = core::in_degrees(g, n0, n0, nt);
    if (in_degree.capacity() < size_t(total)) in_degree.reserve(size_t(room));
    in_degree.resize(size_t(total), 0u);
    rep.setup_seconds = seconds_since(t_start);
    // extend_chunk's counts, kept by the thread between calls (a fresh array of 4 bytes a row
    // on every call cost more than the chunk's use of it).
    thread_local std::vector<uint32_t> held;
    if (held.size() < size_t(total)) held.resize(size_t(room));
    for (int64_t first = 0; first < vectors.rows; first += e.chunk) {
      const int64_t rows = std::min<int64_t>(e.chunk, vectors.rows - first);
      undo.active = first + rows < vectors.rows;
      if (rows == vectors.rows) {  // one chunk: the rows as they are
        extend_chunk(res, e, idx, add, in_degree, undo, held, rep);
      } else {
        host_matrix chunk(add.type(), rows, add.cols());
        std::memcpy(chunk.data(), add.row_bytes(first), chunk.size_bytes());
        extend_chunk(res, e, idx, chunk, in_degree, undo, held, rep);
      }
      if (res.progress) res.progress("extend", double(first + rows) / double(vectors.rows));
    }
    if (labels) index_editor::append_labels(idx, labels, vectors.rows);
  } catch (...) {
    index_editor::in_degree(idx).clear();  // recomputed by the next extend
    vec.truncate_rows(n0);
    undo.restore(g, d);
    g.resize(size_t(n0) * d);
    live.resize(live_words);
    if (live_words > 0) live.back() = live_last;
    if (!had_labels) lab.clear();
    lab.resize(std::min(lab.size(), size_t(n0)));
    index_editor::index_labels(idx);
    index_editor::drop_backend_state(idx);
    index_editor::drop_derived(idx);
    throw;
  }
  rep.rows_added = vectors.rows;
  rep.total_seconds = seconds_since(t_start);
  if (report) *report = rep;
}

}  // namespace cagra
