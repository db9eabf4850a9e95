// cagra::export_hnswlib / import_hnswlib against hnswlib itself (docs/hnswlib.md): an index built
// on bigann10k is exported, loaded with hnswlib's own HierarchicalNSW::loadIndex and searched with
// its searchKnn; recall@10 is measured against the set's exact ground truth. Labels, deleted rows
// (hnswlib's deleted mark), the metrics and the storage types are checked through hnswlib's own
// accessors; the import reads back both our files and a graph hnswlib built itself. Skipped when
// the hnswlib headers were not found at configure time (CI has them: libhnswlib-dev).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/cagra.hpp>
#include <cagra/hnswlib.hpp>

#include "cli_run.hpp"
#include "test_data.hpp"

#ifdef CAGRA_HAVE_HNSWLIB
#include <hnswlib/hnswlib.h>
#endif

namespace cagra::test {
namespace {

#ifndef CAGRA_HAVE_HNSWLIB
TEST(HnswlibExport, NeedsHnswlibHeaders) {
  GTEST_SKIP() << "hnswlib headers not found at configure time (Debian: libhnswlib-dev)";
}
#else

constexpr uint32_t kDegree = 32;

/** bigann10k and one index of it, shared by the tests (the build is the slow part). */
struct shared_set {
  real_set data = bigann10k();
  std::vector<float> queries;  // the queries as float32, hnswlib's input
  index idx;
  shared_set() {
    index_params ip;
    ip.graph_degree = kDegree;
    idx = build({}, ip, data.base);
    queries = as_float(data.queries);
  }
  static std::vector<float> as_float(const host_matrix& m) {
    std::vector<float> out(size_t(m.rows() * m.cols()));
    const auto* src = static_cast<const uint8_t*>(m.data());
    for (size_t i = 0; i < out.size(); ++i) out[i] = float(src[i]);
    return out;
  }
};

const shared_set& set() {
  static const shared_set* s = new shared_set();
  return *s;
}

/** Loads `path` with hnswlib, the way its users do. */
template <typename Space>
struct loaded {
  Space space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> h;
  loaded(const std::string& path, size_t dim) : space(dim) {
    h = std::make_unique<hnswlib::HierarchicalNSW<float>>(&space, path);
    // hnswlib 0.6.2 (Debian 12) never zeroes num_deleted_ before loadIndex counts the deleted
    // marks into it (later versions do): count them again.
    h->num_deleted_ = 0;
    for (size_t i = 0; i < h->cur_element_count; ++i)
      h->num_deleted_ += h->isMarkedDeleted(hnswlib::tableint(i)) ? 1 : 0;
  }
};

/** hnswlib's k nearest labels of each query, nearest first. */
std::vector<std::vector<size_t>> hnsw_search(const hnswlib::HierarchicalNSW<float>& h,
                                             const float* queries, int64_t nq, size_t dim,
                                             size_t k) {
  std::vector<std::vector<size_t>> out(static_cast<size_t>(nq));
  for (int64_t q = 0; q < nq; ++q) {
    auto top = h.searchKnn(queries + size_t(q) * dim, k);
    while (!top.empty()) {
      out[size_t(q)].push_back(top.top().second);
      top.pop();
    }
    std::reverse(out[size_t(q)].begin(), out[size_t(q)].end());
  }
  return out;
}

/** recall@k of `found` (labels) against `truth` rows mapped through `label_of`. */
template <typename F>
double recall_at(const std::vector<std::vector<size_t>>& found, const host_matrix& truth, size_t k,
                 F label_of) {
  const auto t = truth.as<uint32_t>();
  double hits = 0;
  for (size_t q = 0; q < found.size(); ++q) {
    std::set<size_t> want;
    for (size_t j = 0; j < k; ++j) want.insert(size_t(label_of(t.row(int64_t(q))[j])));
    for (size_t j = 0; j < std::min(k, found[q].size()); ++j) hits += want.count(found[q][j]);
  }
  return hits / double(found.size() * k);
}

TEST(HnswlibExport, HnswlibLoadsTheFileAndFindsTheTrueNeighbours) {
  const shared_set& s = set();
  const std::string path = temp_path("bigann.hnsw");
  hnswlib_export_report report;
  export_hnswlib(s.idx, path, {}, {}, &report);

  loaded<hnswlib::L2Space> l(path, s.idx.dim());
  const auto& h = *l.h;
  ASSERT_EQ(h.cur_element_count, size_t(s.idx.size()));
  EXPECT_EQ(h.M_, kDegree / 2);
  EXPECT_EQ(h.maxM0_, size_t(kDegree));
  EXPECT_EQ(h.num_deleted_, 0u);  // no deleted marks
  EXPECT_EQ(report.M, kDegree / 2);
  EXPECT_EQ(report.level_rows.size(), size_t(h.maxlevel_ + 1));
  EXPECT_GT(h.maxlevel_, 0);
  EXPECT_EQ(h.element_levels_[h.enterpoint_node_], h.maxlevel_);
  EXPECT_EQ(uint64_t(std::ifstream(path, std::ios::binary | std::ios::ate).tellg()),
            report.file_bytes);

  // Level 0 is our graph, row for row; vectors and labels (row numbers) are where hnswlib reads.
  const auto graph = s.idx.graph();
  for (int64_t i = 0; i < s.idx.size(); i += 97) {
    unsigned int* ll = h.get_linklist0(hnswlib::tableint(i));
    ASSERT_EQ(h.getListCount(ll), kDegree);
    EXPECT_TRUE(std::equal(graph.row(i), graph.row(i) + kDegree, ll + 1)) << "row " << i;
    EXPECT_EQ(h.getExternalLabel(hnswlib::tableint(i)), size_t(i));
    const auto* v = reinterpret_cast<const float*>(h.getDataByInternalId(hnswlib::tableint(i)));
    const uint8_t* b = s.data.base.row_bytes(i);
    for (uint32_t j = 0; j < s.idx.dim(); ++j) ASSERT_EQ(v[j], float(b[j]));
  }
  // Upper levels: every link stays on its level and within M.
  for (size_t i = 0; i < h.cur_element_count; ++i) {
    for (int lv = 1; lv <= h.element_levels_[i]; ++lv) {
      unsigned int* ll = h.get_linklist(hnswlib::tableint(i), lv);
      ASSERT_LE(h.getListCount(ll), h.maxM_);
      for (unsigned j = 0; j < h.getListCount(ll); ++j) {
        ASSERT_GE(h.element_levels_[ll[1 + j]], lv);
        ASSERT_NE(ll[1 + j], i);
      }
    }
  }

  // hnswlib's search over the exported graph: recall@10 against the exact ground truth.
  double last = 0;
  for (size_t ef : {32, 64, 128}) {
    l.h->setEf(ef);
    const auto found = hnsw_search(h, s.queries.data(), s.data.queries.rows(), s.idx.dim(), 10);
    const double r = recall_at(found, s.data.truth, 10, [](uint32_t row) { return row; });
    std::printf("hnswlib on the exported bigann10k graph: ef %zu recall@10 %.4f\n", ef, r);
    last = r;
    if (ef == 64) {
      EXPECT_GE(r, 0.95);
    }
  }
  EXPECT_GE(last, 0.98);
}

TEST(HnswlibExport, HnswlibAddsPointsToTheLoadedGraph) {
  const shared_set& s = set();
  const std::string path = temp_path("grow.hnsw");
  export_hnswlib(s.idx, path);
  hnswlib::L2Space space(s.idx.dim());
  const size_t extra = size_t(s.data.queries.rows());
  hnswlib::HierarchicalNSW<float> h(&space, path, false, size_t(s.idx.size()) + extra);
  h.num_deleted_ = 0;  // hnswlib 0.6.2 leaves it unset on load (see the loader above)
  for (size_t q = 0; q < extra; ++q)
    h.addPoint(s.queries.data() + q * s.idx.dim(), size_t(s.idx.size()) + q);
  h.setEf(64);
  for (size_t q = 0; q < extra; ++q) {  // each new point finds itself
    auto top = h.searchKnn(s.queries.data() + q * s.idx.dim(), 1);
    ASSERT_EQ(top.size(), 1u);
    EXPECT_EQ(top.top().second, size_t(s.idx.size()) + q);
  }
}

TEST(HnswlibExport, LabelsRoundTrip) {
  const shared_set& s = set();
  index idx = load([&] {
    const std::string p = temp_path("labelled.cagra");
    save(s.idx, p);
    return p;
  }());
  std::vector<int64_t> labels(static_cast<size_t>(idx.size()));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = int64_t(5'000'000'000 + 7 * i);
  idx.set_labels(labels);
  const std::string path = temp_path("labelled.hnsw");
  export_hnswlib(idx, path);

  loaded<hnswlib::L2Space> l(path, idx.dim());
  EXPECT_EQ(l.h->label_lookup_.size(), labels.size());
  for (size_t i = 0; i < labels.size(); i += 101) {
    const std::vector<float> v = l.h->getDataByLabel<float>(size_t(labels[i]));
    const uint8_t* b = s.data.base.row_bytes(int64_t(i));
    for (uint32_t j = 0; j < idx.dim(); ++j) ASSERT_EQ(v[j], float(b[j]));
  }
  l.h->setEf(64);
  const auto found = hnsw_search(*l.h, s.queries.data(), s.data.queries.rows(), idx.dim(), 10);
  EXPECT_GE(recall_at(found, s.data.truth, 10, [&](uint32_t row) { return labels[row]; }), 0.95);

  // And back: the import gives the same labels and the same level-0 lists.
  hnswlib_import_params ip;
  ip.metric = metric::l2;
  index back = import_hnswlib(path, ip);
  ASSERT_EQ(back.size(), idx.size());
  ASSERT_EQ(back.graph_degree(), kDegree);
  EXPECT_EQ(back.labels(), labels);
  for (int64_t i = 0; i < idx.size(); i += 53) {
    std::vector<uint32_t> a(idx.graph().row(i), idx.graph().row(i) + kDegree);
    std::vector<uint32_t> b(back.graph().row(i), back.graph().row(i) + kDegree);
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    EXPECT_EQ(a, b) << "row " << i;
  }
}

TEST(HnswlibExport, DeletedRowsCarryHnswlibsDeletedMark) {
  const shared_set& s = set();
  index idx = load([&] {
    const std::string p = temp_path("tombstones.cagra");
    save(s.idx, p);
    return p;
  }());
  // Remove every query's true nearest neighbour: the best answers are then all gone.
  const auto truth = s.data.truth.as<uint32_t>();
  std::set<int64_t> gone;
  for (int64_t q = 0; q < truth.rows; ++q) gone.insert(truth.row(q)[0]);
  const std::vector<int64_t> gone_list(gone.begin(), gone.end());
  remove({}, idx, gone_list.data(), int64_t(gone_list.size()));
  const std::string path = temp_path("tombstones.hnsw");
  export_hnswlib(idx, path);

  loaded<hnswlib::L2Space> l(path, idx.dim());
  EXPECT_EQ(l.h->num_deleted_, gone.size());
  for (int64_t i = 0; i < idx.size(); ++i)
    ASSERT_EQ(l.h->isMarkedDeleted(hnswlib::tableint(i)), gone.count(i) == 1) << "row " << i;
  // Deleted rows sit on level 0 only, and the entry point is a live row.
  for (int64_t r : gone_list) EXPECT_EQ(l.h->element_levels_[size_t(r)], 0);
  EXPECT_FALSE(l.h->isMarkedDeleted(l.h->enterpoint_node_));

  l.h->setEf(64);
  const auto found = hnsw_search(*l.h, s.queries.data(), s.data.queries.rows(), idx.dim(), 10);
  double hits = 0;
  for (int64_t q = 0; q < truth.rows; ++q) {
    // Never a deleted row; the next ten live rows of the ground truth are found.
    std::set<size_t> want;
    for (uint32_t j = 0; j < truth.cols && want.size() < 10; ++j)
      if (!gone.count(truth.row(q)[j])) want.insert(truth.row(q)[j]);
    for (size_t id : found[size_t(q)]) {
      ASSERT_EQ(gone.count(int64_t(id)), 0u) << "query " << q << " got deleted row " << id;
      hits += want.count(id);
    }
  }
  EXPECT_GE(hits / double(truth.rows * 10), 0.95);

  // The import keeps them deleted.
  index back = import_hnswlib(path, {});
  EXPECT_EQ(back.deleted_count(), int64_t(gone.size()));
  for (int64_t r : gone_list) EXPECT_TRUE(back.is_deleted(r));
}

TEST(HnswlibExport, CosineAndHalfStorageExportAsFloat) {
  const shared_set& s = set();
  const int64_t n = 3000;
  const host_matrix base = head(s.data.base, n);
  index_params ip;
  ip.graph_degree = 24;
  ip.metric = metric::cosine;
  ip.storage = storage_type::f16;
  index idx = build({}, ip, base);
  const std::string path = temp_path("cosine.hnsw");
  export_hnswlib(idx, path);

  loaded<hnswlib::InnerProductSpace> l(path, idx.dim());
  EXPECT_EQ(l.h->M_, 12u);
  for (int64_t i = 0; i < n; i += 37) {  // f16 rows, converted exactly
    const auto* v = reinterpret_cast<const float*>(l.h->getDataByInternalId(hnswlib::tableint(i)));
    const auto* hv = reinterpret_cast<const half*>(idx.vectors().row_bytes(i));
    for (uint32_t j = 0; j < idx.dim(); ++j) ASSERT_EQ(v[j], to_float(hv[j]));
  }
  // hnswlib's 1 - dot over unit-norm rows is the cosine distance: same neighbours as the exact
  // cosine search.
  std::vector<float> q = s.queries;
  const size_t dim = idx.dim();
  for (int64_t r = 0; r < s.data.queries.rows(); ++r) {
    float norm = 0;
    for (size_t j = 0; j < dim; ++j) norm += q[size_t(r) * dim + j] * q[size_t(r) * dim + j];
    for (size_t j = 0; j < dim; ++j) q[size_t(r) * dim + j] /= std::sqrt(norm);
  }
  const knn_graph exact = brute_force_knn({}, metric::cosine, idx.vectors(), s.data.queries, 10);
  host_matrix truth(dtype::u32, exact.rows, exact.k);
  std::memcpy(truth.data(), exact.ids.data(), exact.ids.size() * sizeof(uint32_t));
  l.h->setEf(64);
  const auto found = hnsw_search(*l.h, q.data(), s.data.queries.rows(), dim, 10);
  EXPECT_GE(recall_at(found, truth, 10, [](uint32_t row) { return row; }), 0.95);
}

TEST(HnswlibExport, ImportsAGraphHnswlibBuilt) {
  const shared_set& s = set();
  const size_t dim = s.idx.dim();
  hnswlib::L2Space space(dim);
  const std::string path = temp_path("native.hnsw");
  {
    hnswlib::HierarchicalNSW<float> h(&space, size_t(s.data.base.rows()), 8, 100);
    std::vector<float> base = shared_set::as_float(s.data.base);
    for (int64_t i = 0; i < s.data.base.rows(); ++i)
      h.addPoint(base.data() + size_t(i) * dim, size_t(i));
    h.saveIndex(path);
  }
  hnswlib_import_params ip;
  ip.metric = metric::l2;
  ip.dim = uint32_t(dim);
  index idx = import_hnswlib(path, ip);
  EXPECT_EQ(idx.size(), s.data.base.rows());
  EXPECT_EQ(idx.graph_degree(), 16u);  // 2M
  EXPECT_FALSE(idx.has_labels());      // labels 0 .. n-1 are the row numbers
  const graph_stats st = analyze({}, idx.graph());
  EXPECT_EQ(st.invalid_edges + st.self_loops + st.duplicate_edges, 0);

  std::vector<uint32_t> ids(size_t(s.data.queries.rows()) * 10);
  search_params sp;
  sp.itopk_size = 64;
  search({}, sp, idx, s.data.queries, 10, {ids.data(), s.data.queries.rows(), 10}, {});
  EXPECT_GE(recall({ids.data(), s.data.queries.rows(), 10}, s.data.truth.as<uint32_t>(), 10), 0.9);
}

TEST(HnswlibExport, RefusesWhatHnswlibCannotHold) {
  const shared_set& s = set();
  hnswlib_export_params p;
  p.M = 8;  // 2M = 16 slots for a degree of 32
  EXPECT_THROW(export_hnswlib(s.idx, temp_path("small_m.hnsw"), p), error);
  p.M = 1;
  EXPECT_THROW(export_hnswlib(s.idx, temp_path("m1.hnsw"), p), error);
  EXPECT_THROW(export_hnswlib(s.idx, ""), error);
  EXPECT_THROW(export_hnswlib(index(), temp_path("empty.hnsw")), error);
}

TEST(HnswlibExport, ImportRefusesDamagedFiles) {
  const shared_set& s = set();
  const std::string good = temp_path("good.hnsw");
  index small = build({}, index_params{}, head(s.data.base, 500));
  export_hnswlib(small, good);
  const std::vector<uint8_t> bytes = read_bytes(good);
  hnswlib_import_params ip;
  ASSERT_NO_THROW(import_hnswlib(good, ip));

  const std::string bad = temp_path("bad.hnsw");
  for (size_t cut : {size_t(0), size_t(50), size_t(96), bytes.size() / 2, bytes.size() - 1}) {
    write_bytes(bad, std::vector<uint8_t>(bytes.begin(), bytes.begin() + long(cut)));
    EXPECT_THROW(import_hnswlib(bad, ip), error) << "cut at " << cut;
  }
  std::vector<uint8_t> longer = bytes;
  longer.push_back(0);
  write_bytes(bad, longer);
  EXPECT_THROW(import_hnswlib(bad, ip), error);
  // A link out of range: row 0's first link.
  std::vector<uint8_t> wild = bytes;
  const uint32_t far = 1u << 30;
  std::memcpy(wild.data() + 96 + 4, &far, 4);
  write_bytes(bad, wild);
  EXPECT_THROW(import_hnswlib(bad, ip), error);
  // A link count over the slots.
  std::vector<uint8_t> over = bytes;
  const uint32_t count = 0xFFFF;
  std::memcpy(over.data() + 96, &count, 4);
  write_bytes(bad, over);
  EXPECT_THROW(import_hnswlib(bad, ip), error);
  // The wrong dimension, and a missing file.
  ip.dim = 64;
  EXPECT_THROW(import_hnswlib(good, ip), error);
  EXPECT_THROW(import_hnswlib(temp_path("missing.hnsw"), {}), error);
}

#endif  // CAGRA_HAVE_HNSWLIB

// ---- the command-line tool: cagra export-hnsw / import-hnsw ---------------------------------

TEST(HnswlibCli, ExportThenImportKeepsTheGraph) {
  const std::string idx_path = temp_path("cli_ring.cagra");
  const index ring = ring_index();
  save(ring, idx_path);
  const std::string out = temp_path("cli_ring.hnsw");
  cli_result r = run_cli({"export-hnsw", idx_path, "-o", out, "--threads", "2"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("hnswlib.Index(space='l2', dim=8)"), std::string::npos) << r.out;
#ifdef CAGRA_HAVE_HNSWLIB
  {
    loaded<hnswlib::L2Space> l(out, ring.dim());
    EXPECT_EQ(l.h->cur_element_count, size_t(ring.size()));
    EXPECT_EQ(l.h->maxM0_, 4u);
  }
#endif
  const std::string back = temp_path("cli_ring_back.cagra");
  r = run_cli({"import-hnsw", out, "--metric", "l2", "-o", back});
  ASSERT_EQ(r.status, 0) << r.err;
  const index imported = load(back);
  ASSERT_EQ(imported.size(), ring.size());
  ASSERT_EQ(imported.graph_degree(), ring.graph_degree());
  for (int64_t i = 0; i < ring.size(); ++i) {
    std::set<uint32_t> a(ring.graph().row(i), ring.graph().row(i) + ring.graph_degree());
    std::set<uint32_t> b(imported.graph().row(i), imported.graph().row(i) + ring.graph_degree());
    EXPECT_EQ(a, b) << "row " << i;
  }
}

TEST(HnswlibCli, ErrorsLeaveFilesAlone) {
  const std::string idx_path = temp_path("cli_err.cagra");
  save(ring_index(), idx_path);
  const std::string out = temp_path("cli_err.hnsw");
  // A missing index; the output is never created.
  expect_error({"export-hnsw", temp_path("missing.cagra"), "-o", out});
  EXPECT_FALSE(std::ifstream(out).good());
  // An existing output without --force is kept as it was; with --force it is replaced.
  write_bytes(out, {1, 2, 3});
  EXPECT_NE(expect_error({"export-hnsw", idx_path, "-o", out}).find("--force"), std::string::npos);
  EXPECT_EQ(read_bytes(out), (std::vector<uint8_t>{1, 2, 3}));
  cli_result r = run_cli({"export-hnsw", idx_path, "-o", out, "--force"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_GT(read_bytes(out).size(), 3u);
  // The output may not be the input; M must hold the degree (4: M >= 2).
  expect_error({"export-hnsw", idx_path, "-o", idx_path, "--force"});
  expect_error({"export-hnsw", idx_path, "-o", temp_path("m1.hnsw"), "--M", "1"}, 2);
  expect_error({"export-hnsw", idx_path}, 2);  // no -o
  // import-hnsw: the metric is required; a file that is not hnswlib's is refused.
  const std::string back = temp_path("cli_err_back.cagra");
  EXPECT_NE(expect_error({"import-hnsw", out, "-o", back}, 2).find("--metric"), std::string::npos);
  expect_error({"import-hnsw", idx_path, "--metric", "l2", "-o", back});
  expect_error({"import-hnsw", out, "--metric", "l2", "--dim", "9", "-o", back});
  expect_error({"import-hnsw", temp_path("missing.hnsw"), "--metric", "l2", "-o", back});
  EXPECT_FALSE(std::ifstream(back).good());
}

}  // namespace
}  // namespace cagra::test
