// Graph edits shared by build, extend and compact (core/update/graph_edit.hpp).
#include "core/update/graph_edit.hpp"

#include <omp.h>

#include "core/bits.hpp"
#include "core/visited_hash.hpp"

namespace cagra::core {

void merge_row(const uint32_t* p, const uint32_t* r, uint32_t n_rev, uint32_t degree,
               uint32_t* out) {
  // The ids taken so far (a linear search of `out` made this O(degree^2) a row).
  thread_local visited_hash taken;
  taken.resize(std::max(4u, bits::ceil_log2(2 * uint64_t(degree))));
  taken.clear();
  auto take = [&](uint32_t id) { return taken.insert(id); };  // false when already taken
  const uint32_t rev_quota = degree / 2;
  uint32_t n_out = 0, ip = 0, ir = 0, taken_rev = 0;
  bool rev_turn = false;
  while (n_out < degree) {
    bool use_rev = (rev_turn && taken_rev < rev_quota && ir < n_rev) || ip >= degree;
    if (use_rev) {
      if (ir >= n_rev) break;  // both exhausted (cannot happen: p holds degree distinct ids)
      uint32_t id = r[ir++];
      if (take(id)) {
        out[n_out++] = id;
        ++taken_rev;
      }
    } else {
      uint32_t id = p[ip++];
      if (take(id)) out[n_out++] = id;
    }
    rev_turn = !rev_turn;
  }
}

std::vector<uint32_t> reverse_and_merge(const std::vector<uint32_t>& pruned, int64_t n,
                                        uint32_t degree, int num_threads, int64_t block_targets) {
  const size_t d = degree, nd = size_t(n) * d;
  CAGRA_EXPECTS(pruned.size() == nd, "pruned graph holds %zu ids, expected %lld x %u",
                pruned.size(), (long long)n, degree);
  std::vector<uint32_t> graph(nd);
  if (n == 0) return graph;
  // Targets in blocks of tb rows, few enough blocks (<= 4096) for the scatter's write streams.
  int64_t tb = block_targets > 0 ? block_targets : std::max<int64_t>(8192, (n + 4095) / 4096);
  tb = std::min(tb, n);
  const int shift =
      int(bits::ceil_log2(uint64_t(tb)));  // key = rank << shift | target within block
  CAGRA_EXPECTS(shift + bits::ceil_log2(uint64_t(d)) <= 32,
                "reverse_and_merge: degree %u with blocks of %lld targets overflows its keys",
                degree, (long long)tb);
  const int64_t nb = (n + tb - 1) / tb;
  // One team size for every region: a team that shrinks ends threads, and one that grows again
  // right after may not get them back where the address space is tight (large OMP_STACKSIZE).
  const int chunks = std::max(num_threads, 1);
  struct edge {
    uint32_t source, key;
  };
  // 1. Every chunk of sources counts its edges per target block (ids >= n are not edges).
  std::vector<int64_t> offset(size_t(chunks) * size_t(nb), 0);
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    int64_t* h = offset.data() + size_t(c) * size_t(nb);
    for (size_t i = size_t(n * c / chunks) * d; i < size_t(n * (c + 1) / chunks) * d; ++i)
      if (pruned[i] < uint64_t(n)) ++h[pruned[i] / uint64_t(tb)];
  }
  // 2. Block b's edges lie at [start[b], start[b + 1]), chunk after chunk.
  std::vector<int64_t> start(size_t(nb) + 1, 0);
  int64_t total = 0;
  for (int64_t b = 0; b < nb; ++b) {
    start[size_t(b)] = total;
    for (int c = 0; c < chunks; ++c) {
      const int64_t count = offset[size_t(c) * size_t(nb) + size_t(b)];
      offset[size_t(c) * size_t(nb) + size_t(b)] = total;
      total += count;
    }
  }
  start[size_t(nb)] = total;
  // 3. Scatter: within a block the edges come in (source, rank) order.
  std::vector<edge> edges(static_cast<size_t>(total));
#pragma omp parallel for num_threads(chunks) schedule(static, 1)
  for (int c = 0; c < chunks; ++c) {
    int64_t* at = offset.data() + size_t(c) * size_t(nb);
    for (int64_t x = n * c / chunks; x < n * (c + 1) / chunks; ++x)
      for (size_t r = 0; r < d; ++r) {
        const uint32_t y = pruned[size_t(x) * d + r];
        if (y >= uint64_t(n)) continue;
        edges[size_t(at[y / uint64_t(tb)]++)] = {uint32_t(x),
                                                 uint32_t(r << shift) | uint32_t(y % uint64_t(tb))};
      }
  }
  offset = {};
  // 4. Per block: a stable counting sort by rank gives the (rank, source) order that defines the
  // reverse lists; fill them in cache, then merge every target's row.
#pragma omp parallel num_threads(chunks)
  {
    std::vector<edge> sorted;
    std::vector<uint32_t> rev(size_t(tb) * d), count(static_cast<size_t>(tb)), at(d + 1);
#pragma omp for schedule(dynamic, 1)
    for (int64_t b = 0; b < nb; ++b) {
      const edge* e = edges.data() + start[size_t(b)];
      const size_t m = size_t(start[size_t(b) + 1] - start[size_t(b)]);
      std::fill(at.begin(), at.end(), 0u);
      for (size_t i = 0; i < m; ++i) ++at[(e[i].key >> shift) + 1];
      for (size_t r = 0; r < d; ++r) at[r + 1] += at[r];
      sorted.resize(m);
      for (size_t i = 0; i < m; ++i) sorted[at[e[i].key >> shift]++] = e[i];
      const int64_t y0 = b * tb, rows = std::min(tb, n - y0);
      std::fill(count.begin(), count.begin() + rows, 0u);
      const uint32_t mask = (uint32_t{1} << shift) - 1;
      for (size_t i = 0; i < m; ++i) {
        const uint32_t yl = sorted[i].key & mask;
        uint32_t& cnt = count[yl];
        if (cnt < degree) rev[size_t(yl) * d + cnt++] = sorted[i].source;
      }
      for (int64_t yl = 0; yl < rows; ++yl)
        merge_row(pruned.data() + size_t(y0 + yl) * d, rev.data() + size_t(yl) * d,
                  count[size_t(yl)], degree, graph.data() + size_t(y0 + yl) * d);
    }
  }
  return graph;
}

std::vector<uint32_t> in_degrees(const std::vector<uint32_t>& graph, int64_t rows, int64_t capacity,
                                 int num_threads) {
  std::vector<uint32_t> deg(static_cast<size_t>(std::max(rows, capacity)), 0u);
  const int64_t n = int64_t(graph.size());
  // Counts are the same in any order: atomic increments spread over the threads.
#pragma omp parallel for num_threads(num_threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
#pragma omp atomic
    ++deg[graph[size_t(i)]];
  }
  return deg;
}

}  // namespace cagra::core
