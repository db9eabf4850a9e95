// Partitioned kNN graph (core/partitioned_knn.hpp): k-means partitions with overlap, one kNN
// graph per partition on the backend, lists merged on the host.
#include "core/partitioned_knn.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <memory>

#include <omp.h>

#include "core/bits.hpp"
#include "core/device_memory.hpp"
#include "core/half.hpp"
#include "core/knn_checkpoint.hpp"
#include "core/multi_gpu/multi_gpu.hpp"
#include "core/plan.hpp"
#include "core/visited_hash.hpp"

namespace cagra::core {
namespace {

constexpr int kLloydIterations = 10;
constexpr int kMaxSplitDepth = 4;

/** Row `i` of `data` as f32. */
void row_as_float(const host_matrix& data, int64_t i, float* out) {
  const int64_t dim = data.cols();
  const uint8_t* p = data.row_bytes(i);
  switch (data.type()) {
    case dtype::f32: std::memcpy(out, p, size_t(dim) * 4); break;
    case dtype::f16:
      for (int64_t j = 0; j < dim; ++j) out[j] = half_to_float(reinterpret_cast<const half*>(p)[j]);
      break;
    case dtype::u8:
      for (int64_t j = 0; j < dim; ++j) out[j] = float(p[j]);
      break;
    case dtype::i8:
      for (int64_t j = 0; j < dim; ++j) out[j] = float(reinterpret_cast<const int8_t*>(p)[j]);
      break;
    default: CAGRA_FAIL("partitioned kNN: unexpected storage type %s", to_string(data.type()));
  }
}

/** Centers [c, dim] transposed to [dim, c], so that the distances to all centers are one loop
 *  over the centers per coordinate (vectorized without reassociating a sum). */
struct center_set {
  int64_t count = 0, dim = 0;
  std::vector<float> by_dim;  // [dim, count]
};

/** The `top` (1 or 2) nearest centers of each row in `rows` (by (distance, center)). */
std::vector<uint32_t> nearest_centers(const host_matrix& data, const std::vector<uint32_t>& rows,
                                      const center_set& c, int top, int nt) {
  const int64_t n = int64_t(rows.size()), dim = data.cols(), nc = c.count;
  std::vector<uint32_t> out(size_t(n) * top);
#pragma omp parallel num_threads(nt)
  {
    std::vector<float> x(static_cast<size_t>(dim)), acc(static_cast<size_t>(nc));
#pragma omp for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      row_as_float(data, rows[size_t(i)], x.data());
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t j = 0; j < dim; ++j) {
        const float xj = x[size_t(j)];
        const float* cj = c.by_dim.data() + size_t(j) * size_t(nc);
        for (int64_t k = 0; k < nc; ++k) {
          const float t = xj - cj[k];
          acc[size_t(k)] += t * t;
        }
      }
      uint32_t b0 = 0, b1 = nc > 1 ? 1 : 0;
      if (nc > 1 && acc[1] < acc[0]) std::swap(b0, b1);
      for (int64_t k = 2; k < nc; ++k) {
        if (acc[size_t(k)] < acc[b0]) {
          b1 = b0;
          b0 = uint32_t(k);
        } else if (acc[size_t(k)] < acc[b1]) {
          b1 = uint32_t(k);
        }
      }
      out[size_t(i) * top] = b0;
      if (top == 2) out[size_t(i) * top + 1] = b1;
    }
  }
  return out;
}

/** `count` k-means centers of `rows`: Lloyd on an evenly strided sample, seeded with distinct
 *  random sample rows; a cluster that empties keeps its center. */
center_set kmeans(const host_matrix& data, const std::vector<uint32_t>& rows, int64_t count,
                  uint64_t seed, int nt) {
  const int64_t n = int64_t(rows.size()), dim = data.cols();
  const int64_t s = std::min<int64_t>(n, std::max<int64_t>(20000, 64 * count));
  std::vector<uint32_t> sample(static_cast<size_t>(s));
  for (int64_t i = 0; i < s; ++i) sample[size_t(i)] = rows[size_t(i * n / s)];
  // Initial centers: a partial Fisher-Yates shuffle of the sample, from the seed.
  std::vector<uint32_t> order(static_cast<size_t>(s));
  for (int64_t i = 0; i < s; ++i) order[size_t(i)] = uint32_t(i);
  for (int64_t i = 0; i < count; ++i) {
    const int64_t j = i + int64_t(bits::mix64(seed ^ uint64_t(i)) % uint64_t(s - i));
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  center_set c{count, dim, std::vector<float>(size_t(dim * count))};
  std::vector<float> x(static_cast<size_t>(dim));
  for (int64_t k = 0; k < count; ++k) {
    row_as_float(data, sample[order[size_t(k)]], x.data());
    for (int64_t j = 0; j < dim; ++j) c.by_dim[size_t(j * count + k)] = x[size_t(j)];
  }
  for (int it = 0; it < kLloydIterations; ++it) {
    const std::vector<uint32_t> a = nearest_centers(data, sample, c, 1, nt);
    std::vector<double> sum(size_t(count * dim), 0.0);
    std::vector<int64_t> members(static_cast<size_t>(count), 0);
    for (int64_t i = 0; i < s; ++i) {  // serial: the sums do not depend on the thread count
      row_as_float(data, sample[size_t(i)], x.data());
      double* si = sum.data() + size_t(a[size_t(i)]) * size_t(dim);
      for (int64_t j = 0; j < dim; ++j) si[j] += x[size_t(j)];
      ++members[a[size_t(i)]];
    }
    for (int64_t k = 0; k < count; ++k)
      if (members[size_t(k)] > 0)
        for (int64_t j = 0; j < dim; ++j)
          c.by_dim[size_t(j * count + k)] =
              float(sum[size_t(k * dim + j)] / double(members[size_t(k)]));
  }
  return c;
}

/** Splits `rows` (ascending) into pieces of at most max_rows by k-means on its members, and
 *  appends them to `out`. */
void split(const host_matrix& data, std::vector<uint32_t> rows, int64_t max_rows, uint64_t seed,
           int depth, int nt, std::vector<std::vector<uint32_t>>& out) {
  const int64_t n = int64_t(rows.size());
  if (n <= max_rows) {
    if (n > 0) out.push_back(std::move(rows));
    return;
  }
  if (depth >= kMaxSplitDepth) {  // clusters that will not separate (e.g. repeated rows)
    for (int64_t i = 0; i < n; i += max_rows)
      out.emplace_back(rows.begin() + i, rows.begin() + std::min(n, i + max_rows));
    return;
  }
  const int64_t parts = std::min<int64_t>(n, (2 * n + max_rows - 1) / max_rows);
  const center_set c = kmeans(data, rows, parts, bits::mix64(seed + uint64_t(depth)), nt);
  const std::vector<uint32_t> a = nearest_centers(data, rows, c, 1, nt);
  std::vector<std::vector<uint32_t>> sub(static_cast<size_t>(parts));
  for (int64_t i = 0; i < n; ++i) sub[a[size_t(i)]].push_back(rows[size_t(i)]);
  rows = {};
  for (int64_t k = 0; k < parts; ++k)
    split(data, std::move(sub[size_t(k)]), max_rows, seed + uint64_t(k) + 1, depth + 1, nt, out);
}

/** Rows of `data` gathered into one matrix. */
host_matrix gather(const host_matrix& data, const std::vector<uint32_t>& rows, int nt) {
  host_matrix m(data.type(), int64_t(rows.size()), data.cols());
  const size_t row_bytes = size_t(data.cols()) * dtype_size(data.type());
  uint8_t* dst = static_cast<uint8_t*>(m.data());
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t i = 0; i < int64_t(rows.size()); ++i)
    std::memcpy(dst + size_t(i) * row_bytes, data.row_bytes(rows[size_t(i)]), row_bytes);
  return m;
}

/** Merges (ids, dist) of `have` entries with a new sorted list into at most k, in place. */
void merge_lists(uint32_t* ids, float* dist, uint32_t& have, const uint32_t* new_ids,
                 const float* new_dist, uint32_t n_new, uint32_t k, visited_hash& seen,
                 std::vector<uint32_t>& out_ids, std::vector<float>& out_dist) {
  seen.clear();
  uint32_t a = 0, b = 0, n_out = 0;
  while (n_out < k && (a < have || b < n_new)) {
    const bool take_old =
        b >= n_new ||
        (a < have && (dist[a] < new_dist[b] || (dist[a] == new_dist[b] && ids[a] <= new_ids[b])));
    const uint32_t id = take_old ? ids[a] : new_ids[b];
    const float d = take_old ? dist[a++] : new_dist[b++];
    if (!seen.insert(id)) continue;
    out_ids[n_out] = id;
    out_dist[n_out++] = d;
  }
  for (uint32_t i = 0; i < n_out; ++i) {
    ids[i] = out_ids[i];
    dist[i] = out_dist[i];
  }
  have = n_out;
}

}  // namespace

std::vector<std::vector<uint32_t>> partition_rows(const host_matrix& data, int64_t max_rows,
                                                  int64_t min_rows, uint64_t seed,
                                                  int num_threads) {
  const int64_t n = data.rows();
  std::vector<uint32_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) all[size_t(i)] = uint32_t(i);
  if (n <= max_rows || n < 2 * min_rows) return {all};
  // Clusters of max_rows / 2 rows on average: each row is in two, and the sizes vary.
  const int64_t clusters = std::max<int64_t>(2, (4 * n + max_rows - 1) / max_rows);
  const center_set c = kmeans(data, all, clusters, seed, num_threads);
  const std::vector<uint32_t> a = nearest_centers(data, all, c, 2, num_threads);
  std::vector<std::vector<uint32_t>> members(static_cast<size_t>(clusters));
  for (int64_t i = 0; i < n; ++i)
    for (int t = 0; t < 2; ++t) members[a[size_t(2 * i + t)]].push_back(uint32_t(i));
  std::vector<std::vector<uint32_t>> parts, small;
  for (int64_t k = 0; k < clusters; ++k) {
    std::vector<std::vector<uint32_t>> pieces;
    split(data, std::move(members[size_t(k)]), max_rows, bits::mix64(seed + uint64_t(k) + 1), 0,
          num_threads, pieces);
    for (auto& p : pieces) (int64_t(p.size()) >= min_rows ? parts : small).push_back(std::move(p));
  }
  // Small clusters are pooled in order into partitions of min_rows .. max_rows rows (a row in
  // two of them appears once); what is left joins the last pool, or stands alone.
  std::vector<uint32_t> pool;
  auto flush = [&] {
    std::sort(pool.begin(), pool.end());
    pool.erase(std::unique(pool.begin(), pool.end()), pool.end());
    if (!pool.empty()) parts.push_back(std::move(pool));
    pool.clear();
  };
  for (auto& p : small) {
    if (int64_t(pool.size() + p.size()) > max_rows) flush();
    pool.insert(pool.end(), p.begin(), p.end());
    if (int64_t(pool.size()) >= min_rows) flush();
  }
  if (!pool.empty()) {
    if (!parts.empty() && int64_t(parts.back().size() + pool.size()) <= max_rows) {
      pool.insert(pool.end(), parts.back().begin(), parts.back().end());
      parts.pop_back();
    }
    flush();
  }
  return parts;
}

knn_graph partitioned_knn(const backend_ops& be, const host_matrix& data, metric m, uint32_t k,
                          const knn_graph_params& params, uint64_t seed, int64_t max_rows,
                          const resources& res, partition_stats* stats, bool overlap) {
  const int nt = host_threads(res.num_threads);
  const int64_t n = data.rows();
  const std::vector<std::vector<uint32_t>> parts =
      partition_rows(data, max_rows, min_partition_rows(k), seed, nt);
  partition_stats st;
  st.partitions = int64_t(parts.size());
  knn_graph g;
  g.rows = n;
  g.k = k;
  g.ids.assign(size_t(n) * k, kInvalidId);
  g.distances.assign(size_t(n) * k, 0.f);
  std::vector<uint32_t> have(static_cast<size_t>(n), 0u);
  knn_graph_params one = params;
  one.partition_rows = 0;
  one.checkpoint_dir.clear();
  if (!params.checkpoint_dir.empty()) prepare_checkpoint_dir(params.checkpoint_dir);

  // One partition's kNN graph: its rows gathered and its checkpoint looked up on this thread
  // (OpenMP teams), then built on the backend (and saved to the checkpoint folder).
  struct built_part {
    knn_graph local;
    uint32_t iterations = 0;
    bool resumed = false;
    std::string rebuilt_why;  // a checkpoint file that could not be used
    host_matrix sub;          // the gathered rows, until the backend has them
    knn_algo algo = knn_algo::nn_descent;
    uint32_t pk = 0;
    uint64_t seed = 0, fingerprint = 0;
    std::string path;
  };
  auto prepare = [&](size_t pi) {
    auto out = std::make_shared<built_part>();
    const std::vector<uint32_t>& rows = parts[pi];
    const int64_t pn = int64_t(rows.size());
    if (pn < 2) return out;
    out->pk = uint32_t(std::min<int64_t>(k, pn - 1));
    out->sub = gather(data, rows, nt);
    out->seed = bits::mix64(seed + pi);
    out->algo = resolve_knn_algo(params.algo, pn, out->pk, be.kind());
    if (out->algo == knn_algo::brute_force && out->pk > be.brute_force_max_k())
      out->algo = knn_algo::nn_descent;
    if (!params.checkpoint_dir.empty()) {
      out->fingerprint = knn_part_fingerprint(out->sub, rows, n, m, out->pk, out->algo, one,
                                              out->seed, pi, parts.size());
      out->path = knn_part_path(params.checkpoint_dir, pi, parts.size());
      out->resumed =
          load_knn_part(out->path, out->fingerprint, pn, out->pk, out->local, out->rebuilt_why);
    }
    if (out->resumed) out->sub = host_matrix();
    return out;
  };
  auto compute = [&](std::shared_ptr<built_part> p, const resources& r) {
    if (p->sub.rows() >= 2) {  // (a resumed or too small partition holds no rows here)
      p->local = p->algo == knn_algo::nn_descent
                     ? be.nn_descent(p->sub, m, p->pk, one, p->seed, r, &p->iterations)
                     : be.brute_force(p->sub, p->sub, m, p->pk, true, r);
      p->sub = host_matrix();
      if (!p->path.empty()) save_knn_part(p->path, p->fingerprint, p->local);
    }
    return p;
  };

  // Overlapped (a GPU backend, and room on the host for a second partition's lists): partition
  // i + 1 is gathered here, then built on a worker thread (the backend's call: no OpenMP team of
  // its own) while this thread merges partition i. The merges run in the same order either way,
  // so the graph does not depend on it.
  int64_t largest = 0;
  for (const auto& p : parts) largest = std::max(largest, int64_t(p.size()));
  const uint64_t room =
      uint64_t(largest) * (uint64_t(data.cols()) * dtype_size(data.type()) + 2 * uint64_t(k) * 8) +
      (uint64_t{1} << 30);
  const bool pipelined = overlap && parts.size() > 1 && available_host_memory() >= room;
  resources quiet = res;  // the worker reports nothing: progress comes from this thread
  quiet.progress = nullptr;
  auto start = [&](size_t pi) {
    std::shared_ptr<built_part> p = prepare(pi);
    return pipelined ? std::async(std::launch::async, compute, std::move(p), std::cref(quiet))
                     : std::async(std::launch::deferred, compute, std::move(p), std::cref(res));
  };
  std::future<std::shared_ptr<built_part>> next = start(0);
  for (size_t pi = 0; pi < parts.size(); ++pi) {
    const std::shared_ptr<built_part> done = next.get();
    built_part& cur = *done;
    if (pipelined && pi + 1 < parts.size()) next = start(pi + 1);
    const std::vector<uint32_t>& rows = parts[pi];
    const int64_t pn = int64_t(rows.size());
    st.largest = std::max(st.largest, pn);
    st.rows_built += pn;
    st.iterations = std::max(st.iterations, cur.iterations);
    if (cur.resumed) ++st.resumed;
    if (!cur.rebuilt_why.empty() && res.progress)
      res.progress(("kNN partition checkpoint rebuilt (" + cur.rebuilt_why + ")").c_str(), 0.0);
    const knn_graph& local = cur.local;
    const uint32_t pk = cur.pk;
    const int64_t merged = local.rows > 0 ? pn : 0;  // 0: a partition of fewer than two rows
#pragma omp parallel num_threads(nt)
    {
      visited_hash seen;
      seen.resize(std::max(4u, bits::ceil_log2(2 * uint64_t(k))));
      std::vector<uint32_t> ids(pk), out_ids(k);
      std::vector<float> out_dist(k);
#pragma omp for schedule(static)
      for (int64_t i = 0; i < merged; ++i) {
        const uint32_t row = rows[size_t(i)];
        for (uint32_t j = 0; j < pk; ++j) ids[j] = rows[local.ids[size_t(i) * pk + j]];
        uint32_t* gi = g.ids.data() + size_t(row) * k;
        float* gd = g.distances.data() + size_t(row) * k;
        merge_lists(gi, gd, have[row], ids.data(), local.distances.data() + size_t(i) * pk, pk, k,
                    seen, out_ids, out_dist);
      }
    }
    if (res.progress) res.progress("kNN partitions", double(pi + 1) / double(parts.size()));
    if (!pipelined && pi + 1 < parts.size()) next = start(pi + 1);
  }
  st.pipelined = pipelined;
  // Rows left short: random rows (distinct, not the row itself) with their distances, sorted.
  std::atomic<int64_t> completed{0};
#pragma omp parallel num_threads(nt)
  {
    std::vector<std::pair<float, uint32_t>> list(k);
    std::vector<float> d(k);
#pragma omp for schedule(dynamic, 1024)
    for (int64_t x = 0; x < n; ++x) {
      uint32_t h = have[size_t(x)];
      if (h >= k) continue;
      completed.fetch_add(1, std::memory_order_relaxed);
      uint32_t* ids = g.ids.data() + size_t(x) * k;
      float* dist = g.distances.data() + size_t(x) * k;
      const uint32_t first_new = h;
      for (uint64_t draw = 0; h < k; ++draw) {
        const uint32_t c = uint32_t(bits::mix64(seed ^ (uint64_t(x) << 20) ^ draw) % uint64_t(n));
        if (c == uint32_t(x) || std::find(ids, ids + h, c) != ids + h) continue;
        ids[h++] = c;
      }
      row_distances(data, m, uint32_t(x), ids + first_new, k - first_new, d.data());
      for (uint32_t j = 0; j < k; ++j)
        list[j] = {j < first_new ? dist[j] : d[j - first_new], ids[j]};
      std::sort(list.begin(), list.end());
      for (uint32_t j = 0; j < k; ++j) {
        dist[j] = list[j].first;
        ids[j] = list[j].second;
      }
    }
  }
  st.completed = completed.load();
  if (stats) *stats = st;
  return g;
}

}  // namespace cagra::core
