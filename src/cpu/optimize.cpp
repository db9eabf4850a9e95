// CAGRA graph optimization (paper §III-B): kNN graph (degree K) -> fixed-degree graph (degree d).
//
// 1. Reorder: for each edge X->Y at rank r in X's list, count the detourable routes X->Z->Y,
//    i.e. Z in X's list and Y in Z's list with max(rank(X->Z), rank(Z->Y)) < r (rank-based, the
//    paper's choice: no vectors and no distances needed), or with the kNN distances in place of
//    the ranks (distance-based ablation). Edges are sorted by (detour count, rank); the first d
//    are kept (pruning).
// 2. Reverse graph: for each kept X->Y, Y gets X; lists ordered by the rank of X->Y in the pruned
//    graph (then by X), at most d per node.
// 3. Merge: interleave the pruned list and the reverse list (d/2 from the reverse list at most),
//    no duplicates, filling from the pruned list.
// Steps 2 and 3 are core::reverse_and_merge (core/update/graph_edit.hpp), shared with the GPU
// build's host path and with extend's merge_row.
// Every step has a fixed order, so the output is identical for any thread count (and the CUDA
// version must reproduce it bit for bit).
#include <algorithm>
#include <numeric>

#include <omp.h>

#include "core/update/graph_edit.hpp"
#include "cpu/backend.hpp"

namespace cagra::cpu {
namespace {

void check_knn(const knn_graph& knn, int nt) {
  const int64_t n = knn.rows;
  const uint32_t k = knn.k;
  CAGRA_EXPECTS(knn.ids.size() == static_cast<size_t>(n) * k,
                "kNN graph holds %zu ids, expected %lld x %u", knn.ids.size(), (long long)n, k);
  int64_t bad = -1;
  // Sized like every team (thread_count): OpenMP's own default could be a team the system
  // cannot start (issue 17, defect 5).
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t* row = knn.ids.data() + i * k;
    for (uint32_t j = 0; j < k; ++j) {
      bool ok = row[j] < n && row[j] != i;
      for (uint32_t t = 0; ok && t < j; ++t) ok = row[t] != row[j];
      if (!ok) {
#pragma omp critical
        if (bad < 0 || i < bad) bad = i;
        break;
      }
    }
  }
  CAGRA_EXPECTS(bad < 0, "kNN graph row %lld has an invalid, self or duplicate id", (long long)bad);
}

/** Step 1: detour counts and pruning to `degree`; returns [n, degree]. */
std::vector<uint32_t> reorder_and_prune(const knn_graph& knn, uint32_t degree, reorder_kind kind,
                                        int nt, const progress_fn& progress) {
  const int64_t n = knn.rows;
  const uint32_t k = knn.k;
  const bool by_rank = kind == reorder_kind::rank;
  std::vector<uint32_t> pruned(static_cast<size_t>(n) * degree);
  int64_t done = 0;
#pragma omp parallel num_threads(nt)
  {
    std::vector<int32_t> pos(static_cast<size_t>(n), -1);  // rank of Y in X's list, or -1
    std::vector<uint32_t> count(k), order(k);
#pragma omp for schedule(dynamic, 256)
    for (int64_t x = 0; x < n; ++x) {
      const uint32_t* row = knn.ids.data() + x * k;
      const float* wx = by_rank ? nullptr : knn.distances.data() + x * k;
      for (uint32_t r = 0; r < k; ++r) pos[row[r]] = static_cast<int32_t>(r);
      std::fill(count.begin(), count.end(), 0u);
      for (uint32_t j = 0; j + 1 < k; ++j) {  // Z = row[j]; j < r needed
        const uint32_t* zrow = knn.ids.data() + static_cast<int64_t>(row[j]) * k;
        const float* wz =
            by_rank ? nullptr : knn.distances.data() + static_cast<int64_t>(row[j]) * k;
        for (uint32_t s = 0; s < k; ++s) {
          int32_t r = pos[zrow[s]];
          if (r < 0) continue;
          if (by_rank ? std::max(j, s) < static_cast<uint32_t>(r) : std::max(wx[j], wz[s]) < wx[r])
            ++count[static_cast<uint32_t>(r)];
        }
      }
      for (uint32_t r = 0; r < k; ++r) pos[row[r]] = -1;
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(),
                       [&](uint32_t a, uint32_t b) { return count[a] < count[b]; });
      for (uint32_t r = 0; r < degree; ++r)
        pruned[static_cast<size_t>(x) * degree + r] = row[order[r]];
      if (progress && (x & 4095) == 0) {
#pragma omp atomic
        done += 4096;
        if (omp_get_thread_num() == 0)
          progress("optimize: reorder", std::min(1.0, double(done) / n));
      }
    }
  }
  return pruned;
}

}  // namespace

std::vector<uint32_t> optimize(const knn_graph& knn, uint32_t degree, reorder_kind reorder,
                               optimize_steps steps, int nt, const progress_fn& progress) {
  const int64_t n = knn.rows;
  CAGRA_EXPECTS(degree >= 1 && degree <= knn.k, "graph degree %u must be in [1, kNN degree %u]",
                degree, knn.k);
  CAGRA_EXPECTS(reorder == reorder_kind::rank || knn.distances.size() == knn.ids.size(),
                "distance-based reordering needs the kNN graph's distances");
  nt = thread_count(nt);
  check_knn(knn, nt);
  std::vector<uint32_t> pruned;
  if (steps.reorder) {
    pruned = reorder_and_prune(knn, degree, reorder, nt, progress);
  } else {
    pruned.resize(static_cast<size_t>(n) * degree);
    for (int64_t x = 0; x < n; ++x)
      std::copy_n(knn.ids.data() + x * knn.k, degree, pruned.data() + x * degree);
  }
  if (!steps.reverse) return pruned;
  if (progress) progress("optimize: reverse edges and merge", 0.0);
  std::vector<uint32_t> graph = core::reverse_and_merge(pruned, n, degree, nt);
  if (progress) progress("optimize", 1.0);
  return graph;
}

}  // namespace cagra::cpu
