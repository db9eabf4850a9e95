// A CPU model of the multi-CTA batch-1 search (src/cuda/search/multi_cta.cuh), for the recall of
// search shapes the kernel does not run yet: how many CTAs, iterations, initial nodes per CTA
// and parents per iteration a query needs for a recall, before a kernel is written for it. It
// follows the kernel step by step: the same initial nodes (bits::initial_node: the query's seed
// state, disjoint strata per CTA), the nearest node of each group of 32 initial nodes into the
// CTA's 32-entry list, then per iteration each CTA expands its nearest unexpanded entries
// (`--width`, the kernel 1), claims their neighbors in the query's visited set (a node belongs
// to the CTA that claims it first) and merges the new ones into its list (dropped unless nearer
// than its 32nd entry); the answer is the k nearest of all lists. The CTAs run in lockstep, in
// order within an iteration (on the GPU they race for claims): a model, checked against the
// kernel's measured recall at the shapes it runs (docs/cuda.md, "Shapes with two iterations").
//
//   multi_cta_sim INDEX QUERIES GROUNDTRUTH [--ctas LIST] [--iterations LIST] [--init LIST]
//                 [--width LIST] [--pool LIST] [--visited shared|cta] [--queries N] [-k K]
//                 [--json FILE] [--dataset NAME] [--lists FILE]
//
// LIST: comma-separated values (every combination runs). --init: initial nodes per CTA
// (default 96, the automatic shape's three rounds of d at degree 32). --pool P: the initial
// nodes from a fixed set of P rows, the same for every query (one pseudo-random row in each of P
// strata: the persistent kernel's pool, core::initial_pool_rows), as the kernel's pool scan
// takes them: CTA c scans the `--init` rows of its slice c (rows c x init .. of the pool, modulo
// P), keeps the nearest of each of 32 groups (as the kernel groups them) and claims those alone; 0
// (the default): random initial nodes from all rows. --visited cta: each CTA claims in a visited
// set of its own (a shared-memory table instead of the query's device hash: no L2 round trip a
// claim, but CTAs may walk the same nodes; the answer takes an id once); shared (the default):
// the kernel's one set a query. --lists FILE appends every query's CTA lists as the host gets
// them (the first k entries of each; CudaLatencyHost.HostMergeRealLists in
// bench/cuda/host_merge_latency.cpp reads them): per query the
// uint32 CTA count and k, then each CTA's k (float distance, uint32 id) pairs, sorted, padded
// with (+inf, 0xFFFFFFFF). Byte (u8/i8) and f32 indexes, L2 only.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>

#include "core/bench_hooks.hpp"
#include "core/bits.hpp"

namespace {

std::vector<uint32_t> parse_list(const std::string& s) {
  std::vector<uint32_t> v;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) v.push_back(uint32_t(std::stoul(t)));
  return v;
}

struct entry {
  float d;
  uint32_t id;
  bool expanded;
  bool operator<(const entry& o) const { return d < o.d || (d == o.d && id < o.id); }
};

struct shape {
  uint32_t ctas, iterations, init, width, pool;
  bool own_visited;  // --visited cta
};

struct model {
  const cagra::index& idx;
  uint32_t k;
  std::vector<uint32_t> stamp;  // visited in query `epoch`
  uint32_t epoch = 0;
  uint64_t distances = 0;
  std::vector<uint32_t> pool;  // initial nodes from these rows (empty: all rows)

  float distance(const uint8_t* q, uint32_t id) {
    ++distances;
    const cagra::host_matrix& v = idx.vectors();
    const uint32_t dim = idx.dim();
    if (v.type() == cagra::dtype::f32) {
      const float* a = reinterpret_cast<const float*>(q);
      const float* b = reinterpret_cast<const float*>(v.row_bytes(id));
      float s = 0;
      for (uint32_t i = 0; i < dim; ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
      return s;
    }
    const bool s8 = v.type() == cagra::dtype::i8;
    const uint8_t* b = v.row_bytes(id);
    int32_t s = 0;
    for (uint32_t i = 0; i < dim; ++i) {
      const int32_t x = s8 ? int8_t(q[i]) : q[i], y = s8 ? int8_t(b[i]) : b[i];
      s += (x - y) * (x - y);
    }
    return float(s);
  }

  std::vector<std::vector<uint32_t>> own;  // --visited cta: each CTA's claimed ids (else empty)
  std::vector<std::vector<entry>> lists;   // the last query's CTA lists

  /** CTA c claims node id: true where no CTA (--visited cta: not CTA c) claimed it before. */
  bool claim(uint32_t c, uint32_t id) {
    if (!own.empty()) {
      std::vector<uint32_t>& v = own[c];
      if (std::find(v.begin(), v.end(), id) != v.end()) return false;
      v.push_back(id);
      return true;
    }
    if (stamp[id] == epoch) return false;
    stamp[id] = epoch;
    return true;
  }

  /** Merges the candidates into the list (the kernel's rule: a candidate enters only while the
   *  list has room or it is nearer than the 32nd entry), keeping 32 entries. */
  static void merge(std::vector<entry>& list, std::vector<entry>& cand) {
    for (const entry& e : cand) {
      if (list.size() == 32 && !(e < list.back())) continue;
      list.insert(std::upper_bound(list.begin(), list.end(), e), e);
      if (list.size() > 32) list.pop_back();
    }
    cand.clear();
  }

  /** One query: the k nearest ids of all CTAs' lists. */
  std::vector<uint32_t> search(const uint8_t* q, size_t q_bytes, const shape& s) {
    ++epoch;
    own.assign(s.own_visited ? s.ctas : 0, {});
    const uint64_t state = cagra::bits::query_seed_state(0, q, uint32_t(q_bytes));
    const uint64_t n = uint64_t(idx.size());
    lists.assign(s.ctas, {});
    for (uint32_t c = 0; c < s.ctas; ++c) {
      std::vector<entry> best(32, entry{0, UINT32_MAX, false});
      if (pool.empty()) {
        for (uint32_t t = 0; t < s.init; ++t) {
          const uint32_t id = cagra::bits::initial_node(state, c, t, s.init, s.ctas, n);
          if (!claim(c, id)) continue;
          const entry e{distance(q, id), id, false};
          entry& b = best[t % 32];
          if (b.id == UINT32_MAX || e < b) b = e;
        }
      } else {  // the kernel's pool scan: slice c, the nearest of each group, then its claim
        for (uint32_t t = 0; t < s.init; ++t) {
          const uint32_t id = pool[(uint64_t{c} * s.init + t) % pool.size()];
          const entry e{distance(q, id), id, false};
          // Row t is scanned by thread t mod 256, whose group is that thread / 8, or t mod 32
          // in a slice of fewer rows than threads (pool_scan).
          const uint32_t threads = 256;  // core::kPoolScanThreads
          entry& b = best[s.init < threads ? t % 32 : t % threads / 8 % 32];
          if (b.id == UINT32_MAX || e < b) b = e;
        }
        for (entry& b : best)
          if (b.id != UINT32_MAX && !claim(c, b.id)) b.id = UINT32_MAX;
      }
      for (const entry& b : best)
        if (b.id != UINT32_MAX) lists[c].push_back(b);
      std::sort(lists[c].begin(), lists[c].end());
    }
    const auto graph = idx.graph();
    std::vector<entry> cand;
    for (uint32_t it = 0; it < s.iterations; ++it) {
      for (uint32_t c = 0; c < s.ctas; ++c) {
        uint32_t parents = 0;
        for (entry& e : lists[c]) {
          if (parents == s.width) break;
          if (e.expanded) continue;
          e.expanded = true;
          ++parents;
          const uint32_t* row = graph.data + uint64_t{e.id} * graph.cols;
          for (int64_t j = 0; j < graph.cols; ++j)
            if (claim(c, row[j])) cand.push_back(entry{distance(q, row[j]), row[j], false});
        }
        merge(lists[c], cand);
      }
    }
    std::vector<entry> all;
    for (const auto& l : lists) all.insert(all.end(), l.begin(), l.end());
    std::sort(all.begin(), all.end());  // an id once (own visited sets: it may be in two lists)
    all.erase(std::unique(all.begin(), all.end(),
                          [](const entry& a, const entry& b) { return a.id == b.id; }),
              all.end());
    const size_t kk = std::min<size_t>(k, all.size());
    std::vector<uint32_t> out(k, UINT32_MAX);
    for (size_t i = 0; i < kk; ++i) out[i] = all[i].id;
    return out;
  }
};

/** One query's CTA lists for --lists: the CTA count and k, then each list's first k entries. */
void write_lists(std::FILE* f, const std::vector<std::vector<entry>>& lists, uint32_t k) {
  const uint32_t head[2] = {uint32_t(lists.size()), k};
  std::fwrite(head, sizeof head, 1, f);
  for (const auto& l : lists)
    for (uint32_t j = 0; j < k; ++j) {
      const entry e = j < l.size() ? l[j] : entry{INFINITY, UINT32_MAX, false};
      std::fwrite(&e.d, 4, 1, f);
      std::fwrite(&e.id, 4, 1, f);
    }
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 4 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr,
                 "usage: multi_cta_sim INDEX QUERIES GROUNDTRUTH [--ctas LIST] [--iterations LIST] "
                 "[--init LIST] [--width LIST] [--pool LIST] [--visited shared|cta] [--queries N] "
                 "[-k K] [--json FILE] [--dataset NAME] [--lists FILE]\n");
    return argc < 4 ? 2 : 0;
  }
  std::vector<uint32_t> ctas{64}, iterations{3}, inits{96}, widths{1}, pools{0};
  int64_t n_queries = 1000;
  uint32_t k = 10;
  bool own_visited = false;
  std::string json, lists_path, name = argv[2];
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string o = argv[i], v = argv[i + 1];
    if (o == "--ctas")
      ctas = parse_list(v);
    else if (o == "--iterations")
      iterations = parse_list(v);
    else if (o == "--init")
      inits = parse_list(v);
    else if (o == "--width")
      widths = parse_list(v);
    else if (o == "--pool")
      pools = parse_list(v);
    else if (o == "--visited") {
      CAGRA_EXPECTS(v == "shared" || v == "cta", "--visited: shared or cta (got %s)", v.c_str());
      own_visited = v == "cta";
    } else if (o == "--queries")
      n_queries = std::stoll(v);
    else if (o == "-k")
      k = uint32_t(std::stoul(v));
    else if (o == "--json")
      json = v;
    else if (o == "--dataset")
      name = v;
    else if (o == "--lists")
      lists_path = v;
    else
      throw std::runtime_error("unknown option " + o);
  }
  const cagra::index idx = cagra::load(argv[1]);
  CAGRA_EXPECTS(idx.metric() == cagra::metric::l2, "the model computes L2 distances only");
  const cagra::host_matrix queries = cagra::io::read_matrix(argv[2]);
  const cagra::io::neighbors_file gt = cagra::io::read_neighbors(argv[3]);
  CAGRA_EXPECTS(queries.type() == idx.storage_dtype() && queries.cols() == idx.dim(),
                "the queries must have the index's element type and dimension");
  CAGRA_EXPECTS(gt.ids.cols() >= k && gt.ids.rows() >= queries.rows(),
                "the ground truth needs k ids for every query");
  n_queries = std::min<int64_t>(n_queries, queries.rows());
  const int64_t step = std::max<int64_t>(1, queries.rows() / n_queries);
  model m{idx, k, std::vector<uint32_t>(size_t(idx.size()), 0), 0, 0, {}, {}, {}};
  std::FILE* out = json.empty() ? nullptr : std::fopen(json.c_str(), "a");
  std::FILE* lists_out = lists_path.empty() ? nullptr : std::fopen(lists_path.c_str(), "ab");
  CAGRA_EXPECTS(lists_path.empty() || lists_out, "cannot open '%s' for appending",
                lists_path.c_str());
  std::printf(
      "%s: %lld x %u, degree %u, %lld queries (one in %lld), k %u, visited %s (a CPU "
      "model)\n",
      name.c_str(), (long long)idx.size(), idx.dim(), idx.graph_degree(), (long long)n_queries,
      (long long)step, k, own_visited ? "per CTA" : "shared");
  std::printf("%6s %5s %5s %6s %8s %10s %12s\n", "ctas", "iter", "init", "width", "pool", "recall",
              "dist/query");
  for (uint32_t p : pools) {
    CAGRA_EXPECTS(p == 0 || (p <= idx.size() && p >= 32), "--pool: 0 or 32 .. rows (got %u)", p);
    m.pool = p ? cagra::bench_hooks::initial_pool_rows(uint64_t(idx.size()), p)
               : std::vector<uint32_t>{};
    for (uint32_t c : ctas)
      for (uint32_t it : iterations)
        for (uint32_t in : inits)
          for (uint32_t w : widths) {
            const shape s{c, it, in, w, p, own_visited};
            m.distances = 0;
            uint64_t hits = 0;
            for (int64_t qi = 0; qi < n_queries; ++qi) {
              const int64_t row = qi * step;
              const uint8_t* q = queries.row_bytes(row);
              const std::vector<uint32_t> ids = m.search(q, queries.view().row_bytes(), s);
              if (lists_out) write_lists(lists_out, m.lists, k);
              const uint32_t* truth = gt.ids.as<uint32_t>().data + row * gt.ids.cols();
              for (uint32_t a = 0; a < k; ++a)
                hits += std::find(truth, truth + k, ids[a]) != truth + k ? 1 : 0;
            }
            const double recall = double(hits) / double(n_queries * k);
            const double dq = double(m.distances) / double(n_queries);
            std::printf("%6u %5u %5u %6u %8u %10.4f %12.0f\n", c, it, in, w, p, recall, dq);
            if (out)
              std::fprintf(out,
                           "{\"tool\":\"multi_cta_sim\",\"dataset\":\"%s\",\"n\":%lld,\"nq\":%lld,"
                           "\"k\":%u,\"ctas\":%u,\"iterations\":%u,\"init\":%u,\"width\":%u,"
                           "\"pool\":%u,\"visited\":\"%s\",\"recall\":%.4f,"
                           "\"distances_per_query\":%.0f}\n",
                           name.c_str(), (long long)idx.size(), (long long)n_queries, k, c, it, in,
                           w, p, own_visited ? "cta" : "shared", recall, dq);
          }
  }
  if (out) std::fclose(out);
  if (lists_out) std::fclose(lists_out);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "multi_cta_sim: %s\n", e.what());
  return 1;
}
