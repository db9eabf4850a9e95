// NN-descent (Dong, Charikar, Li 2011) for the intermediate kNN graph, deterministic.
//
// Each iteration runs in strictly separate phases, so no list is read while another thread
// writes it (the faiss#5413 trap) and the result does not depend on the thread count:
//   sample  — per node, up to S = rate*k "new" entries (which become old) and S old ones;
//   reverse — reverse new/old lists (each thread owns a range of targets), trimmed to S by a
//             seeded hash of each edge, kept in id order;
//   join    — for a chunk of nodes, every new-new and new-old pair of its candidates is compared
//             (in tiles of 4 new rows against 3 or 6 others: pair_distance.hpp); a pair proposes
//             each endpoint to the other when it beats that list's worst entry. Once the lists
//             settle, nearly every such proposal is an entry the list already has (99% on SIFT
//             by the fourth iteration): from the iteration after one where at least an eighth
//             were, the join drops them itself (an id compare over the list, cheaper than carrying
//             the proposal through the update). The update would skip them anyway, so the graph is
//             the same either way; early on, when few are, the check would cost more than it saves;
//   update  — proposals are grouped by target (thread t owns targets with id % T == t) and
//             inserted into the sorted lists; equal (distance, id) pairs are the same neighbor,
//             so an insertion skips one already there.
// It stops after max_iterations or when fewer than threshold * n * k entries changed.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include <omp.h>

#include "core/bits.hpp"
#include "cpu/backend.hpp"
#include "cpu/distance.hpp"
#include "cpu/pair_distance.hpp"

namespace cagra::cpu {
namespace {

using bits::mix64;

struct proposal {
  uint32_t target, id;
  float dist;
};

struct neighbor {
  float dist;
  uint32_t id;
  bool operator<(const neighbor& o) const { return dist < o.dist || (dist == o.dist && id < o.id); }
};

template <typename T>
class nn_descent_run {
 public:
  nn_descent_run(const host_matrix& data, metric m, uint32_t k, const knn_graph_params& p,
                 uint64_t seed, int nt)
      : n_(data.rows()), k_(k), s_(std::max<uint32_t>(1, uint32_t(std::lround(p.sample_rate * k)))),
        seed_(seed), nt_(nt), x_(static_cast<const T*>(data.data())),
        dim_(static_cast<size_t>(data.cols())), pair_(m, dim_), dist_(static_cast<size_t>(n_) * k),
        ids_(static_cast<size_t>(n_) * k), is_new_(static_cast<size_t>(n_) * k, 1) {}

  void init() {
#pragma omp parallel num_threads(nt_)
    {
      // The node and the ids drawn for it so far, in an open-addressed set of >= 4 (k + 1) slots
      // (an n-sized array of marks was n x 8 bytes a thread: 12.8 GB at 100M rows, 16 threads).
      uint32_t slots = 64, shift = 26;
      while (slots < 4 * (k_ + 1)) slots *= 2, --shift;
      std::vector<uint32_t> drawn(slots, kInvalidId);
      auto first_draw = [&](uint32_t c) {  // false when c is in the set, else adds it
        uint32_t h = (c * 0x9E3779B1u) >> shift;
        for (; drawn[h] != kInvalidId; h = (h + 1) & (slots - 1))
          if (drawn[h] == c) return false;
        drawn[h] = c;
        return true;
      };
      std::vector<const T*> rows(k_);
      std::vector<float> d(k_);
      std::vector<neighbor> l(k_);
#pragma omp for schedule(static)
      for (int64_t i = 0; i < n_; ++i) {
        std::fill(drawn.begin(), drawn.end(), kInvalidId);
        first_draw(static_cast<uint32_t>(i));
        uint64_t state = mix64(seed_ ^ mix64(static_cast<uint64_t>(i)));
        for (uint32_t j = 0; j < k_;) {
          state = mix64(state);
          uint32_t c = static_cast<uint32_t>((state >> 32) * static_cast<uint64_t>(n_) >> 32);
          if (!first_draw(c)) continue;
          l[j].id = c;
          rows[j++] = row(c);
        }
        const T* self = row(static_cast<uint32_t>(i));
        pair_.block(&self, 1, rows.data(), k_, d.data());
        for (uint32_t j = 0; j < k_; ++j) l[j].dist = d[j];
        std::sort(l.begin(), l.end());
        for (uint32_t j = 0; j < k_; ++j) {
          dist_[size_t(i) * k_ + j] = l[j].dist;
          ids_[size_t(i) * k_ + j] = l[j].id;
        }
      }
    }
  }

  /** One iteration; returns the number of list entries that changed. */
  int64_t iterate(uint32_t it) {
    sample();
    reverse(it);
    int64_t changed = 0;
    const int64_t chunk = 1024;
    check_listed_ = proposed_ > 0 && listed_ * 8 >= proposed_;
    listed_ = proposed_ = 0;
    for (int64_t c0 = 0; c0 < n_; c0 += chunk) {
      join(c0, std::min(n_, c0 + chunk));
      changed += update();
    }
    return changed;
  }

  knn_graph result() const {
    knn_graph g;
    g.rows = n_;
    g.k = k_;
    g.ids = ids_;
    g.distances = dist_;
    return g;
  }

 private:
  const T* row(uint32_t i) const { return x_ + static_cast<size_t>(i) * dim_; }

  void sample() {
    // Sized once and filled whole below, on all threads (no serial pass over n * s ids).
    fwd_new_.resize(static_cast<size_t>(n_) * s_);
    fwd_old_.resize(static_cast<size_t>(n_) * s_);
#pragma omp parallel for num_threads(nt_) schedule(static)
    for (int64_t i = 0; i < n_; ++i) {
      uint32_t nn = 0, no = 0;
      for (uint32_t j = 0; j < k_; ++j) {
        size_t e = static_cast<size_t>(i) * k_ + j;
        if (is_new_[e] && nn < s_) {
          fwd_new_[static_cast<size_t>(i) * s_ + nn++] = ids_[e];
          is_new_[e] = 0;
        } else if (!is_new_[e] && no < s_) {
          fwd_old_[static_cast<size_t>(i) * s_ + no++] = ids_[e];
        }
      }
      std::fill(fwd_new_.begin() + i * s_ + nn, fwd_new_.begin() + (i + 1) * s_, kInvalidId);
      std::fill(fwd_old_.begin() + i * s_ + no, fwd_old_.begin() + (i + 1) * s_, kInvalidId);
    }
  }

  /** Reverse lists, each trimmed to s_ entries by a seeded hash of (iteration, edge) and kept in
   *  id order. Each thread owns a range of targets and reads every forward edge, taking those
   *  into its range: no atomics (an atomic add on a line another core last wrote waits out the
   *  whole miss, and with one such add per edge the reverse step was 14% of the build at 1M
   *  rows and 16 threads), and a node's reverse edges arrive in source order, as on one thread. */
  void reverse_one(const std::vector<uint32_t>& fwd, uint32_t it, uint64_t salt,
                   std::vector<uint32_t>& out) {
    // Offsets into rev_all_ run up to n * s (above 2^32 for 100M rows): 64-bit.
    std::vector<size_t>& start = rev_start_;
    start.resize(static_cast<size_t>(n_) + 1);
    start[0] = 0;
    out.resize(static_cast<size_t>(n_) * s_);
#pragma omp parallel num_threads(nt_)
    {
      const int64_t nth = omp_get_num_threads(), t = omp_get_thread_num();
      const uint32_t v0 = static_cast<uint32_t>(n_ * t / nth);
      const uint32_t span = static_cast<uint32_t>(n_ * (t + 1) / nth) - v0;
      // v - v0 < span: v in [v0, v0 + span); kInvalidId and ids below v0 wrap above span.
      std::fill(start.begin() + v0 + 1, start.begin() + v0 + span + 1, size_t{0});
      for (uint32_t v : fwd)
        if (v - v0 < span) ++start[size_t{v} + 1];
#pragma omp barrier
#pragma omp single
      {
        for (int64_t i = 0; i < n_; ++i) start[i + 1] += start[i];
        if (rev_all_.size() < start[n_]) rev_all_.resize(start[n_]);
        rev_fill_.resize(static_cast<size_t>(n_));
      }
      std::copy(start.begin() + v0, start.begin() + v0 + span, rev_fill_.begin() + v0);
      for (int64_t i = 0; i < n_; ++i)
        for (uint32_t j = 0; j < s_; ++j) {
          const uint32_t v = fwd[static_cast<size_t>(i) * s_ + j];
          if (v - v0 < span) rev_all_[rev_fill_[v]++] = static_cast<uint32_t>(i);
        }
      std::vector<std::pair<uint64_t, uint32_t>> keyed;
      for (uint32_t v = v0; v < v0 + span; ++v) {
        uint32_t* b = rev_all_.data() + start[v];
        uint32_t len = static_cast<uint32_t>(start[v + 1] - start[v]);  // <= n
        if (len > s_) {  // the s_ smallest (key, id), each key hashed once
          keyed.resize(len);
          for (uint32_t j = 0; j < len; ++j)
            keyed[j] = {
                mix64(seed_ ^ salt ^ (uint64_t(it) << 48) ^ (uint64_t(b[j]) << 24) ^ uint64_t(v)),
                b[j]};
          std::nth_element(keyed.begin(), keyed.begin() + s_, keyed.end());
          for (uint32_t j = 0; j < s_; ++j) b[j] = keyed[j].second;
          len = s_;
          std::sort(b, b + len);
        }
        uint32_t* o = out.data() + size_t{v} * s_;
        std::copy(b, b + len, o);
        std::fill(o + len, o + s_, kInvalidId);
      }
    }
  }

  void reverse(uint32_t it) {
    reverse_one(fwd_new_, it, 0x1111, rev_new_);
    reverse_one(fwd_old_, it, 0x2222, rev_old_);
  }

  /** Candidate sets of node i: NEW = fwd_new ∪ rev_new, OLD = (fwd_old ∪ rev_old) \ NEW. */
  void candidates(int64_t i, std::vector<uint32_t>& nw, std::vector<uint32_t>& old) const {
    nw.clear();
    old.clear();
    auto add = [](std::vector<uint32_t>& v, const uint32_t* src, uint32_t len) {
      for (uint32_t j = 0; j < len; ++j)
        if (src[j] != kInvalidId) v.push_back(src[j]);
    };
    add(nw, fwd_new_.data() + i * s_, s_);
    add(nw, rev_new_.data() + i * s_, s_);
    std::sort(nw.begin(), nw.end());
    nw.erase(std::unique(nw.begin(), nw.end()), nw.end());
    add(old, fwd_old_.data() + i * s_, s_);
    add(old, rev_old_.data() + i * s_, s_);
    std::sort(old.begin(), old.end());
    old.erase(std::unique(old.begin(), old.end()), old.end());
    old.erase(
        std::remove_if(old.begin(), old.end(),
                       [&](uint32_t u) { return std::binary_search(nw.begin(), nw.end(), u); }),
        old.end());
  }

  void join(int64_t c0, int64_t c1) {
    const size_t nt = static_cast<size_t>(nt_);
    props_.resize(nt * nt);
    int64_t proposed = 0, listed = 0;
#pragma omp parallel num_threads(nt_) reduction(+ : proposed, listed)
    {
      // This thread's proposals, one bucket per owner (the thread whose update applies them:
      // target % nt), so that each update reads only its own.
      std::vector<proposal>* out = props_.data() + size_t(omp_get_thread_num()) * nt;
      for (size_t o = 0; o < nt; ++o) out[o].clear();
      auto propose = [&](uint32_t target, uint32_t id, float dist) {
        ++proposed;
        if (check_listed_ && in_list(target, id))
          ++listed;
        else
          out[target % nt].push_back({target, id, dist});
      };
      std::vector<uint32_t> nw, old;
      std::vector<const T*> rows;
      std::vector<float> d, bound;
      constexpr size_t kRows = pair_distance<T>::kMaxRows;
      // Two nodes a grab: every chunk ends at a barrier, and a grab of 16 left threads waiting
      // for the last one (1.07x at 1M rows and 16 threads with 2).
#pragma omp for schedule(dynamic, 2)
      for (int64_t i = c0; i < c1; ++i) {
        candidates(i, nw, old);
        // Columns: the new candidates, then the old ones. Rows [a0, a0 + kRows) of the new ones
        // are compared in one block with every column after a0; a pair of new candidates is
        // proposed once, from the row of its first.
        const size_t p = nw.size();
        nw.insert(nw.end(), old.begin(), old.end());
        // A pair proposes each candidate to the other when it beats that list's worst entry
        // (read once a candidate: the lists do not change until the update).
        rows.resize(nw.size());
        bound.resize(nw.size());
        for (size_t c = 0; c < nw.size(); ++c) {
          rows[c] = row(nw[c]);
          bound[c] = worst(nw[c]);
          if (check_listed_) {  // the ids' lines load while the tiles compute
            const uint32_t* ids = ids_.data() + size_t(nw[c]) * k_;
            for (uint32_t j = 0; j < k_; j += 16) __builtin_prefetch(ids + j);
          }
        }
        for (size_t a0 = 0; a0 + 1 < nw.size() && a0 < p; a0 += kRows) {
          const size_t na = std::min(kRows, p - a0), first = a0 + 1, nb = nw.size() - first;
          d.resize(na * nb);
          pair_.block(rows.data() + a0, na, rows.data() + first, nb, d.data());
          for (size_t r = 0; r < na; ++r) {
            const uint32_t a = nw[a0 + r];
            for (size_t c = a0 + r + 1; c < nw.size(); ++c) {
              const float dist = d[r * nb + (c - first)];
              if (dist < bound[a0 + r]) propose(a, nw[c], dist);
              if (dist < bound[c]) propose(nw[c], a, dist);
            }
          }
        }
      }
    }
    proposed_ += proposed;
    listed_ += listed;
  }

  float worst(uint32_t v) const { return dist_[static_cast<size_t>(v) * k_ + k_ - 1]; }

  /** Whether u is in v's list (a distance is the same bits wherever it is computed, so a listed
   *  id is the same (distance, id) entry). A plain loop: the compiler compares ids in vectors. */
  bool in_list(uint32_t v, uint32_t u) const {
    const uint32_t* ids = ids_.data() + static_cast<size_t>(v) * k_;
    uint32_t any = 0;  // not bool: GCC vectorizes an integer OR, not a bool one
    for (uint32_t j = 0; j < k_; ++j) any |= ids[j] == u;
    return any != 0;
  }

  /** Applies this chunk's proposals; thread t owns the targets with id % nt == t. */
  int64_t update() {
    int64_t changed = 0, listed = 0;
    const size_t nt = static_cast<size_t>(nt_);
    if (bucket_.size() != nt) bucket_.resize(nt);
#pragma omp parallel num_threads(nt_) reduction(+ : changed, listed)
    {
      const size_t t = static_cast<size_t>(omp_get_thread_num());
      // The proposals of this thread's targets (t, t + nt, ...), bucketed by target (a counting
      // sort over the targets that got any: O(P), not O(n / nt) a chunk), then each bucket
      // sorted by (distance, id). That is the order a full sort by (target, distance, id) gives
      // within a target, and targets are independent: the full sort was a quarter of the build.
      bucket_state& b = bucket_[t];
      if (b.count.empty()) b.count.assign(size_t((n_ - int64_t(t) + nt_ - 1) / nt_), 0);
      b.touched.clear();
      size_t total = 0;
      for (size_t w = 0; w < nt; ++w)
        for (const proposal& p : props_[w * nt + t]) {
          const uint32_t slot = p.target / uint32_t(nt);
          if (b.count[slot]++ == 0) b.touched.push_back(slot);
          ++total;
        }
      // Offsets in the order the targets were first seen; count[] becomes each bucket's fill.
      b.start.resize(b.touched.size() + 1);
      b.start[0] = 0;
      for (size_t i = 0; i < b.touched.size(); ++i) {
        const uint32_t slot = b.touched[i];
        b.start[i + 1] = b.start[i] + b.count[slot];
        b.count[slot] = uint32_t(b.start[i]);
      }
      b.mine.resize(total);
      for (size_t w = 0; w < nt; ++w)
        for (const proposal& p : props_[w * nt + t]) b.mine[b.count[p.target / uint32_t(nt)]++] = p;
      for (size_t i = 0; i < b.touched.size(); ++i) {
        b.count[b.touched[i]] = 0;  // clean for the next chunk
        const proposal* first = b.mine.data() + b.start[i];
        changed += insert_into(first->target, first, b.mine.data() + b.start[i + 1], listed);
      }
    }
    listed_ += listed;
    return changed;
  }

  /** Inserts proposals [p, pe) (any order) into v's sorted list, which keeps the k smallest
   *  distinct (distance, id) entries of the list and the proposals: the same list whatever the
   *  order. Returns the entries that entered and stayed, each marked new. (Inserted entries carry
   *  a 2 until the end, so that one pushed out again by a nearer proposal is not counted.)
   *  Counts the proposals that were in the list already into `listed`. */
  int64_t insert_into(uint32_t v, const proposal* p, const proposal* pe, int64_t& listed) {
    const size_t base = static_cast<size_t>(v) * k_;
    float* ld = dist_.data() + base;
    uint32_t* li = ids_.data() + base;
    uint8_t* fl = is_new_.data() + base;
    const uint32_t last = k_ - 1;
    bool any = false;
    for (; p < pe; ++p) {
      const float d = p->dist;
      if (!(d < ld[last] || (d == ld[last] && p->id < li[last]))) continue;
      // The first entry not below (d, id): the list is sorted by (distance, id).
      uint32_t pos = static_cast<uint32_t>(std::lower_bound(ld, ld + k_, d) - ld);
      while (pos < last && ld[pos] == d && li[pos] < p->id) ++pos;
      if (ld[pos] == d && li[pos] == p->id) {
        ++listed;
        continue;
      }
      const size_t tail = last - pos;
      std::memmove(ld + pos + 1, ld + pos, tail * sizeof(float));
      std::memmove(li + pos + 1, li + pos, tail * sizeof(uint32_t));
      std::memmove(fl + pos + 1, fl + pos, tail);
      ld[pos] = d;
      li[pos] = p->id;
      fl[pos] = 2;
      any = true;
    }
    if (!any) return 0;
    int64_t added = 0;
    for (uint32_t j = 0; j < k_; ++j)
      if (fl[j] == 2) {
        fl[j] = 1;
        ++added;
      }
    return added;
  }

  const int64_t n_;
  const uint32_t k_, s_;
  const uint64_t seed_;
  const int nt_;
  const T* x_;
  const size_t dim_;
  const pair_distance<T> pair_;
  std::vector<float> dist_;    // [n, k] each list's distances, ascending by (distance, id)
  std::vector<uint32_t> ids_;  // [n, k] the ids beside them
  std::vector<uint8_t> is_new_;
  // Proposals that beat the target's worst entry, and those of them already in its list, over
  // the current iteration; whether this iteration's join drops the listed ones itself.
  int64_t proposed_ = 0, listed_ = 0;
  bool check_listed_ = false;
  std::vector<uint32_t> fwd_new_, fwd_old_, rev_new_, rev_old_;
  std::vector<size_t> rev_start_, rev_fill_;  // reverse_one's CSR offsets and fill positions
  std::vector<uint32_t> rev_all_;             // and its edges
  std::vector<std::vector<proposal>> props_;  // [joining thread x owner]
  /** One update thread's reusable buffers (count stays all zero between chunks). */
  struct bucket_state {
    std::vector<uint32_t> count, touched;
    std::vector<size_t> start;
    std::vector<proposal> mine;
  };
  std::vector<bucket_state> bucket_;
};

}  // namespace

knn_graph nn_descent(const host_matrix& data, metric m, uint32_t k, const knn_graph_params& p,
                     uint64_t seed, int nt, const progress_fn& progress, uint32_t* iterations_run) {
  CAGRA_EXPECTS(k >= 1 && static_cast<int64_t>(k) < data.rows(),
                "NN-descent needs 1 <= k < rows (k = %u, rows = %lld)", k, (long long)data.rows());
  nt = thread_count(nt);
  return dispatch_storage(data.type(), [&](auto tag) -> knn_graph {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, half>) {
      CAGRA_FAIL("NN-descent runs on f32/u8/i8 vectors (f16 storage is converted by build)");
    } else {
      nn_descent_run<T> run(data, m, k, p, seed, nt);
      run.init();
      const double stop = double(p.termination_threshold) * double(data.rows()) * k;
      uint32_t it = 0;
      while (it < p.max_iterations) {
        int64_t changed = run.iterate(it++);
        if (progress) progress("NN-descent", double(it) / p.max_iterations);
        if (double(changed) < stop) break;
      }
      if (iterations_run) *iterations_run = it;
      if (progress) progress("NN-descent", 1.0);
      return run.result();
    }
  });
}

}  // namespace cagra::cpu
