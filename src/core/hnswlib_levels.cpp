// The upper levels of an hnswlib export: hnswlib's level draw and its neighbour heuristic over
// candidates that the index's own filtered search finds (hnswlib_levels.hpp says what is built;
// docs/hnswlib.md why). The upper levels only steer hnswlib's greedy descent to a good start on
// level 0, so they are small (a 1/M share of the rows per level) and cheap next to the build.
#include "core/hnswlib_levels.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include <cagra/cagra.hpp>
#include <cagra/filter.hpp>

#include "core/hnswlib_format.hpp"

namespace cagra::core::hnsw {

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

using candidate = std::pair<float, uint32_t>;  // (distance to the row, position in the level)

/** hnswlib's getNeighborsByHeuristic2 over `cands` (sorted nearest first): a candidate is kept
 *  unless a kept one is nearer to it than the row is; at most M kept. Fewer than M candidates
 *  are all kept, as hnswlib does. */
void select_by_heuristic(std::vector<candidate>& cands, uint32_t M, metric m, const float* vecs,
                         int64_t dim) {
  if (cands.size() < M) return;
  std::vector<candidate> kept;
  kept.reserve(M);
  for (const candidate& c : cands) {
    if (kept.size() >= M) break;
    const float* cv = vecs + int64_t(c.second) * dim;
    bool good = true;
    for (const candidate& k : kept) {
      if (space_distance(m, vecs + int64_t(k.second) * dim, cv, dim) < c.first) {
        good = false;
        break;
      }
    }
    if (good) kept.push_back(c);
  }
  cands.swap(kept);
}

/** Links the rows of one level (`level.rows` set) among themselves. */
void link_level(const resources& res, const index& idx, uint32_t M, int nt, level_links& level) {
  const int64_t m = int64_t(level.rows.size());
  const int64_t dim = idx.dim();
  level.counts.assign(size_t(m), 0);
  level.links.assign(size_t(m) * M, 0);
  if (m < 2) return;

  // The level's vectors: as stored (the search's queries) and as float (the heuristic).
  host_matrix queries(idx.storage_dtype(), m, dim);
  std::vector<float> vecs(size_t(m) * size_t(dim));
  const size_t row_bytes = idx.vectors().view().row_bytes();
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t i = 0; i < m; ++i) {
    std::memcpy(static_cast<uint8_t*>(queries.data()) + size_t(i) * row_bytes,
                idx.vectors().row_bytes(level.rows[size_t(i)]), row_bytes);
    row_as_float(idx.vectors(), level.rows[size_t(i)], vecs.data() + size_t(i) * size_t(dim));
  }

  // Candidates: the nearest rows of the level, the row itself among them (dropped below).
  const uint32_t k = uint32_t(std::min<int64_t>(m, int64_t(M) + 1));
  row_bitset allowed = row_bitset::from_ids(level.rows.data(), m, idx.size());
  std::vector<uint32_t> found(size_t(m) * k);
  search(res, search_params{}, idx, queries.view(), k, {found.data(), m, int64_t(k)}, {},
         allowed.view());

  const auto position = [&level](uint32_t row) -> int64_t {
    auto it = std::lower_bound(level.rows.begin(), level.rows.end(), row);
    return it != level.rows.end() && *it == row ? it - level.rows.begin() : -1;
  };
  const auto dist = [&](int64_t a, int64_t b) {
    return space_distance(idx.metric(), vecs.data() + a * dim, vecs.data() + b * dim, dim);
  };

  // Forward links: the heuristic over each row's candidates.
  std::vector<std::vector<uint32_t>> forward(static_cast<size_t>(m));
#pragma omp parallel for num_threads(nt) schedule(dynamic, 256)
  for (int64_t i = 0; i < m; ++i) {
    std::vector<candidate> cands;
    for (uint32_t j = 0; j < k; ++j) {
      const uint32_t row = found[size_t(i) * k + j];
      if (row == kInvalidId) continue;
      const int64_t p = position(row);
      if (p < 0 || p == i) continue;
      cands.emplace_back(dist(i, p), uint32_t(p));
    }
    std::sort(cands.begin(), cands.end());
    select_by_heuristic(cands, M, idx.metric(), vecs.data(), dim);
    for (const candidate& c : cands) forward[size_t(i)].push_back(c.second);
  }

  // Reverse links: every row also hears from the rows that chose it; a list over M is pruned
  // again by the heuristic, as hnswlib prunes a full list that receives a new link.
  std::vector<uint32_t> in_count(size_t(m) + 1, 0);
  for (const auto& f : forward)
    for (uint32_t p : f) ++in_count[p + 1];
  for (int64_t i = 0; i < m; ++i) in_count[size_t(i) + 1] += in_count[size_t(i)];
  std::vector<uint32_t> in_links(in_count[size_t(m)]);
  {
    std::vector<uint32_t> fill(in_count.begin(), in_count.end() - 1);
    for (int64_t i = 0; i < m; ++i)
      for (uint32_t p : forward[size_t(i)]) in_links[fill[p]++] = uint32_t(i);
  }
#pragma omp parallel for num_threads(nt) schedule(dynamic, 256)
  for (int64_t i = 0; i < m; ++i) {
    std::vector<candidate> cands;
    for (uint32_t p : forward[size_t(i)]) cands.emplace_back(dist(i, p), p);
    for (uint32_t e = in_count[size_t(i)]; e < in_count[size_t(i) + 1]; ++e) {
      const uint32_t p = in_links[e];
      if (std::find(forward[size_t(i)].begin(), forward[size_t(i)].end(), p) ==
          forward[size_t(i)].end())
        cands.emplace_back(dist(i, p), p);
    }
    std::sort(cands.begin(), cands.end());
    if (cands.size() > M) select_by_heuristic(cands, M, idx.metric(), vecs.data(), dim);
    level.counts[size_t(i)] = uint32_t(cands.size());
    for (size_t j = 0; j < cands.size(); ++j)
      level.links[size_t(i) * M + j] = level.rows[cands[j].second];
  }
}

}  // namespace

int draw_level(uint64_t seed, uint64_t row, double mult) {
  // 53 random bits, +1: U in (0, 1], so -ln(U) is finite (hnswlib draws from [0, 1)).
  const double u = double((splitmix64(seed ^ splitmix64(row)) >> 11) + 1) * 0x1.0p-53;
  return int(-std::log(u) * mult);
}

hierarchy build_hierarchy(const resources& res, const index& idx, uint32_t M, uint64_t seed) {
  const int64_t n = idx.size();
  const int nt = resolve_threads(res.num_threads);
  const double mult = 1.0 / std::log(double(M));
  hierarchy h;
  h.level.assign(size_t(n), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (idx.is_deleted(i)) continue;
    const int l = std::min(draw_level(seed, uint64_t(i), mult), 255);
    h.level[size_t(i)] = uint8_t(l);
    h.max_level = std::max(h.max_level, l);
  }
  // The entry point: the first row on the top level (a live row, unless every row is deleted).
  h.entry_point = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (h.level[size_t(i)] == h.max_level && !idx.is_deleted(i)) {
      h.entry_point = uint32_t(i);
      break;
    }
  }
  h.upper.resize(size_t(h.max_level));
  for (int l = 1; l <= h.max_level; ++l) {
    level_links& level = h.upper[size_t(l - 1)];
    for (int64_t i = 0; i < n; ++i)
      if (h.level[size_t(i)] >= l) level.rows.push_back(uint32_t(i));
    link_level(res, idx, M, nt, level);
    if (res.progress) res.progress("hnswlib levels", double(l) / h.max_level);
  }
  return h;
}

}  // namespace cagra::core::hnsw
