// Exact k-NN by brute force: the ground-truth oracle and the small-N path of the kNN graph.
//
// Blocked for cache reuse: a block of queries walks over blocks of data rows sized to stay in
// L2, so each data row is read from memory once per query block, not once per query. Each query
// keeps a bounded max-heap ordered by (distance, id), which makes the result independent of the
// thread count and of the order rows are visited. Byte rows are compared 4 queries at a time
// (pair_distance's tiles, exact); float rows of the kNN graph too (the tiles' float sums may
// differ from the search's in the last bits); the ground truth of float and half rows by the
// per-pair kernels that search uses, so that its distances have the search's bits.
#include <algorithm>
#include <atomic>
#include <queue>
#include <type_traits>

#include <omp.h>

#include "cpu/backend.hpp"
#include "cpu/distance.hpp"
#include "cpu/pair_distance.hpp"

namespace cagra::cpu {

namespace {

using entry = std::pair<float, uint32_t>;  // (distance, id): lexicographic order breaks ties by id

template <typename T>
void brute_force_impl(const host_matrix& data, const host_matrix& queries, metric m, uint32_t k,
                      bool exclude_self, int nt, const progress_fn& progress, knn_graph& out) {
  const int64_t n = data.rows(), nq = queries.rows();
  const size_t dim = static_cast<size_t>(data.cols());
  const T* x = static_cast<const T*>(data.data());
  const query_t<T>* q = static_cast<const query_t<T>*>(queries.data());
  const distance<T> dist{m, dim};
  constexpr int64_t kQueryBlock = 16;
  const int64_t data_block = std::max<int64_t>(64, (256 << 10) / (dim * sizeof(T)));
  const int64_t n_qblocks = (nq + kQueryBlock - 1) / kQueryBlock;
  std::atomic<int64_t> done{0};
  const int team = int(std::clamp<int64_t>(n_qblocks, 1, std::max(nt, 1)));  // a block a thread

#pragma omp parallel for num_threads(team) schedule(dynamic, 1)
  for (int64_t qb = 0; qb < n_qblocks; ++qb) {
    const int64_t q0 = qb * kQueryBlock, q1 = std::min(nq, q0 + kQueryBlock);
    std::vector<std::priority_queue<entry>> heaps(static_cast<size_t>(q1 - q0));
    std::vector<const T*> rows;
    std::vector<float> tile;
    for (int64_t d0 = 0; d0 < n; d0 += data_block) {
      const int64_t d1 = std::min(n, d0 + data_block);
      auto offer = [&](int64_t i, int64_t j, float d) {
        if (exclude_self && j == i) return;
        auto& heap = heaps[static_cast<size_t>(i - q0)];
        const entry e{d, static_cast<uint32_t>(j)};
        if (heap.size() < k) {
          heap.push(e);
        } else if (e < heap.top()) {
          heap.pop();
          heap.push(e);
        }
      };
      // Byte rows: tiles of up to 4 queries against the block's rows (pair_distance), whose
      // exact sums equal the per-pair kernel's bit for bit. Float rows take them for the kNN
      // graph (exclude_self): its distances need not have the search's bits, as the ground
      // truth's do.
      bool tiled = false;
      if constexpr (std::is_integral_v<T> || std::is_same_v<T, float>) {
        if (std::is_integral_v<T> || exclude_self) {
          tiled = true;
          const pair_distance<T> pairs(m, dim);
          const int64_t cols = d1 - d0;
          rows.resize(size_t(cols));
          for (int64_t j = d0; j < d1; ++j) rows[size_t(j - d0)] = x + j * int64_t(dim);
          tile.resize(pair_distance<T>::kMaxRows * size_t(cols));
          for (int64_t i0 = q0; i0 < q1; i0 += int64_t(pair_distance<T>::kMaxRows)) {
            const int64_t nr = std::min<int64_t>(q1 - i0, pair_distance<T>::kMaxRows);
            const T* qs[pair_distance<T>::kMaxRows];
            for (int64_t r = 0; r < nr; ++r) qs[r] = q + (i0 + r) * int64_t(dim);
            pairs.block(qs, size_t(nr), rows.data(), size_t(cols), tile.data());
            for (int64_t r = 0; r < nr; ++r)
              for (int64_t j = d0; j < d1; ++j) offer(i0 + r, j, tile[size_t(r * cols + j - d0)]);
          }
        }
      }
      if (!tiled) {
        for (int64_t i = q0; i < q1; ++i) {
          const query_t<T>* qi = q + i * static_cast<int64_t>(dim);
          for (int64_t j = d0; j < d1; ++j)
            offer(i, j, dist(qi, x + j * static_cast<int64_t>(dim)));
        }
      }
    }
    for (int64_t i = q0; i < q1; ++i) {
      auto& heap = heaps[static_cast<size_t>(i - q0)];
      for (int64_t r = static_cast<int64_t>(heap.size()) - 1; r >= 0; --r) {
        out.ids[static_cast<size_t>(i * k + r)] = heap.top().second;
        out.distances[static_cast<size_t>(i * k + r)] = heap.top().first;
        heap.pop();
      }
    }
    int64_t finished = ++done;
    if (progress && omp_get_thread_num() == 0)
      progress("brute-force kNN", double(finished) / n_qblocks);
  }
}

}  // namespace

knn_graph brute_force(const host_matrix& data, const host_matrix& queries, metric m, uint32_t k,
                      bool exclude_self, int nt, const progress_fn& progress) {
  CAGRA_EXPECTS(k >= 1, "k must be >= 1");
  const int64_t available = data.rows() - (exclude_self ? 1 : 0);
  CAGRA_EXPECTS(static_cast<int64_t>(k) <= available,
                "k = %u exceeds the %lld rows available to the brute-force search", k,
                (long long)available);
  knn_graph out;
  out.rows = queries.rows();
  out.k = k;
  out.ids.assign(static_cast<size_t>(out.rows) * k, kInvalidId);
  out.distances.assign(static_cast<size_t>(out.rows) * k, 0.0f);
  dispatch_storage(data.type(), [&](auto tag) {
    brute_force_impl<decltype(tag)>(data, queries, m, k, exclude_self, thread_count(nt), progress,
                                    out);
  });
  if (progress) progress("brute-force kNN", 1.0);
  return out;
}

}  // namespace cagra::cpu
