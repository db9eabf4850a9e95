// CAGRA search on the CPU (paper §IV-A), one query per thread at a time.
//
// Buffer = internal top-M list (sorted) + candidate list (p x d). Step 0 fills the candidates
// with itopk + p x d x samplings random nodes (seeded by the query's content; samplings 1 unless
// set: core/plan.cpp, kAutoCpuSamplings); then repeat: 1) insert the candidates that beat the
// top-M's last entry into it; 2) take the first p top-M entries that were not parents yet (parent
// flag = MSB of the id); 3) their neighbors not seen before (visited hash; optionally forgettable:
// cleared every `reset_interval` iterations and re-seeded with the top-M ids) get a distance and
// become the next candidates. Stop when no new parent is left (converged) or at max_iterations. A
// filtered search walks the same way (disallowed rows stay navigable) and returns the allowed
// entries of the final top-M list (the plan has grown the list as the filter's selectivity fell).
#include <algorithm>

#include <omp.h>

#include "core/bits.hpp"
#include "core/team.hpp"
#include "core/visited_hash.hpp"
#include "cpu/backend.hpp"
#include "cpu/distance.hpp"
#include "cpu/walk.hpp"

namespace cagra::cpu {
namespace {

using bits::kParentFlag;
using walk::entry;
using walk::kFar;
using walk::nearer;
using walk::prefetch_row;

/** A thread's walk buffers, kept between calls. Made afresh for every call, a one-query call
 *  allocated and zeroed its visited table each time: 2^hash_bits slots of 8 bytes, 128 KB at
 *  itopk 64 on SIFT-wall-1M (degree 32), 256 KB at itopk 128 on MiniLM-1M (degree 64). A table
 *  is emptied in O(1) (its generation), so a kept one answers as a fresh one does. */
struct walk_buffers {
  std::vector<entry> top, cand;
  core::visited_hash hash;
};
/** Tables above the automatic range (an explicit hash_bits > 20: 8 MB and more) are not kept. */
constexpr uint32_t kMaxKeptHashBits = 20;

template <typename T>
class searcher {
 public:
  /** `buffers`: the caller's thread's, resized here for `plan`. */
  searcher(const index& idx, const search_plan& plan, uint64_t seed, walk_buffers& buffers)
      : plan_(plan), seed_(seed), n_(idx.size()), degree_(idx.graph_degree()), dim_(idx.dim()),
        x_(static_cast<const T*>(idx.vectors().data())),
        graph_(idx.graph().data), dist_{idx.metric(), dim_}, top_(buffers.top), cand_(buffers.cand),
        hash_(buffers.hash) {
    top_.resize(plan.itopk);
    cand_.resize(std::max<size_t>(size_t{plan.search_width} * degree_, plan.initial_nodes));
    hash_.resize(plan.hash_bits);
  }

  // Work counts of every query this searcher ran (a few integer adds per iteration).
  search_stats counts;

  /** Searches query `q`; with `allowed` (a bitset over the rows, or null) only rows whose bit
   *  is set are written to ids/dists. */
  void run(const query_t<T>* q, uint32_t k, uint32_t* ids, float* dists,
           const uint32_t* allowed = nullptr) {
    hash_.clear();
    std::fill(top_.begin(), top_.end(), entry{kFar, kInvalidId});
    random_init(q);
    for (uint32_t iter = 0;; ++iter) {
      merge_candidates();
      if (iter >= plan_.max_iterations) break;
      uint32_t parents[64], n_par = 0, width = std::min<uint32_t>(plan_.search_width, 64);
      for (entry& e : top_) {
        if (n_par == width) break;
        if (e.id == kInvalidId || (e.id & kParentFlag)) continue;
        parents[n_par++] = e.id;
        e.id |= kParentFlag;
      }
      if (n_par == 0 && iter >= plan_.min_iterations) break;
      ++counts.iterations;
      counts.parents += n_par;
      if ((plan_.hash_reset_interval && iter > 0 && iter % plan_.hash_reset_interval == 0) ||
          hash_.nearly_full())
        forget();
      expand(q, parents, n_par);
    }
    uint32_t out = 0;
    for (uint32_t i = 0; i < top_.size() && out < k; ++i) {
      const entry& e = top_[i];
      if (e.id == kInvalidId) break;  // the list is sorted: the rest is empty too
      const uint32_t id = e.id & ~kParentFlag;
      if (allowed && !((allowed[id >> 5] >> (id & 31)) & 1u)) continue;
      ids[out] = id;
      if (dists) dists[out] = e.dist;
      ++out;
    }
    for (; out < k; ++out) {
      ids[out] = kInvalidId;
      if (dists) dists[out] = kFar;
    }
  }

 private:
  const T* row(uint32_t id) const { return x_ + static_cast<size_t>(id) * dim_; }

  // Step 0: itopk + p*d*samplings random nodes (distinct via the hash). The seed mixes the query's
  // own bytes, so a query gets the same answer whatever batch or position it comes in.
  void random_init(const query_t<T>* q) {
    n_cand_ = 0;
    const uint64_t state = bits::query_seed_state(seed_, reinterpret_cast<const uint8_t*>(q),
                                                  uint32_t(dim_ * sizeof(query_t<T>)));
    const uint32_t count = plan_.initial_nodes;
    for (uint32_t i = 0; i < count; ++i) {
      const uint32_t id = bits::random_node(state, i, uint64_t(n_));
      if (hash_.insert(id)) cand_[n_cand_++] = {0, id};
    }
    for (size_t i = 0; i < n_cand_; ++i) prefetch_row(row(cand_[i].id), dim_ * sizeof(T));
    measure(q);
  }

  // Step 1: each candidate nearer than the list's last entry inserted into the sorted top-M (a
  // binary search and a shift). The list is the one that sorting the candidates and merging them
  // gave (ids are distinct, `nearer` is a strict order), without the sort and the second buffer.
  // The filter by the list's last distance before any insertion stays as the merge had it
  // (integer distances tie often). An inserted candidate may become a parent: its graph row is
  // prefetched (graph rows are read one after another, a miss each, unlike the candidates' rows).
  // Both together, SIFT-wall-1M (u8 rows, where a walk is cheap and these steps showed): batch 1
  // 1.11-1.19x on the development machine, 0.94-1.21x by point on a 16-core Xeon (median of 3
  // rounds), batch 10K on its 16 threads 1.02-1.17x (logs/cpu-search-insert-*.txt).
  void merge_candidates() {
    const float worst = top_.back().dist;
    const bool open = worst == kFar;
    for (size_t i = 0; i < n_cand_; ++i) {
      const entry c = cand_[i];
      if (!(c.dist < worst) && !open) continue;
      if (walk::insert(top_.data(), top_.size(), c))
        walk::prefetch_graph_row(graph_, c.id, degree_);
    }
    n_cand_ = 0;
  }

  // Step 3: neighbors of the parents that were not visited yet become candidates.
  void expand(const query_t<T>* q, const uint32_t* parents, uint32_t n_par) {
    n_cand_ = 0;
    for (uint32_t p = 0; p < n_par; ++p) {
      const uint32_t* nbr = graph_ + static_cast<size_t>(parents[p] & ~kParentFlag) * degree_;
      for (uint32_t j = 0; j < degree_; ++j)
        if (hash_.insert(nbr[j])) {
          cand_[n_cand_++] = {0, nbr[j]};
          prefetch_row(row(nbr[j]), dim_ * sizeof(T));
        }
    }
    measure(q);
  }

  void measure(const query_t<T>* q) {
    for (size_t i = 0; i < n_cand_; ++i) cand_[i].dist = dist_(q, row(cand_[i].id));
    counts.distances += n_cand_;
  }

  // Forgettable hash: forget every visited node except the current top-M.
  void forget() {
    ++counts.hash_resets;
    hash_.clear();
    for (const entry& e : top_)
      if (e.id != kInvalidId) hash_.insert(e.id & ~kParentFlag);
  }

  const search_plan plan_;
  const uint64_t seed_;
  const int64_t n_;
  const uint32_t degree_;
  const size_t dim_;
  const T* x_;
  const uint32_t* graph_;
  const distance<T> dist_;
  std::vector<entry>& top_;
  std::vector<entry>& cand_;  // the first n_cand_ are this step's candidates
  size_t n_cand_ = 0;
  core::visited_hash& hash_;
};

}  // namespace

void search(const index& idx, dataset_view queries, const search_plan& plan,
            const row_filter& filter, uint32_t* ids, float* distances, int nt,
            search_stats* stats) {
  const uint32_t k = plan.k;
  const int64_t nq = queries.rows, n = idx.size();
  nt = int(std::clamp<int64_t>(nq, 1, thread_count(nt)));  // no thread without a query
  dispatch_storage(idx.storage_dtype(), [&](auto tag) {
    using T = decltype(tag);
    const query_t<T>* q = static_cast<const query_t<T>*>(queries.data);
    const size_t dim = idx.dim();
    // A thread's share of the queries (all of them outside a parallel region).
    const auto walk_share = [&] {
      thread_local walk_buffers kept;
      walk_buffers fresh;
      searcher<T> s(idx, plan, plan.seed, plan.hash_bits <= kMaxKeptHashBits ? kept : fresh);
#pragma omp for schedule(dynamic, 4)
      for (int64_t i = 0; i < nq; ++i)
        s.run(q + i * dim, k, ids + i * k, distances ? distances + i * k : nullptr,
              filter.empty() ? nullptr
                             : filter.words + (filter.queries ? i * row_filter::words_for(n) : 0));
      if (stats) {
#pragma omp critical(cagra_search_stats)
        {
          stats->distances += s.counts.distances;
          stats->iterations += s.counts.iterations;
          stats->parents += s.counts.parents;
          stats->hash_resets += s.counts.hash_resets;
        }
      }
    };
    core::run_team(nt, walk_share);  // one thread: the caller's, no region
    if (stats) stats->queries += static_cast<uint64_t>(nq);
  });
}

}  // namespace cagra::cpu
