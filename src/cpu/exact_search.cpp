// Exact filtered search on the CPU (search_plan::filter_path == exact; cagra/filter.hpp): the
// distance from each query to every row its filter allows, the k nearest kept by (distance, id)
// in a bounded max-heap. The path the plan takes when the filter allows so few rows that
// scanning them costs less than a graph walk (core/plan.cpp), and the filtered ground truth of
// the tests. A shared bitset is turned into its list of allowed rows once; per-query bitsets
// are scanned word by word. The int8 traversal's re-ranking (rerank) is the same scan over each
// query's own list of candidate rows.
#include <algorithm>
#include <limits>
#include <vector>

#include <omp.h>

#include "core/filter.hpp"
#include "core/team.hpp"
#include "cpu/backend.hpp"
#include "cpu/distance.hpp"

namespace cagra::cpu {
namespace {

struct hit {
  float dist;
  uint32_t id;
};
inline bool before(const hit& a, const hit& b) {
  return a.dist < b.dist || (a.dist == b.dist && a.id < b.id);
}

/** The k nearest of the offered rows (a max-heap on (distance, id): its top is the k-th). */
class top_k {
 public:
  explicit top_k(uint32_t k) : k_(k) { heap_.reserve(k); }
  void clear() { heap_.clear(); }
  void offer(float d, uint32_t id) {
    const hit h{d, id};
    if (heap_.size() < k_) {
      heap_.push_back(h);
      std::push_heap(heap_.begin(), heap_.end(), before);
    } else if (before(h, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), before);
      heap_.back() = h;
      std::push_heap(heap_.begin(), heap_.end(), before);
    }
  }
  /** Writes the hits nearest first, then kInvalidId / +inf up to k. */
  void write(uint32_t* ids, float* dists) {
    std::sort_heap(heap_.begin(), heap_.end(), before);
    for (uint32_t i = 0; i < k_; ++i) {
      const bool has = i < heap_.size();
      ids[i] = has ? heap_[i].id : kInvalidId;
      if (dists) dists[i] = has ? heap_[i].dist : std::numeric_limits<float>::infinity();
    }
  }

 private:
  uint32_t k_;
  std::vector<hit> heap_;
};

/** For each query i (threads over the queries): offer(i, q, rows, dist, best) offers rows to
 *  `best`, whose k nearest are then written out. */
template <typename Offer>
void scan_queries(const index& idx, dataset_view queries, uint32_t k, int nt, uint32_t* ids,
                  float* distances, Offer&& offer) {
  const int64_t nq = queries.rows;
  nt = int(std::clamp<int64_t>(nq, 1, thread_count(nt)));  // no thread without a query
  dispatch_storage(idx.storage_dtype(), [&](auto tag) {
    using T = decltype(tag);
    const query_t<T>* qs = static_cast<const query_t<T>*>(queries.data);
    const T* x = static_cast<const T*>(idx.vectors().data());
    const size_t dim = idx.dim();
    const distance<T> dist{idx.metric(), dim};
    const auto scan_share = [&] {  // a thread's share (all of it outside a parallel region)
      top_k best(k);
#pragma omp for schedule(dynamic, 4)
      for (int64_t i = 0; i < nq; ++i) {
        best.clear();
        offer(i, qs + i * dim, x, dim, dist, best);
        best.write(ids + i * k, distances ? distances + i * k : nullptr);
      }
    };
    core::run_team(nt, scan_share);  // one query (a batch-1 re-rank): no region
  });
}

}  // namespace

void exact_search(const index& idx, dataset_view queries, const search_plan& plan,
                  const row_filter& filter, uint32_t* ids, float* distances, int nt) {
  const int64_t n = idx.size();
  const int64_t words = row_filter::words_for(n);
  // A shared bitset: its allowed rows, listed once.
  const std::vector<uint32_t> shared =
      filter.queries == 0 ? core::allowed_ids(filter) : std::vector<uint32_t>{};
  scan_queries(
      idx, queries, plan.k, nt, ids, distances,
      [&](int64_t i, const auto* q, const auto* x, size_t dim, const auto& dist, top_k& best) {
        if (filter.queries == 0) {
          for (uint32_t id : shared) best.offer(dist(q, x + size_t{id} * dim), id);
          return;
        }
        const uint32_t* w = filter.words + i * words;
        for (int64_t j = 0; j < words; ++j) {
          for (uint32_t b = w[j]; b != 0; b &= b - 1) {
            const int64_t id = j * 32 + __builtin_ctz(b);
            if (id >= n) break;
            best.offer(dist(q, x + size_t(id) * dim), static_cast<uint32_t>(id));
          }
        }
      });
}

void rerank(const index& idx, dataset_view queries, const uint32_t* candidates,
            uint32_t n_candidates, uint32_t k, uint32_t* ids, float* distances, int nt) {
  const int64_t n = idx.size();
  scan_queries(
      idx, queries, k, nt, ids, distances,
      [&](int64_t i, const auto* q, const auto* x, size_t dim, const auto& dist, top_k& best) {
        const uint32_t* c = candidates + i * int64_t{n_candidates};
        for (uint32_t j = 0; j < n_candidates; ++j)
          if (int64_t{c[j]} < n) best.offer(dist(q, x + size_t{c[j]} * dim), c[j]);
      });
}

}  // namespace cagra::cpu
