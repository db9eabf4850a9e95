// Graph edits shared by build, extend and compact. None needs vectors or distances: like the
// build's optimization (paper §III-B) they work on ranks, so they are deterministic and run on
// the host for both backends.
//  - merge_row: the build's last step, a node's pruned and reverse lists interleaved;
//  - prune_by_rank: the build's rank-based detour count applied to one candidate list, whose
//    candidates' own neighbour lists come from a callback (graph rows or other candidate lists);
//  - insert_in_edge: puts an edge into a full row by replacing its weakest replaceable edge, the
//    one move that adds in-edges to a fixed out-degree graph without stranding a node.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include <cagra/types.hpp>

namespace cagra::core {

/** Interleaves a node's pruned list `p` (degree ids) and reverse list `r` (n_rev ids, at most
 *  degree / 2 taken) into `out` (degree ids), no duplicates, filling from `p`. */
void merge_row(const uint32_t* p, const uint32_t* r, uint32_t n_rev, uint32_t degree,
               uint32_t* out);

/** Scratch space of prune_by_rank, reused across calls by one thread. `rank_of` maps an id to
 *  its rank in the list being pruned (-1 elsewhere) and must cover every id met. */
struct prune_scratch {
  std::vector<int32_t> rank_of;
  std::vector<uint32_t> count, order, bucket;
  /** Makes rank_of cover ids < n (grown by half again at least, new entries -1). */
  void cover(size_t n) {
    if (rank_of.size() < n) rank_of.resize(std::max(n, rank_of.size() + rank_of.size() / 2), -1);
  }
};

/** A neighbour list: `n` ids, the i-th at rank i. */
struct id_list {
  const uint32_t* ids = nullptr;
  uint32_t n = 0;
};

/** Rank-based pruning of one candidate list (the build's rule, paper §III-B): `cands` holds `kc`
 *  distinct ids, nearest first (rank = position). For candidate Y at rank r, every Z at rank
 *  s < r whose own list (neighbors_of(Z)) holds Y at a position t with max(s, t) < r is a
 *  detour. Candidates are ordered by (detours, rank) and the first min(kc, degree) written to
 *  `out`; returns how many. Every id met must be covered by `s` (prune_scratch::cover). */
template <typename NeighborsOf>
uint32_t prune_by_rank(const uint32_t* cands, uint32_t kc, NeighborsOf&& neighbors_of,
                       uint32_t degree, uint32_t* out, prune_scratch& s) {
  for (uint32_t r = 0; r < kc; ++r) s.rank_of[cands[r]] = int32_t(r);
  s.count.assign(kc + 1, 0u);
  for (uint32_t j = 0; j + 1 < kc; ++j) {
    const id_list z = neighbors_of(cands[j]);
    const uint32_t tn = std::min(z.n, kc);  // a position >= kc is never below a rank < kc
    for (uint32_t t = 0; t < tn; ++t) {
      const int32_t r = s.rank_of[z.ids[t]];
      if (r > int32_t(std::max(j, t))) ++s.count[uint32_t(r)];
    }
  }
  for (uint32_t r = 0; r < kc; ++r) s.rank_of[cands[r]] = -1;
  // Stable counting sort by detour count (counts are < kc).
  s.bucket.assign(kc + 1, 0u);
  for (uint32_t r = 0; r < kc; ++r) ++s.bucket[s.count[r]];
  for (uint32_t c = 0, sum = 0; c <= kc; ++c) sum += std::exchange(s.bucket[c], sum);
  s.order.resize(kc);
  for (uint32_t r = 0; r < kc; ++r) s.order[s.bucket[s.count[r]]++] = r;
  const uint32_t n_out = std::min(kc, degree);
  for (uint32_t i = 0; i < n_out; ++i) out[i] = cands[s.order[i]];
  return n_out;
}

/** The move of insert_in_edge with the rule as a predicate: puts `x` into `row` in place of the
 *  last edge (down to slot degree / 2) to a deleted row, else the last one whose target
 *  `may_lose(target)`; returns the target replaced, or kInvalidId (row unchanged). Touches no
 *  shared state, so rows can be done in parallel. */
template <typename IsDeleted, typename MayLose>
uint32_t replace_edge(uint32_t* row, uint32_t degree, uint32_t x, IsDeleted&& is_deleted,
                      MayLose&& may_lose) {
  if (std::find(row, row + degree, x) != row + degree) return kInvalidId;
  const uint32_t head = degree / 2;
  int64_t slot = -1;
  for (int64_t s = degree - 1; s >= int64_t{head} && slot < 0; --s)
    if (is_deleted(row[s])) slot = s;
  for (int64_t s = degree - 1; s >= int64_t{head} && slot < 0; --s)
    if (may_lose(row[s])) slot = s;
  if (slot < 0) return kInvalidId;
  const uint32_t gone = row[slot];
  for (int64_t s = slot; s > int64_t{head}; --s) row[s] = row[s - 1];
  row[head] = x;
  return gone;
}

/** Puts `x` into `row` (degree ids) in place of its weakest replaceable edge: scanning from the
 *  last slot down to slot degree / 2 (the head half, the row's strongest edges, is never
 *  touched), the first edge to a deleted row, else the first edge whose target keeps another
 *  in-edge (in_degree > 1). The slots between degree / 2 and it move down one and `x` takes
 *  slot degree / 2. Updates in_degree; returns false (row unchanged) when `x` is already in the
 *  row or no slot qualifies. */
template <typename IsDeleted>
bool insert_in_edge(uint32_t* row, uint32_t degree, uint32_t x, std::vector<uint32_t>& in_degree,
                    IsDeleted&& is_deleted) {
  const uint32_t gone =
      replace_edge(row, degree, x, is_deleted, [&](uint32_t z) { return in_degree[z] > 1; });
  if (gone == kInvalidId) return false;
  --in_degree[gone];
  ++in_degree[x];
  return true;
}

/** Steps 2 and 3 of the build's optimization (paper §III-B) on a pruned [n, degree] graph: the
 *  reverse lists (every kept edge X->Y gives Y the entry X; Y's list is its in-edges in (rank of
 *  X->Y, X) order, cut at `degree`), then merge_row per node. Ids >= n are no edges. On
 *  `num_threads` threads, in three passes over the edges: chunks of sources count and then
 *  scatter their edges into blocks of targets (`block_targets` rows; 0 = automatic), and each
 *  block is sorted by rank (stably: sources stay in order) and its lists filled in cache. The
 *  result is the serial definition's for any thread count and block size. Both backends' builds
 *  end here (the GPU's reverse_merge.cu reproduces it bit for bit). */
std::vector<uint32_t> reverse_and_merge(const std::vector<uint32_t>& pruned, int64_t n,
                                        uint32_t degree, int num_threads,
                                        int64_t block_targets = 0);

/** In-degree of every node of a [rows, degree] graph, in a vector of max(rows, capacity) counts
 *  (computed on `num_threads` threads, core::host_threads). */
std::vector<uint32_t> in_degrees(const std::vector<uint32_t>& graph, int64_t rows, int64_t capacity,
                                 int num_threads);

}  // namespace cagra::core
