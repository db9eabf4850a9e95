// Graph edits shared by build, extend and compact (core/update/graph_edit.hpp).
#include "core/update/graph_edit.hpp"

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
