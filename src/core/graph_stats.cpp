// cagra::analyze: the reachability metrics of paper §III-A (strongly connected components and the
// average 2-hop node count) plus the edge-hygiene counts (invalid ids, self loops, duplicates).
//
// Graphs reach 10^8 nodes, so nothing here recurses (a long path would overflow the stack) and
// nothing allocates per node: strong components use Pearce's space-efficient, iterative variant
// of Tarjan's algorithm (one u32 per node plus explicit stacks), weak components a union-find
// with path halving, and the 2-hop counts a per-thread "stamp" array that never needs clearing.
// Ids >= nodes are counted as invalid and ignored by every traversal.
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <new>
#include <vector>

#include <cagra/cagra.hpp>

#include "core/backend.hpp"

namespace cagra {
namespace {

// Scratch of one OpenMP thread, allocated before the parallel regions: an exception (bad_alloc)
// must never escape a parallel region, where it would terminate the program.
struct thread_buffers {
  std::vector<uint32_t> stamp;  // [nodes], see count_edges / avg_two_hop
  std::vector<uint32_t> bad;    // capacity = degree, so push_back never reallocates
};

struct edge_counts {
  int64_t invalid = 0, self = 0, duplicate = 0;
};

// Counts invalid ids, self loops and repeated ids per row. A per-thread stamp array marks the
// valid ids already seen in the current row (stamp = row + 1, unique per row, so it is never
// cleared); the rare invalid ids are deduplicated by sorting a small per-row buffer.
edge_counts count_edges(matrix_view<const uint32_t> g, std::vector<thread_buffers>& buf) {
  const int64_t n = g.rows, d = g.cols;
  int64_t invalid = 0, self = 0, duplicate = 0;
#pragma omp parallel num_threads(int(buf.size())) reduction(+ : invalid, self, duplicate)
  {
    std::vector<uint32_t>& stamp = buf[size_t(omp_get_thread_num())].stamp;
    std::vector<uint32_t>& bad = buf[size_t(omp_get_thread_num())].bad;
    std::fill(stamp.begin(), stamp.end(), 0u);
#pragma omp for schedule(static)
    for (int64_t v = 0; v < n; ++v) {
      const uint32_t* row = g.row(v);
      const uint32_t s = uint32_t(v) + 1;
      bad.clear();
      for (int64_t j = 0; j < d; ++j) {
        const uint32_t w = row[j];
        if (w >= uint64_t(n)) {
          bad.push_back(w);
          continue;
        }
        if (w == uint32_t(v)) ++self;
        if (stamp[w] == s) ++duplicate;
        stamp[w] = s;
      }
      invalid += int64_t(bad.size());
      if (bad.size() > 1) {
        std::sort(bad.begin(), bad.end());
        for (size_t j = 1; j < bad.size(); ++j) duplicate += bad[j] == bad[j - 1];
      }
    }
  }
  return {invalid, self, duplicate};
}

// Mean number of distinct nodes other than v reachable from v in one or two hops, over
// `samples` evenly spaced nodes (all when samples == n). The stamp of node v is v + 1, so the
// per-thread array needs no reset between nodes.
double avg_two_hop(matrix_view<const uint32_t> g, int64_t samples,
                   std::vector<thread_buffers>& buf) {
  const int64_t n = g.rows, d = g.cols;
  double total = 0;
#pragma omp parallel num_threads(int(buf.size())) reduction(+ : total)
  {
    std::vector<uint32_t>& stamp = buf[size_t(omp_get_thread_num())].stamp;
    std::fill(stamp.begin(), stamp.end(), 0u);  // count_edges used the same stamp values
    // Dynamic: rows with many invalid ids or duplicates are cheaper than others.
#pragma omp for schedule(dynamic, 256)
    for (int64_t i = 0; i < samples; ++i) {
      const int64_t v = samples == n ? i : i * n / samples;  // i * n < 2^62: no overflow
      const uint32_t s = uint32_t(v) + 1;
      stamp[size_t(v)] = s;  // v itself is never counted
      int64_t count = 0;
      const uint32_t* row = g.row(v);
      for (int64_t j = 0; j < d; ++j) {
        const uint32_t u = row[j];
        if (u < uint64_t(n) && stamp[u] != s) {
          stamp[u] = s;
          ++count;
        }
      }
      for (int64_t j = 0; j < d; ++j) {
        const uint32_t u = row[j];
        if (u >= uint64_t(n)) continue;
        const uint32_t* row2 = g.row(u);
        for (int64_t k = 0; k < d; ++k) {
          const uint32_t w = row2[k];
          if (w < uint64_t(n) && stamp[w] != s) {
            stamp[w] = s;
            ++count;
          }
        }
      }
      total += double(count);
    }
  }
  return samples > 0 ? total / double(samples) : 0.0;
}

// Strongly connected components: Pearce, "A space-efficient algorithm for finding strongly
// connected components" (IPL 2016), made iterative with an explicit call stack. rindex[v] is 0
// while unvisited, then v's DFS number (later lowered to the lowest reachable one), and finally
// its component number. Component numbers count down from n while DFS numbers count up from 1
// and are recycled as nodes finish, so a finished node's value is always above every active
// one and edges into finished components never lower anything. Values stay in [1, n] < 2^31.
int64_t strong_components(matrix_view<const uint32_t> g) {
  const int64_t n = g.rows, d = g.cols;
  std::vector<uint32_t> rindex(size_t(n), 0);
  std::vector<uint8_t> root(size_t(n), 0);
  std::vector<uint32_t> pending;  // visited non-root nodes whose component is still open
  struct frame {
    uint32_t v;
    uint32_t next;  // next out-edge slot to look at (d < 2^32: checked by analyze)
  };
  std::vector<frame> call;
  uint32_t next_index = 1, next_comp = uint32_t(n);
  int64_t components = 0;

  auto begin_visit = [&](uint32_t v) {
    rindex[v] = next_index++;
    root[v] = 1;
    call.push_back({v, 0});
  };
  for (int64_t start = 0; start < n; ++start) {
    if (rindex[size_t(start)] != 0) continue;
    begin_visit(uint32_t(start));
    while (!call.empty()) {
      const uint32_t v = call.back().v;
      const uint32_t* row = g.row(v);
      bool descended = false;
      while (call.back().next < d) {
        const uint32_t w = row[call.back().next++];
        if (w >= uint64_t(n)) continue;
        if (rindex[w] == 0) {  // tree edge: v's low is updated when w finishes (below)
          begin_visit(w);
          descended = true;
          break;
        }
        if (rindex[w] < rindex[v]) {
          rindex[v] = rindex[w];
          root[v] = 0;
        }
      }
      if (descended) continue;

      call.pop_back();
      if (root[v]) {  // v closes a component: v plus every later-visited pending node
        --next_index;
        while (!pending.empty() && rindex[v] <= rindex[pending.back()]) {
          rindex[pending.back()] = next_comp;
          pending.pop_back();
          --next_index;
        }
        rindex[v] = next_comp--;
        ++components;
      } else {
        pending.push_back(v);
      }
      if (!call.empty()) {
        const uint32_t p = call.back().v;
        if (rindex[v] < rindex[p]) {
          rindex[p] = rindex[v];
          root[p] = 0;
        }
      }
    }
  }
  return components;
}

// Weak components: union-find over the undirected edges, path halving, union by size.
int64_t weak_components(matrix_view<const uint32_t> g) {
  const int64_t n = g.rows, d = g.cols;
  std::vector<uint32_t> parent(static_cast<size_t>(n)), size(static_cast<size_t>(n), 1);
  for (int64_t v = 0; v < n; ++v) parent[size_t(v)] = uint32_t(v);
  auto find = [&](uint32_t x) {
    while (parent[x] != x) {
      parent[x] = parent[parent[x]];
      x = parent[x];
    }
    return x;
  };
  int64_t components = n;
  for (int64_t v = 0; v < n; ++v) {
    const uint32_t* row = g.row(v);
    for (int64_t j = 0; j < d; ++j) {
      if (row[j] >= uint64_t(n)) continue;
      uint32_t a = find(uint32_t(v)), b = find(row[j]);
      if (a == b) continue;
      if (size[a] < size[b]) std::swap(a, b);
      parent[b] = a;
      size[a] += size[b];
      --components;
    }
  }
  return components;
}

}  // namespace

graph_stats analyze(const resources& res, matrix_view<const uint32_t> graph,
                    int64_t two_hop_samples) {
  CAGRA_EXPECTS(graph.space == memory_space::host, "analyze: the graph must be in host memory");
  CAGRA_EXPECTS(graph.rows >= 0 && graph.rows <= kMaxRows,
                "analyze: graph has %lld rows, outside [0, 2^31-1]", (long long)graph.rows);
  CAGRA_EXPECTS(graph.cols >= 0 && graph.cols <= int64_t(UINT32_MAX),
                "analyze: graph degree %lld outside [0, 2^32-1]", (long long)graph.cols);
  CAGRA_EXPECTS(graph.data != nullptr || graph.rows == 0 || graph.cols == 0,
                "analyze: graph data is null but the graph has %lld x %lld entries",
                (long long)graph.rows, (long long)graph.cols);
  CAGRA_EXPECTS(two_hop_samples >= 0, "analyze: two_hop_samples is %lld, must be >= 0",
                (long long)two_hop_samples);

  graph_stats st;
  st.nodes = graph.rows;
  st.degree = uint32_t(graph.cols);
  if (graph.rows == 0) return st;
  if (graph.cols == 0) {  // no edges: every node is its own component, nothing to read
    st.strong_components = st.weak_components = graph.rows;
    return st;
  }

  const int64_t samples =
      two_hop_samples == 0 ? graph.rows : std::min<int64_t>(two_hop_samples, graph.rows);
  // Small graphs run on one thread: starting a team (and, on a busy machine, waiting for
  // descheduled threads at its barriers) costs more than the whole computation.
  const double work = double(graph.rows) * graph.cols + double(samples) * graph.cols * graph.cols;
  const int nt = work < 1e6 ? 1 : core::host_threads(res.num_threads);
  auto progress = [&](double f) {
    if (res.progress) res.progress("analyze", f);
  };
  progress(0.0);
  std::vector<thread_buffers> buf;
  try {
    buf.resize(size_t(nt));
    for (thread_buffers& b : buf) {
      b.stamp.assign(size_t(graph.rows), 0);
      b.bad.reserve(size_t(graph.cols));
    }
  } catch (const std::bad_alloc&) {
    CAGRA_FAIL(
        "analyze: out of memory for %d per-thread arrays of %lld nodes (lower "
        "resources::num_threads)",
        nt, (long long)graph.rows);
  }
  const edge_counts e = count_edges(graph, buf);
  st.invalid_edges = e.invalid;
  st.self_loops = e.self;
  st.duplicate_edges = e.duplicate;
  progress(0.1);

  st.two_hop_samples = samples;
  st.avg_two_hop = avg_two_hop(graph, st.two_hop_samples, buf);
  buf = {};  // free the stamps before the traversals allocate theirs
  progress(0.5);

  // The two traversals are sequential algorithms; run them side by side when we have threads.
  // Their allocations may throw, which must not escape the parallel region: carry it out.
  int64_t scc = 0, wcc = 0;
  std::exception_ptr failed[2];
#pragma omp parallel sections num_threads(std::min(nt, 2))
  {
#pragma omp section
    try {
      scc = strong_components(graph);
    } catch (...) {
      failed[0] = std::current_exception();
    }
#pragma omp section
    try {
      wcc = weak_components(graph);
    } catch (...) {
      failed[1] = std::current_exception();
    }
  }
  for (const std::exception_ptr& e : failed) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      CAGRA_FAIL("analyze: out of memory for the component search on %lld nodes",
                 (long long)graph.rows);
    }
  }
  st.strong_components = scc;
  st.weak_components = wcc;
  progress(1.0);
  return st;
}

}  // namespace cagra
