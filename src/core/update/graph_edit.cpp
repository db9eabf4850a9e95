// Graph edits shared by build, extend and compact (core/update/graph_edit.hpp).
#include "core/update/graph_edit.hpp"

#include <omp.h>

namespace cagra::core {

void merge_row(const uint32_t* p, const uint32_t* r, uint32_t n_rev, uint32_t degree,
               uint32_t* out) {
  const uint32_t rev_quota = degree / 2;
  uint32_t n_out = 0, ip = 0, ir = 0, taken_rev = 0;
  auto contains = [&](uint32_t id) { return std::find(out, out + n_out, id) != out + n_out; };
  bool rev_turn = false;
  while (n_out < degree) {
    bool use_rev = (rev_turn && taken_rev < rev_quota && ir < n_rev) || ip >= degree;
    if (use_rev) {
      if (ir >= n_rev) break;  // both exhausted (cannot happen: p holds degree distinct ids)
      uint32_t id = r[ir++];
      if (!contains(id)) {
        out[n_out++] = id;
        ++taken_rev;
      }
    } else {
      uint32_t id = p[ip++];
      if (!contains(id)) out[n_out++] = id;
    }
    rev_turn = !rev_turn;
  }
}

std::vector<uint32_t> reverse_and_merge(const std::vector<uint32_t>& pruned, int64_t n,
                                        uint32_t degree, int num_threads) {
  const size_t d = degree, nd = size_t(n) * d;
  CAGRA_EXPECTS(pruned.size() == nd, "pruned graph holds %zu ids, expected %lld x %u",
                pruned.size(), (long long)n, degree);
  // Transposed: edge (r, X) at r * n + X, the order the reverse lists are filled in.
  std::vector<uint32_t> by_rank(nd);
  constexpr int64_t kBlock = 4096;
#pragma omp parallel for num_threads(num_threads) schedule(static)
  for (int64_t x0 = 0; x0 < n; x0 += kBlock) {
    const int64_t x1 = std::min(n, x0 + kBlock);
    for (size_t r = 0; r < d; ++r)
      for (int64_t x = x0; x < x1; ++x)
        by_rank[r * size_t(n) + size_t(x)] = pruned[size_t(x) * d + r];
  }
  // Thread t owns targets [lo, hi) and appends to their lists in (r, X) order; each thread reads
  // all n d edges once, so a handful of threads is enough (the walk is a sequential read).
  std::vector<uint32_t> rev(nd, kInvalidId), count(size_t(n), 0u);
  const int walkers = int(std::max<int64_t>(1, std::min<int64_t>({num_threads, 16, n / 1024 + 1})));
#pragma omp parallel num_threads(walkers)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const uint32_t lo = uint32_t(n * t / nt), hi = uint32_t(n * (t + 1) / nt);
    for (size_t r = 0; r < d; ++r) {
      const uint32_t* edges = by_rank.data() + r * size_t(n);
      for (int64_t x = 0; x < n; ++x) {
        const uint32_t y = edges[x];
        if (y < lo || y >= hi) continue;
        uint32_t& c = count[y];
        if (c < degree) rev[size_t(y) * d + c++] = uint32_t(x);
      }
    }
  }
  by_rank = {};
  std::vector<uint32_t> graph(nd);
#pragma omp parallel for num_threads(num_threads) schedule(static)
  for (int64_t x = 0; x < n; ++x)
    merge_row(pruned.data() + size_t(x) * d, rev.data() + size_t(x) * d, count[size_t(x)], degree,
              graph.data() + size_t(x) * d);
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
