// The CPU's latency path (search_params::algo = multi_cta): each query walked by several walkers
// at once, a thread each: the GPU's multi-CTA algorithm (paper §IV-C2) with a thread for a CTA.
//
// A walker keeps a 32-entry list, starts from d x rounds random rows of its own stratum
// (bits::initial_node, the draws of the GPU's CTAs; the nearest 32 enter the list) and expands
// one parent an iteration, for the iterations the plan gives it (core/plan.cpp,
// plan_cpu_walkers: the single walk's budget shared among the walkers). The walkers of a query
// claim nodes in one visited set, so that they spread over the graph instead of walking the same
// nodes. The answer is the k nearest entries of all lists (filtered: each walker also keeps the
// 32 nearest allowed rows it measured, and those lists are merged). A query's dependent
// iterations fall from ~itopk to ~itopk / walkers: lower latency for a batch-1 call, for more
// CPU work in all (docs/params.md, "The CPU's latency path").
//
// The shared visited set is read and written with plain loads and stores (relaxed atomics), no
// locked read-modify-write: a locked x86 instruction on a line another core wrote last costs a
// cross-core round trip (~50-100 ns), on every neighbor of every parent. The races that remain
// are benign: two walkers that claim a node at the same moment may both get it, and a store may
// overwrite another walker's claim in the same slot, so that node may be claimed again later.
// Either way a node is at most walked twice, never lost, and the merge takes an id once (equal
// ids have equal distances, so they meet in the merge's order). With one thread the walkers run
// one after another and the answer is deterministic.
#include <algorithm>
#include <array>
#include <vector>

#include <omp.h>

#include "core/bits.hpp"
#include "core/plan.hpp"
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
constexpr uint32_t kList = core::gpu::kMultiCtaList;
constexpr uint32_t kMaxWalkers = core::gpu::kMultiCtaMaxItopk / kList;  // the plan's cap

/** One query's visited set, shared by its walkers: open addressing over 2^bits slots of
 *  (generation << 32 | id) (a slot of an older generation is empty: a new query costs O(1)). */
class shared_visited {
 public:
  /** Empties the table for the next query, at 2^bits slots. Not while walkers use it. */
  void start(uint32_t bits) {
    if (bits != bits_) {
      bits_ = bits;
      slots_.assign(size_t{1} << bits, 0);
      gen_ = 0;
    }
    if (++gen_ == 0) {
      std::fill(slots_.begin(), slots_.end(), 0);
      gen_ = 1;
    }
  }
  /** Starts fetching the slot line where `id` would go, for writing. Issued for a whole run of
   *  claims first, so that their lines (often last written by another walker's core) arrive
   *  together instead of one claim at a time: 5-15% lower latency at 8-16 threads on SIFT-wall-1M
   *  (bench/results/logs/latency-slot-prefetch-ab-sift-wall-1m-cpu16.txt). */
  void prefetch(uint32_t id) const { __builtin_prefetch(&slots_[bits::hash_home(id, bits_)], 1); }
  /** True where no walker of the query had claimed `id` (see the top for the races). A full
   *  table answers false (the node is skipped); the plan sizes it at ~4 slots a visit. */
  bool claim(uint32_t id) {
    const uint64_t mine = uint64_t{gen_} << 32 | id;
    const size_t mask = slots_.size() - 1;
    size_t h = bits::hash_home(id, bits_);
    for (size_t probe = 0; probe <= mask; ++probe) {
      uint64_t* slot = &slots_[h];
      const uint64_t s = __atomic_load_n(slot, __ATOMIC_RELAXED);
      if (s == mine) return false;
      if ((s >> 32) != gen_) {
        __atomic_store_n(slot, mine, __ATOMIC_RELAXED);
        return true;
      }
      h = (h + 1) & mask;
    }
    return false;
  }

 private:
  std::vector<uint64_t> slots_;
  uint32_t bits_ = 0, gen_ = 0;
};

/** One walker of one query. */
template <typename T>
class walker {
 public:
  /** `cand`: room for candidates_needed(idx, plan) entries, the caller's thread's. */
  walker(const index& idx, const search_plan& plan, entry* cand)
      : plan_(plan), n_(uint64_t(idx.size())), degree_(idx.graph_degree()), dim_(idx.dim()),
        x_(static_cast<const T*>(idx.vectors().data())),
        graph_(idx.graph().data), dist_{idx.metric(), dim_}, cand_(cand) {}

  /** The candidates a step can hold: the initial draws, or a parent's neighbors. */
  static size_t candidates_needed(const index& idx, const search_plan& plan) {
    return std::max(plan.initial_nodes, idx.graph_degree());
  }

  search_stats counts;

  /** Walks query `q` (seed state `state`) as walker `w` of the query's plan.ctas_per_query,
   *  claiming in `seen`; writes its kList nearest entries, sorted, to `out` (+inf / kInvalidId
   *  where it found fewer). With `allowed` (the query's bitset) the walk is the same and `out`
   *  gets the kList nearest allowed rows it measured, kept in a list of their own as the GPU's
   *  CTAs do (the walk's list alone holds ~3 allowed rows at 10% selectivity). */
  void run(const query_t<T>* q, uint64_t state, uint32_t w, shared_visited& seen,
           const uint32_t* allowed, entry* out) {
    entry* list = list_.data();
    list_.fill(entry{kFar, kInvalidId});
    found_.fill(entry{kFar, kInvalidId});
    allowed_ = allowed;
    n_cand_ = 0;
    const auto initial = [&](uint32_t t) {
      return bits::initial_node(state, w, t, plan_.initial_nodes, plan_.ctas_per_query, n_);
    };
    for (uint32_t t = 0; t < plan_.initial_nodes; ++t) seen.prefetch(initial(t));
    for (uint32_t t = 0; t < plan_.initial_nodes; ++t) {
      const uint32_t id = initial(t);
      if (seen.claim(id)) add(id);
    }
    measure_and_merge(q, list);
    for (uint32_t iter = 0; iter < plan_.max_iterations; ++iter) {
      entry* parent = std::find_if(list, list + kList, [](const entry& e) {
        return e.id != kInvalidId && !(e.id & kParentFlag);
      });
      if (parent == list + kList) break;  // every entry expanded: converged
      parent->id |= kParentFlag;
      ++counts.iterations;
      ++counts.parents;
      const uint32_t* nbr = graph_ + size_t(parent->id & ~kParentFlag) * degree_;
      for (uint32_t j = 0; j < degree_; ++j) seen.prefetch(nbr[j]);
      for (uint32_t j = 0; j < degree_; ++j)
        if (seen.claim(nbr[j])) add(nbr[j]);
      measure_and_merge(q, list);
    }
    std::copy_n(allowed ? found_.data() : list, kList, out);
  }

 private:
  const T* row(uint32_t id) const { return x_ + size_t(id) * dim_; }
  void add(uint32_t id) {
    cand_[n_cand_++] = {0, id};
    prefetch_row(row(id), dim_ * sizeof(T));
  }

  // The candidates' distances, and each nearer than the list's last entry inserted (a binary
  // search and a shift, as search.cpp's merge); an inserted one may become the next parent:
  // its graph row is prefetched.
  void measure_and_merge(const query_t<T>* q, entry* list) {
    for (size_t i = 0; i < n_cand_; ++i) cand_[i].dist = dist_(q, row(cand_[i].id));
    counts.distances += n_cand_;
    for (size_t i = 0; i < n_cand_; ++i) {
      const entry c = cand_[i];
      if (allowed_ && ((allowed_[c.id >> 5] >> (c.id & 31)) & 1u))
        walk::insert(found_.data(), kList, c);
      if (walk::insert(list, kList, c)) walk::prefetch_graph_row(graph_, c.id, degree_);
    }
    n_cand_ = 0;
  }

  const search_plan& plan_;
  const uint64_t n_;
  const uint32_t degree_;
  const size_t dim_;
  const T* x_;
  const uint32_t* graph_;
  const distance<T> dist_;
  entry* cand_;  // the first n_cand_ are this step's candidates
  size_t n_cand_ = 0;
  // The walk's list, and a filtered walk's allowed rows: the walker's own (on its thread's
  // stack), not the shared output, whose lines neighbor other walkers' lists (false sharing
  // there cost each walker ~2x its time at 2-16 threads on SIFT-wall-1M).
  alignas(64) std::array<entry, kList> list_;
  alignas(64) std::array<entry, kList> found_;
  const uint32_t* allowed_ = nullptr;
};

/** The k nearest entries of a query's `walkers` sorted lists, an id once, padded with
 *  kInvalidId / +inf: a merge of the lists' heads. */
void merge_lists(const entry* lists, uint32_t walkers, uint32_t k, uint32_t* ids, float* dists) {
  std::array<uint32_t, kMaxWalkers> head{};
  uint32_t out = 0, last = kInvalidId;
  while (out < k) {
    const entry* best = nullptr;
    uint32_t from = 0;
    for (uint32_t w = 0; w < walkers; ++w) {
      if (head[w] == kList) continue;
      const entry& e = lists[size_t(w) * kList + head[w]];
      if (e.id == kInvalidId) continue;  // sorted: the rest of this list is empty too
      if (!best || nearer(e, *best)) best = &e, from = w;
    }
    if (!best) break;
    ++head[from];
    const uint32_t id = best->id & ~kParentFlag;
    if (id == last) continue;  // the same node from two walkers (the races above)
    last = id;
    ids[out] = id;
    if (dists) dists[out] = best->dist;
    ++out;
  }
  for (; out < k; ++out) {
    ids[out] = kInvalidId;
    if (dists) dists[out] = kFar;
  }
}

}  // namespace

void parallel_walk_search(const index& idx, dataset_view queries, const search_plan& plan,
                          const row_filter& filter, uint32_t* ids, float* distances, int nt,
                          search_stats* stats) {
  const uint32_t walkers = plan.ctas_per_query, k = plan.k;
  const int64_t nq = queries.rows, n = idx.size();
  nt = thread_count(nt);
  // Queries walked at once: one per `walkers` threads. Their visited sets stay with the calling
  // thread between calls (a table of up to 32 MB, allocated once, emptied in O(1)).
  const int64_t group = std::clamp<int64_t>(nt / int64_t(walkers), 1, std::max<int64_t>(nq, 1));
  thread_local std::vector<shared_visited> kept;
  if (int64_t(kept.size()) < group) kept.resize(size_t(group));
  shared_visited* tables = kept.data();  // the caller's (`kept` names each thread's own)
  std::vector<entry> lists(size_t(group) * walkers * kList);
  std::vector<uint64_t> states(static_cast<size_t>(group));
  std::vector<search_stats> counts(size_t(group) * walkers);
  dispatch_storage(idx.storage_dtype(), [&](auto tag) {
    using T = decltype(tag);
    const query_t<T>* q = static_cast<const query_t<T>*>(queries.data);
    const size_t dim = idx.dim();
    for (int64_t first = 0; first < nq; first += group) {
      const int64_t in_group = std::min(group, nq - first);
      for (int64_t g = 0; g < in_group; ++g) {
        tables[size_t(g)].start(plan.hash_bits);
        states[size_t(g)] = bits::query_seed_state(
            plan.seed, reinterpret_cast<const uint8_t*>(q + (first + g) * dim),
            uint32_t(dim * sizeof(query_t<T>)));
      }
      const int64_t units = in_group * walkers;
#pragma omp parallel for num_threads(int(std::min <int64_t>(nt, units))) schedule(static, 1)
      for (int64_t u = 0; u < units; ++u) {
        const int64_t g = u / walkers, i = first + g;
        const uint32_t* allowed =
            filter.empty() ? nullptr
                           : filter.words + (filter.queries ? i * row_filter::words_for(n) : 0);
        thread_local std::vector<entry> cand;  // kept between queries: no allocation a walk
        cand.resize(walker<T>::candidates_needed(idx, plan));
        walker<T> w(idx, plan, cand.data());
        w.run(q + i * dim, states[size_t(g)], uint32_t(u % walkers), tables[size_t(g)], allowed,
              &lists[size_t(u) * kList]);
        search_stats& c = counts[size_t(u)];
        c.distances += w.counts.distances;
        c.iterations += w.counts.iterations;
        c.parents += w.counts.parents;
      }
      for (int64_t g = 0; g < in_group; ++g) {
        const int64_t i = first + g;
        merge_lists(&lists[size_t(g) * walkers * kList], walkers, k, ids + i * k,
                    distances ? distances + i * k : nullptr);
      }
    }
  });
  if (stats) {
    for (const search_stats& c : counts) {
      stats->distances += c.distances;
      stats->iterations += c.iterations;
      stats->parents += c.parents;
    }
    stats->queries += uint64_t(nq);
  }
}

}  // namespace cagra::cpu
