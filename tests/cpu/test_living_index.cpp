// The living index on the CPU backend (docs/living_index.md): extend, remove, compact, labels,
// and their files. Recall is measured on bigann10k against its exact ground truth (or an exact
// oracle over the rows still present), at equal search parameters against a fresh build of the
// same rows, the acceptance rule at 10K scale.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <stdexcept>
#include <string>

#include "core/xxh64.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

index_params params32() {
  index_params p;
  p.graph_degree = 32;
  p.intermediate_graph_degree = 64;
  return p;
}

/** Labels of the k nearest results of every query. */
std::vector<int64_t> search_labels(const index& idx, const host_matrix& q, uint32_t itopk,
                                   uint32_t k = kK) {
  std::vector<int64_t> out(size_t(q.rows()) * k);
  search_params sp;
  sp.itopk_size = itopk;
  search(cpu(), sp, idx, q, k, matrix_view<int64_t>{out.data(), q.rows(), k}, {});
  return out;
}

/** Exact k nearest of each query among `rows` of `base` (u8, squared L2, ties by row), as the
 *  values `label[row]`. */
std::vector<int64_t> exact_labels(const host_matrix& base, const host_matrix& q,
                                  const std::vector<int64_t>& rows,
                                  const std::vector<int64_t>& label, uint32_t k = kK) {
  const int64_t dim = base.cols();
  const auto* x = static_cast<const uint8_t*>(base.data());
  const auto* qq = static_cast<const uint8_t*>(q.data());
  std::vector<int64_t> out(size_t(q.rows()) * k, -1);
  std::vector<std::pair<int64_t, int64_t>> all;
  for (int64_t i = 0; i < q.rows(); ++i) {
    all.clear();
    for (int64_t r : rows) {
      int64_t d = 0;
      for (int64_t j = 0; j < dim; ++j) {
        const int64_t t = int64_t(qq[i * dim + j]) - int64_t(x[r * dim + j]);
        d += t * t;
      }
      all.push_back({d, r});
    }
    const size_t m = std::min<size_t>(k, all.size());
    std::partial_sort(all.begin(), all.begin() + m, all.end());
    for (size_t j = 0; j < m; ++j) out[size_t(i) * k + j] = label[size_t(all[j].second)];
  }
  return out;
}

double recall_of(const std::vector<int64_t>& found, const std::vector<int64_t>& truth,
                 uint32_t k = kK) {
  int64_t hits = 0, wanted = 0;
  for (size_t i = 0; i < truth.size() / k; ++i)
    for (uint32_t a = 0; a < k; ++a) {
      const int64_t t = truth[i * k + a];
      if (t < 0) continue;
      ++wanted;
      hits += std::count(found.begin() + i * k, found.begin() + (i + 1) * k, t) > 0;
    }
  return wanted ? double(hits) / double(wanted) : 1.0;
}

/** Fixed degree, no self loops, no duplicates, ids in range, no edge to a deleted row when
 *  `no_deleted_targets`, labels one-to-one. */
void check_invariants(const index& idx, bool no_deleted_targets) {
  const graph_stats s = analyze(cpu(), idx.graph(), 64);
  EXPECT_EQ(s.invalid_edges, 0);
  EXPECT_EQ(s.self_loops, 0);
  EXPECT_EQ(s.duplicate_edges, 0);
  if (no_deleted_targets) {
    for (int64_t r = 0; r < idx.size(); ++r)
      for (uint32_t t = 0; t < idx.graph_degree(); ++t)
        ASSERT_FALSE(idx.is_deleted(idx.graph().row(r)[t])) << "row " << r;
  }
  if (idx.has_labels()) {
    std::set<int64_t> seen(idx.labels().begin(), idx.labels().end());
    EXPECT_EQ(int64_t(seen.size()), idx.size());
    for (int64_t r = 0; r < idx.size(); r += 97) EXPECT_EQ(idx.row_of(idx.label_of(r)), r);
  }
}

TEST(LivingIndex, ExtendHalfToFullMatchesFullBuild) {
  const real_set s = bigann10k();
  const int64_t n = s.base.rows(), half = n / 2;
  index full = build(cpu(), params32(), s.base);
  index grown = build(cpu(), params32(), slice(s.base, 0, half));
  extend_params ep;
  ep.chunk_size = 1000;
  extend(cpu(), ep, grown, slice(s.base, half, n - half));
  ASSERT_EQ(grown.size(), n);
  check_invariants(grown, true);
  std::vector<int64_t> truth(size_t(s.queries.rows()) * kK);
  for (int64_t i = 0; i < s.queries.rows(); ++i)
    for (uint32_t j = 0; j < kK; ++j)
      truth[size_t(i) * kK + j] =
          static_cast<const uint32_t*>(s.truth.data())[i * s.truth.cols() + j];
  for (uint32_t itopk : {16u, 32u, 64u}) {
    const double rf = recall_of(search_labels(full, s.queries, itopk), truth);
    const double rg = recall_of(search_labels(grown, s.queries, itopk), truth);
    std::printf("itopk %u: full build %.4f, half + extend %.4f\n", itopk, rf, rg);
    EXPECT_GE(rg, rf - 0.01) << "itopk " << itopk;
  }
}

// extend_report += sums the reports of a stream of calls field by field.
TEST(LivingIndex, ExtendReportsOfAStreamAddUp) {
  extend_report a, b;
  a.rows_added = 3;
  a.chunks = 1;
  a.search_seconds = 0.25;
  a.total_seconds = 1;
  b.rows_added = 5;
  b.chunks = 2;
  b.backend_used = backend::cuda;
  b.setup_seconds = 0.5;
  b.search_seconds = 0.5;
  b.chunk_knn_seconds = 0.125;
  b.prune_seconds = 0.25;
  b.reverse_seconds = 0.0625;
  b.device_seconds = 0.03125;
  b.total_seconds = 2;
  a += b;
  EXPECT_EQ(a.rows_added, 8);
  EXPECT_EQ(a.chunks, 3u);
  EXPECT_EQ(a.backend_used, backend::cuda);
  EXPECT_EQ(a.setup_seconds, 0.5);
  EXPECT_EQ(a.search_seconds, 0.75);
  EXPECT_EQ(a.chunk_knn_seconds, 0.125);
  EXPECT_EQ(a.prune_seconds, 0.25);
  EXPECT_EQ(a.reverse_seconds, 0.0625);
  EXPECT_EQ(a.device_seconds, 0.03125);
  EXPECT_EQ(a.total_seconds, 3);
}

// The same graph on any number of threads, whether rows come one a call (a small extend: its
// steps run on as many threads as it has rows, its asks sorted by comparison) or 2,500 in one
// (the radix sort, every thread).
TEST(LivingIndex, ExtendIsTheSameGraphOnAnyThreadCount) {
  const real_set s = bigann10k();
  const int64_t first = 7000;
  for (const int64_t per_call : {int64_t{1}, int64_t{2500}}) {
    const int64_t added = per_call == 1 ? 150 : 2500;
    std::vector<std::vector<uint32_t>> graphs;
    for (const int threads : {1, 4}) {
      resources res = cpu();
      res.num_threads = threads;
      index idx = build(cpu(), params32(), slice(s.base, 0, first));
      extend_params ep;
      ep.chunk_size = uint32_t(per_call);
      for (int64_t r = first; r < first + added; r += per_call)
        extend(res, ep, idx, slice(s.base, r, std::min(per_call, first + added - r)));
      ASSERT_EQ(idx.size(), first + added);
      check_invariants(idx, true);
      const auto g = idx.graph();
      graphs.emplace_back(g.data, g.data + g.rows * g.cols);
    }
    EXPECT_EQ(graphs[0], graphs[1]) << per_call << " rows a call";
  }
}

std::vector<int64_t> range_labels(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), int64_t{100});
  return v;
}

/** Every row's label, in row order (row numbers when the index has none). */
std::vector<int64_t> all_labels(const index& idx) {
  std::vector<int64_t> l(size_t(idx.size()));
  for (int64_t r = 0; r < idx.size(); ++r) l[size_t(r)] = idx.label_of(r);
  return l;
}

/** A random `share` of the index's live labels (seeded). */
std::vector<int64_t> random_labels(const index& idx, double share, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> live;
  for (int64_t r = 0; r < idx.size(); ++r)
    if (!idx.is_deleted(r)) live.push_back(idx.label_of(r));
  std::shuffle(live.begin(), live.end(), rng);
  live.resize(size_t(double(live.size()) * share));
  return live;
}

TEST(LivingIndex, RemovedRowsAreNeverReturnedAndRecallHolds) {
  const real_set s = bigann10k();
  const int64_t n = s.base.rows();
  for (double share : {0.1, 0.5}) {
    index idx = build(cpu(), params32(), s.base);
    const std::vector<int64_t> gone = random_labels(idx, share, 7);
    EXPECT_EQ(remove(cpu(), idx, gone.data(), int64_t(gone.size())), int64_t(gone.size()));
    EXPECT_EQ(idx.deleted_count(), int64_t(gone.size()));
    const std::set<int64_t> gone_set(gone.begin(), gone.end());
    std::vector<int64_t> kept_rows;
    for (int64_t r = 0; r < n; ++r)
      if (!gone_set.count(r)) kept_rows.push_back(r);
    std::vector<int64_t> ident(static_cast<size_t>(n));
    std::iota(ident.begin(), ident.end(), int64_t{0});
    const std::vector<int64_t> truth = exact_labels(s.base, s.queries, kept_rows, ident);

    // A fresh build of the rows that remain (its rows -> the original row numbers).
    host_matrix rest(s.base.type(), int64_t(kept_rows.size()), s.base.cols());
    for (size_t i = 0; i < kept_rows.size(); ++i)
      std::memcpy(static_cast<uint8_t*>(rest.data()) + i * size_t(rest.cols()),
                  s.base.row_bytes(kept_rows[i]), size_t(rest.cols()));
    index fresh = build(cpu(), params32(), rest);
    fresh.set_labels(kept_rows);

    for (uint32_t itopk : {32u, 64u}) {
      const std::vector<int64_t> before = search_labels(idx, s.queries, itopk);
      for (int64_t l : before) ASSERT_FALSE(gone_set.count(l)) << "removed label " << l;
      const double r_fresh = recall_of(search_labels(fresh, s.queries, itopk), truth);
      const double r_before = recall_of(before, truth);
      std::printf("remove %.0f%% itopk %u: fresh %.4f, tombstoned %.4f\n", share * 100, itopk,
                  r_fresh, r_before);
      EXPECT_GE(r_before, r_fresh - 0.03);
    }
    compact(cpu(), idx);
    EXPECT_EQ(idx.size(), int64_t(kept_rows.size()));
    EXPECT_EQ(idx.deleted_count(), 0);
    ASSERT_TRUE(idx.has_labels());  // the old row numbers, so results keep their ids
    EXPECT_EQ(idx.labels(), kept_rows);
    check_invariants(idx, true);
    for (uint32_t itopk : {32u, 64u}) {
      const double r_fresh = recall_of(search_labels(fresh, s.queries, itopk), truth);
      const double r_after = recall_of(search_labels(idx, s.queries, itopk), truth);
      std::printf("remove %.0f%% itopk %u: fresh %.4f, compacted %.4f\n", share * 100, itopk,
                  r_fresh, r_after);
      EXPECT_GE(r_after, r_fresh - 0.01);
    }
  }
}

TEST(LivingIndex, LabelsSurviveExtendRemoveCompactSaveLoad) {
  const real_set s = bigann10k();
  index idx = build(cpu(), params32(), slice(s.base, 0, 3000));
  std::vector<int64_t> labels(3000);
  for (int64_t i = 0; i < 3000; ++i) labels[size_t(i)] = 1000000007LL * (i + 1);
  idx.set_labels(labels);
  std::vector<int64_t> more(2000);
  for (int64_t i = 0; i < 2000; ++i) more[size_t(i)] = i + 1;  // row 3000 + i
  extend(cpu(), {}, idx, slice(s.base, 3000, 2000), more.data());
  EXPECT_EQ(idx.row_of(1), 3000);
  EXPECT_EQ(idx.label_of(4999), 2000);
  // A query equal to a stored row finds that row's label first.
  const std::vector<int64_t> hit = search_labels(idx, slice(s.base, 4000, 1), 64);
  EXPECT_EQ(hit[0], 1001);
  const int64_t gone[] = {labels[5], 7};
  remove(cpu(), idx, gone, 2);
  const std::string path = temp_path("labels.cagra");
  save(idx, path);
  index back = load(path);
  EXPECT_EQ(back.labels(), idx.labels());
  EXPECT_EQ(back.deleted_count(), 2);
  EXPECT_TRUE(back.is_deleted(5));
  EXPECT_TRUE(back.is_deleted(3006));
  compact(cpu(), back);
  EXPECT_EQ(back.size(), 4998);
  EXPECT_EQ(back.row_of(labels[5]), -1);
  EXPECT_EQ(back.row_of(7), -1);
  EXPECT_EQ(back.label_of(back.row_of(8)), 8);
  save(back, path);
  index again = load(path);
  EXPECT_EQ(again.labels(), back.labels());
  EXPECT_EQ(again.deleted_count(), 0);
  // An index with neither labels nor tombstones is still written as format version 1.
  index plain = build(cpu(), params32(), slice(s.base, 0, 500));
  save(plain, path);
  const std::vector<uint8_t> bytes = read_bytes(path);
  EXPECT_EQ(bytes[8], 1);
  EXPECT_EQ(bytes[44], 0);
}

/** The index's bytes: vectors, graph, labels, live rows (what "unchanged" means). */
std::vector<uint8_t> fingerprint(const index& idx) {
  std::vector<uint8_t> b(
      static_cast<const uint8_t*>(idx.vectors().data()),
      static_cast<const uint8_t*>(idx.vectors().data()) + idx.vectors().size_bytes());
  auto add = [&](const void* p, size_t n) {
    b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  };
  add(idx.graph().data, size_t(idx.graph().size()) * 4);
  add(idx.labels().data(), idx.labels().size() * 8);
  add(idx.live_rows().data(), idx.live_rows().size() * 4);
  return b;
}

TEST(LivingIndex, BadInputIsRefusedAndChangesNothing) {
  const real_set s = bigann10k();
  index idx = build(cpu(), params32(), slice(s.base, 0, 1000));
  const int64_t one = 3;
  remove(cpu(), idx, &one, 1);
  const std::vector<uint8_t> before = fingerprint(idx);
  auto refused = [&](auto&& call, const char* needle) {
    try {
      call();
      ADD_FAILURE() << "no error for: " << needle;
    } catch (const error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_EQ(fingerprint(idx), before) << needle;
  };
  host_matrix wrong_dim(dtype::u8, 10, 64);
  refused([&] { extend(cpu(), {}, idx, wrong_dim); }, "dimension 64");
  host_matrix f32(dtype::f32, 10, 128);
  refused([&] { extend(cpu(), {}, idx, f32); }, "stores u8");
  refused([&] { extend(cpu(), {}, idx, dataset_view{nullptr, dtype::u8, 0, 128}); }, "empty batch");
  const int64_t dup[] = {5000, 5000};
  refused([&] { extend(cpu(), {}, idx, slice(s.base, 1000, 2), dup); }, "two new rows");
  const int64_t taken[] = {17, 5001};
  refused([&] { extend(cpu(), {}, idx, slice(s.base, 1000, 2), taken); }, "already in the index");
  const int64_t unknown[] = {7, 1000};
  refused([&] { remove(cpu(), idx, unknown, 2); }, "not in the index");
  refused([&] { remove(cpu(), idx, &one, 1); }, "removed before");
  const int64_t twice[] = {8, 8};
  refused([&] { remove(cpu(), idx, twice, 2); }, "listed twice");
  extend_params bad;
  bad.candidates = 8;  // below the degree
  refused([&] { extend(cpu(), bad, idx, slice(s.base, 1000, 2)); }, "candidates");

  // A NaN in an f32 index.
  host_matrix fl(dtype::f32, 600, 8);
  std::mt19937 rng(1);
  for (int64_t i = 0; i < 600 * 8; ++i) static_cast<float*>(fl.data())[i] = float(rng() % 1000);
  index fidx = build(cpu(), params32(), fl);
  host_matrix nan(dtype::f32, 2, 8);
  std::fill_n(static_cast<float*>(nan.data()), 16, 1.0f);
  static_cast<float*>(nan.data())[9] = std::nanf("");
  EXPECT_THROW(extend(cpu(), {}, fidx, nan), error);
  EXPECT_EQ(fidx.size(), 600);
  // An index with labels needs labels for new rows.
  fidx.set_labels(std::vector<int64_t>(all_labels(fidx)));
  EXPECT_THROW(extend(cpu(), {}, fidx, slice(fl, 0, 2)), error);
  EXPECT_THROW(fidx.set_labels(std::vector<int64_t>(600, 1)), error);
  std::vector<int64_t> negative = all_labels(fidx);
  negative[3] = -1;  // -1 marks an empty result slot: labels are >= 0
  EXPECT_THROW(fidx.set_labels(negative), error);
  EXPECT_TRUE(fidx.has_labels());
  EXPECT_EQ(fidx.label_of(599), 599);
}

TEST(LivingIndex, AnExtendStoppedBetweenChunksChangesNothing) {
  // A progress callback that throws after the first chunk: the rows, graph, labels and live
  // bitset the chunk changed are restored, and the next extend gives the graph an untouched
  // index gives (the kept in-degrees are recomputed).
  const real_set s = bigann10k();
  index idx = build(cpu(), params32(), slice(s.base, 0, 1000));
  index same = build(cpu(), params32(), slice(s.base, 0, 1000));
  for (index* i : {&idx, &same}) {
    const int64_t gone[] = {3, 40, 999};
    remove(cpu(), *i, gone, 3);
  }
  const std::vector<uint8_t> before = fingerprint(idx);
  resources stopping = cpu();
  stopping.progress = [](const char* stage, double fraction) {
    if (std::string(stage) == "extend" && fraction < 1.0) throw std::runtime_error("stop");
  };
  extend_params small;
  small.chunk_size = 100;
  EXPECT_THROW(extend(stopping, small, idx, slice(s.base, 1000, 300)), std::runtime_error);
  EXPECT_EQ(fingerprint(idx), before);
  extend(cpu(), small, idx, slice(s.base, 1000, 300));
  extend(cpu(), small, same, slice(s.base, 1000, 300));
  EXPECT_EQ(fingerprint(idx), fingerprint(same));
}

TEST(LivingIndex, TwentyRoundsOfExtendRemoveCompactSaveLoad) {
  const real_set s = bigann10k();
  index_params p;
  p.graph_degree = 16;
  index idx = build(cpu(), p, slice(s.base, 0, 1000));
  std::vector<int64_t> first(1000);
  std::iota(first.begin(), first.end(), int64_t{0});
  idx.set_labels(first);
  int64_t next_row = 1000, next_label = 1000;
  std::set<int64_t> alive(first.begin(), first.end());
  const std::string path = temp_path("soak.cagra");
  for (int round = 0; round < 20; ++round) {
    const int64_t add = 150 + 10 * round;
    std::vector<int64_t> labels(static_cast<size_t>(add));
    std::iota(labels.begin(), labels.end(), next_label);
    extend_params ep;
    ep.chunk_size = 64;
    extend(cpu(), ep, idx, slice(s.base, next_row % (s.base.rows() - add), add), labels.data());
    next_row += add;
    next_label += add;
    alive.insert(labels.begin(), labels.end());
    const std::vector<int64_t> gone = random_labels(idx, 0.12, uint64_t(round));
    remove(cpu(), idx, gone.data(), int64_t(gone.size()), round % 3 == 0 ? 0.0 : 0.2);
    for (int64_t l : gone) alive.erase(l);
    check_invariants(idx, false);
    if (round % 4 == 3) compact(cpu(), idx);
    save(idx, path);
    idx = load(path);
    check_invariants(idx, idx.deleted_count() == 0);
    ASSERT_EQ(idx.live_size(), int64_t(alive.size())) << "round " << round;
    for (int64_t r = 0; r < idx.size(); ++r) {
      if (!idx.is_deleted(r)) {
        ASSERT_TRUE(alive.count(idx.label_of(r))) << "round " << round;
      }
    }
    const std::vector<int64_t> found = search_labels(idx, s.queries, 32);
    for (int64_t l : found) ASSERT_TRUE(l < 0 || alive.count(l)) << "round " << round;
  }
}

/** Rewrites the checksum of an index file's bytes (so that a change reaches the later checks). */
void reseal(std::vector<uint8_t>& f) {
  core::checksum sum;
  sum.update(f.data(), f.size() - 8);
  const uint64_t h = sum.finish();
  for (int i = 0; i < 8; ++i) f[f.size() - 8 + size_t(i)] = uint8_t(h >> (8 * i));
}

TEST(LivingIndex, DamagedVersion2FilesAreRefused) {
  const real_set s = bigann10k();
  index idx = build(cpu(), params32(), slice(s.base, 0, 100));
  idx.set_labels(range_labels(100));
  const int64_t gone = 107;  // row 7
  remove(cpu(), idx, &gone, 1);
  const std::string path = temp_path("v2.cagra");
  save(idx, path);
  const std::vector<uint8_t> good = read_bytes(path);
  ASSERT_EQ(good[8], 2);
  ASSERT_EQ(good[44], 3);
  const size_t labels_at = 64 + 100 * 128 + 100 * 32 * 4, tomb_at = labels_at + 800;
  ASSERT_EQ(good.size(), tomb_at + 4 * 4 + 8);
  auto refused = [&](std::vector<uint8_t> f, const char* needle) {
    write_bytes(path, f);
    try {
      load(path);
      ADD_FAILURE() << "loaded: " << needle;
    } catch (const error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  std::vector<uint8_t> f = good;
  f[44] = 7;
  reseal(f);
  refused(f, "unknown bits");
  f = good;
  f[8] = 1;  // a version-1 file with flags
  reseal(f);
  refused(f, "expected 0 in a version-1 file");
  f = good;
  std::memcpy(f.data() + labels_at + 8, f.data() + labels_at, 8);  // row 1 gets row 0's label
  reseal(f);
  refused(f, "given to two rows");
  f = good;
  f[tomb_at + 15] = 0x80;  // row 127 of 100
  reseal(f);
  refused(f, "past the last row");
  f = good;
  f.erase(f.begin() + int64_t(tomb_at), f.begin() + int64_t(tomb_at) + 4);
  refused(f, "truncated payload");
}

}  // namespace
}  // namespace cagra::test
