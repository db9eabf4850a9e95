// Tests of the living index's commands of the `cagra` tool (docs/cli.md: extend, remove, compact,
// and what info and search show of labels and deleted rows), run as a separate process like
// test_cli.cpp. The pipeline builds half of bigann10k, extends it with the other half under
// labels, removes rows no query's true top 10 holds, compacts, and measures recall against the
// set's own ground truth at each step: the labels are the original row numbers, so the ground
// truth stays valid throughout. The error cases check the tool's contract (one "error: " line,
// nothing written, inputs untouched).
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "cli_run.hpp"
#include "test_data.hpp"

namespace fs = std::filesystem;

namespace cagra::test {
namespace {

/** Writes `values` as an int64 .npy of shape [rows, cols] (numpy's version 1.0 layout). */
void write_npy_i64(const std::string& path, const std::vector<int64_t>& values, size_t rows,
                   size_t cols) {
  std::string header = "{'descr': '<i8', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::vector<uint8_t> bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  bytes.push_back(uint8_t(header.size() & 0xFF));
  bytes.push_back(uint8_t(header.size() >> 8));
  bytes.insert(bytes.end(), header.begin(), header.end());
  const auto* v = reinterpret_cast<const uint8_t*>(values.data());
  bytes.insert(bytes.end(), v, v + values.size() * sizeof(int64_t));
  write_bytes(path, bytes);
}

/** The int64 values of an .npy file written by `cagra search` (checks its descr). */
std::vector<int64_t> read_npy_i64(const std::string& path, size_t rows, size_t cols) {
  const std::vector<uint8_t> bytes = read_bytes(path);
  EXPECT_GE(bytes.size(), 10u);
  if (bytes.size() < 10) return {};
  const size_t header_len = bytes[8] | (size_t(bytes[9]) << 8);
  const std::string header(bytes.begin() + 10, bytes.begin() + 10 + header_len);
  EXPECT_NE(header.find("'descr': '<i8'"), std::string::npos) << header;
  EXPECT_NE(header.find("(" + std::to_string(rows) + ", " + std::to_string(cols) + ")"),
            std::string::npos)
      << header;
  std::vector<int64_t> out((bytes.size() - 10 - header_len) / sizeof(int64_t));
  std::memcpy(out.data(), bytes.data() + 10 + header_len, out.size() * sizeof(int64_t));
  EXPECT_EQ(out.size(), rows * cols);
  return out;
}

/** Rows [first, first + rows) of `m`, written to a temporary vector file `name`. */
std::string write_rows(const host_matrix& m, int64_t first, int64_t rows, const std::string& name) {
  host_matrix part(m.type(), rows, m.cols());
  std::memcpy(part.data(), m.row_bytes(first), part.size_bytes());
  const std::string path = temp_path(name);
  io::write_matrix(path, part.view());
  return path;
}

/** A small valid index of 20 random 8-d f32 vectors (ring graph, degree 4), with `labels` when
 *  not empty, saved to a temporary file `name`. */
std::string small_index(const std::string& name, std::vector<int64_t> labels = {}) {
  index idx = ring_index();
  if (!labels.empty()) idx.set_labels(std::move(labels));
  const std::string path = temp_path(name);
  save(idx, path);
  return path;
}

/** The labels first, first + 1, ... of the 20 rows of small_index(). */
std::vector<int64_t> labels_from(int64_t first) {
  std::vector<int64_t> labels(20);
  std::iota(labels.begin(), labels.end(), first);
  return labels;
}

/** `rows` random f32 vectors of dimension `dim`, written to a temporary file `name`. */
std::string random_vectors(int64_t rows, int64_t dim, const std::string& name, unsigned seed) {
  host_matrix q(dtype::f32, rows, dim);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  for (int64_t i = 0; i < q.rows() * q.cols(); ++i) q.as<float>().data[i] = u(rng);
  const std::string path = temp_path(name);
  io::write_matrix(path, q.view());
  return path;
}

/** The value after `key` on the line of `out` that starts with it ("deleted rows       12"). */
std::string field(const std::string& out, const std::string& key) {
  const size_t at = out.rfind(key, 0) == 0 ? 0 : out.find("\n" + key);
  if (at == std::string::npos) return "";
  const size_t begin = out.find_first_not_of(' ', out.find(key, at) + key.size());
  return out.substr(begin, out.find('\n', begin) - begin);
}

TEST(CliLiving, HelpListsTheCommands) {
  cli_result r = run_cli({"--help"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* cmd : {"extend", "remove", "compact"}) {
    EXPECT_NE(r.out.find(std::string("  ") + cmd + " "), std::string::npos) << r.out;
    cli_result h = run_cli({cmd, "--help"});
    EXPECT_EQ(h.status, 0) << cmd;
    EXPECT_NE(h.out.find(std::string("usage: cagra ") + cmd), std::string::npos) << h.out;
  }
}

// ---- the pipeline on real data ----------------------------------------------------------------

TEST(CliLivingPipeline, Bigann10kBuildExtendRemoveCompactSearchEval) {
  const real_set s = bigann10k();
  const int64_t n = s.base.rows(), half = n / 2;
  const std::string query = bigann("query.u8bin"), truth = bigann("groundtruth.ibin");
  const std::string first = write_rows(s.base, 0, half, "first.u8bin");
  const std::string second = write_rows(s.base, half, n - half, "second.u8bin");
  std::vector<int64_t> second_labels(size_t(n - half));
  for (size_t i = 0; i < second_labels.size(); ++i) second_labels[i] = half + int64_t(i);
  const std::string labels = temp_path("second_labels.npy");
  write_npy_i64(labels, second_labels, second_labels.size(), 1);

  // Rows no query's true top 10 holds: removing them leaves the ground truth's top 10 exact.
  std::set<int64_t> needed;
  const auto* t = static_cast<const uint32_t*>(s.truth.data());
  for (int64_t q = 0; q < s.truth.rows(); ++q)
    for (int64_t j = 0; j < 10; ++j) needed.insert(t[q * s.truth.cols() + j]);
  std::vector<int64_t> gone;
  for (int64_t r = 0; r < n && gone.size() < 1000; r += 7)
    if (!needed.count(r)) gone.push_back(r);
  ASSERT_EQ(gone.size(), 1000u);
  const std::string gone_path = temp_path("gone.npy");
  write_npy_i64(gone_path, gone, gone.size(), 1);
  const std::set<int64_t> gone_set(gone.begin(), gone.end());

  const std::string a = temp_path("half.cagra"), b = temp_path("grown.cagra");
  const std::string c = temp_path("removed.cagra"), d = temp_path("compacted.cagra");
  cli_result r = run_cli({"build", first, "-o", a, "--graph-degree", "32"});
  ASSERT_EQ(r.status, 0) << r.err;

  r = run_cli({"extend", a, second, "-o", b, "--labels", labels, "--chunk-size", "1000"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("4950 rows added, 9900 rows now"), std::string::npos) << r.out;
  r = run_cli({"info", b});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(field(r.out, "rows"), "9900") << r.out;
  EXPECT_EQ(field(r.out, "labels"), "yes (searches return them)") << r.out;
  EXPECT_EQ(field(r.out, "deleted rows"), "0 (9900 live)") << r.out;

  auto recall_of = [&](const std::string& idx, const std::string& tag) {
    const std::string nn = temp_path("nn_" + tag + ".ibin");
    cli_result sr = run_cli({"search", idx, query, "-k", "10", "--itopk", "64", "-o", nn});
    EXPECT_EQ(sr.status, 0) << sr.err;
    const io::neighbors_file found = io::read_neighbors(nn);
    const auto* ids = static_cast<const uint32_t*>(found.ids.data());
    if (tag != "grown") {  // before the removal every row may come back
      for (int64_t i = 0; i < found.ids.rows() * found.ids.cols(); ++i)
        EXPECT_EQ(gone_set.count(ids[i]), 0u) << tag << ": removed label " << ids[i];
    }
    cli_result er = run_cli({"eval", nn, truth, "-k", "10"});
    EXPECT_EQ(er.status, 0) << er.err;
    return parse_recall(er.out, 10);
  };
  const double grown = recall_of(b, "grown");
  EXPECT_GE(grown, 0.95);

  r = run_cli({"remove", b, gone_path, "-o", c});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("removed   1000 rows; 1000 of 9900 rows deleted, 8900 live"),
            std::string::npos)
      << r.out;
  r = run_cli({"info", c});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(field(r.out, "deleted rows"), "1000 (8900 live)") << r.out;
  EXPECT_GE(recall_of(c, "removed"), grown - 0.01);
  // .npy: the int64 labels, none of them removed.
  const std::string nn_npy = temp_path("nn_removed.npy");
  r = run_cli({"search", c, query, "-k", "10", "-o", nn_npy});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("int64 labels"), std::string::npos) << r.out;
  for (int64_t label : read_npy_i64(nn_npy, 100, 10)) {
    EXPECT_TRUE(label >= 0 && label < n) << label;
    EXPECT_EQ(gone_set.count(label), 0u) << label;
  }

  r = run_cli({"compact", c, "-o", d});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("1000 deleted rows dropped, 8900 rows now"), std::string::npos) << r.out;
  r = run_cli({"info", d});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(field(r.out, "rows"), "8900") << r.out;
  EXPECT_EQ(field(r.out, "labels"), "yes (searches return them)") << r.out;
  EXPECT_EQ(field(r.out, "deleted rows"), "0 (8900 live)") << r.out;
  for (const char* sound : {"invalid edges      0", "self loops         0", "duplicate edges    0"})
    EXPECT_NE(r.out.find(sound), std::string::npos) << r.out;
  EXPECT_GE(recall_of(d, "compacted"), grown - 0.01);

  // bench compares the labels with the ground truth too.
  r = run_cli({"bench", d, query, truth, "-k", "10", "--itopk", "64"});
  ASSERT_EQ(r.status, 0) << r.err;
  const size_t row = r.out.find("\n    64");
  ASSERT_NE(row, std::string::npos) << r.out;
  EXPECT_GE(std::atof(r.out.substr(row + 20, 11).c_str()), grown - 0.01) << r.out;

  // --compact-above: the same removal, compacted at once (1000 / 9900 > 5%).
  const std::string e = temp_path("removed_compacted.cagra");
  r = run_cli({"remove", b, gone_path, "-o", e, "--compact-above", "0.05"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("compacted to 8900 rows"), std::string::npos) << r.out;
  r = run_cli({"info", e});
  EXPECT_EQ(field(r.out, "deleted rows"), "0 (8900 live)") << r.out;
  EXPECT_GE(recall_of(e, "removed_compacted"), grown - 0.01);
}

// An index without labels: remove takes row numbers (.ibin), compact gives the kept rows their
// old row numbers as labels, so a search still returns the ids the rows had.
TEST(CliLivingPipeline, RowNumbersWithoutLabels) {
  const std::string idx = small_index("plain.cagra"), q = random_vectors(5, 8, "plain_q.fbin", 2);
  host_matrix rows(dtype::i32, 1, 3);
  const int32_t drop[] = {3, 7, 11};
  std::memcpy(rows.data(), drop, sizeof drop);
  const std::string ids = temp_path("plain_drop.ibin");
  io::write_matrix(ids, rows.view());
  const std::string removed = temp_path("plain_removed.cagra"),
                    compacted = temp_path("plain_compacted.cagra");
  cli_result r = run_cli({"remove", idx, ids, "-o", removed});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("3 row numbers (the index has no labels)"), std::string::npos) << r.out;
  r = run_cli({"compact", removed, "-o", compacted});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("labels: the old row numbers"), std::string::npos) << r.out;
  r = run_cli({"info", compacted});
  EXPECT_EQ(field(r.out, "rows"), "17") << r.out;
  EXPECT_EQ(field(r.out, "labels"), "yes (searches return them)") << r.out;
  const std::string nn = temp_path("plain_nn.npy");
  r = run_cli({"search", compacted, q, "-k", "17", "--itopk", "32", "-o", nn});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<int64_t> found = read_npy_i64(nn, 5, 17);
  for (size_t qi = 0; qi < 5; ++qi) {
    std::set<int64_t> seen(found.begin() + qi * 17, found.begin() + (qi + 1) * 17);
    for (int64_t gone : drop) EXPECT_EQ(seen.count(gone), 0u);
    EXPECT_EQ(seen.size(), 17u) << "every kept row, by its old number";
    EXPECT_EQ(*seen.rbegin(), 19);
  }
  // compact with nothing deleted writes the index unchanged.
  r = run_cli({"compact", idx, "-o", temp_path("plain_same.cagra")});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("no deleted rows"), std::string::npos) << r.out;
}

// Labels beyond int32: .ibin cannot hold them (an error that names .npy, before the search); .npy
// returns them.
TEST(CliLivingPipeline, LargeLabelsNeedNpy) {
  const std::string idx = small_index("large.cagra", labels_from(int64_t{1} << 40));
  const std::string q = random_vectors(3, 8, "large_q.fbin", 3);
  const std::string ibin = temp_path("large_nn.ibin"), npy = temp_path("large_nn.npy");
  const std::string err = expect_error({"search", idx, q, "-k", "5", "-o", ibin}, 1);
  EXPECT_NE(err.find(".npy"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(ibin));
  cli_result r = run_cli({"search", idx, q, "-k", "5", "-o", npy});
  ASSERT_EQ(r.status, 0) << r.err;
  for (int64_t label : read_npy_i64(npy, 3, 5)) EXPECT_EQ(label >> 40, 1) << label;

  // New labels beyond int32, given in a 2 x 2 array (any shape is read in C order).
  const std::string v = random_vectors(4, 8, "large_new.fbin", 4),
                    grown = temp_path("large+.cagra");
  std::vector<int64_t> more = {int64_t{1} << 50, (int64_t{1} << 50) + 1, 5, 6};
  const std::string more_path = temp_path("large_more.npy");
  write_npy_i64(more_path, more, 2, 2);
  r = run_cli({"extend", idx, v, "-o", grown, "--labels", more_path});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("4 rows added, 24 rows now"), std::string::npos) << r.out;
}

// ---- errors -----------------------------------------------------------------------------------

TEST(CliLivingErrors, MissingFiles) {
  const std::string idx = small_index("m.cagra"), v = random_vectors(3, 8, "m_v.fbin", 5);
  const std::string out = temp_path("m_out.cagra"), nope = temp_path("nope.cagra");
  const std::string ids = temp_path("m_ids.npy");
  write_npy_i64(ids, {1, 2}, 2, 1);
  expect_error({"extend", nope, v, "-o", out}, 1);
  expect_error({"extend", idx, temp_path("nope.fbin"), "-o", out}, 1);
  expect_error({"extend", idx, v, "-o", out, "--labels", temp_path("nope.npy")}, 1);
  expect_error({"remove", nope, ids, "-o", out}, 1);
  expect_error({"remove", idx, temp_path("nope_ids.npy"), "-o", out}, 1);
  expect_error({"compact", nope, "-o", out}, 1);
  expect_error({"extend", idx, v}, 2);  // no -o
  expect_error({"remove", idx, "-o", out}, 2);
  expect_error({"compact", idx, "-o", out, "--compact-above", "0.5"}, 2);
  expect_error({"remove", idx, ids, "-o", out, "--compact-above", "1.5"}, 2);
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliLivingErrors, WrongDimensionAndLabelCounts) {
  const std::string idx = small_index("w.cagra");
  const std::string labeled = small_index("w_labeled.cagra", labels_from(100));
  const std::string v7 = random_vectors(3, 7, "w_v7.fbin", 6);
  const std::string v8 = random_vectors(3, 8, "w_v8.fbin", 7);
  const std::string out = temp_path("w_out.cagra");
  const auto before = read_bytes(idx), labeled_before = read_bytes(labeled);
  std::string err = expect_error({"extend", idx, v7, "-o", out}, 1);
  EXPECT_NE(err.find("dim 7"), std::string::npos) << err;
  err = expect_error({"extend", labeled, v8, "-o", out}, 1);  // labels needed
  EXPECT_NE(err.find("--labels"), std::string::npos) << err;
  const std::string two = temp_path("w_two.npy"), taken = temp_path("w_taken.npy");
  const std::string twice = temp_path("w_twice.npy"), floats = temp_path("w_floats.npy");
  write_npy_i64(two, {1, 2}, 2, 1);
  write_npy_i64(taken, {1, 105, 2}, 3, 1);
  write_npy_i64(twice, {1, 1, 2}, 3, 1);
  host_matrix f(dtype::f32, 1, 3);
  io::write_matrix(floats, f.view());
  err = expect_error({"extend", labeled, v8, "-o", out, "--labels", two}, 1);
  EXPECT_NE(err.find("one label per vector"), std::string::npos) << err;
  err = expect_error({"extend", labeled, v8, "-o", out, "--labels", taken}, 1);
  EXPECT_NE(err.find("already in the index"), std::string::npos) << err;
  err = expect_error({"extend", labeled, v8, "-o", out, "--labels", twice}, 1);
  EXPECT_NE(err.find("unique"), std::string::npos) << err;
  err = expect_error({"extend", labeled, v8, "-o", out, "--labels", floats}, 1);
  EXPECT_NE(err.find("integers"), std::string::npos) << err;
  // A shape whose product wraps 64 bits (2^39 x 2^39 = 0 mod 2^64) over an empty body: refused,
  // never read as an empty label list.
  const std::string wrap = temp_path("w_wrap.npy");
  std::string h =
      "{'descr': '<i8', 'fortran_order': False, 'shape': (549755813888, 549755813888), }";
  h.resize(117, ' ');
  h += '\n';
  std::ofstream(wrap, std::ios::binary)
      << std::string("\x93NUMPY\x01\x00", 8) << char(h.size() & 0xFF) << char(h.size() >> 8) << h;
  err = expect_error({"extend", labeled, v8, "-o", out, "--labels", wrap}, 1);
  EXPECT_NE(err.find("too large"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(read_bytes(idx), before);
  EXPECT_EQ(read_bytes(labeled), labeled_before);
}

TEST(CliLivingErrors, UnknownRepeatedAndRemovedLabels) {
  const std::string idx = small_index("u.cagra", labels_from(100));
  const std::string unknown = temp_path("u_unknown.npy"), dup = temp_path("u_dup.npy");
  const std::string some = temp_path("u_some.npy"), out = temp_path("u_out.cagra");
  write_npy_i64(unknown, {100, 5}, 2, 1);  // 5 is a row number, not a label
  write_npy_i64(dup, {100, 101, 100}, 3, 1);
  write_npy_i64(some, {100, 119}, 2, 1);
  std::string err = expect_error({"remove", idx, unknown, "-o", out}, 1);
  EXPECT_NE(err.find("label 5 "), std::string::npos) << err;
  EXPECT_NE(err.find("not in the index"), std::string::npos) << err;
  err = expect_error({"remove", idx, dup, "-o", out}, 1);
  EXPECT_NE(err.find("listed twice"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out));
  const std::string removed = temp_path("u_removed.cagra");
  cli_result r = run_cli({"remove", idx, some, "-o", removed});
  ASSERT_EQ(r.status, 0) << r.err;
  err = expect_error({"remove", removed, some, "-o", out}, 1);  // removing twice
  EXPECT_NE(err.find("removed before"), std::string::npos) << err;
  // A removed label cannot come back before the index is compacted.
  const std::string v = random_vectors(1, 8, "u_v.fbin", 8), back = temp_path("u_back.npy");
  write_npy_i64(back, {119}, 1, 1);
  err = expect_error({"extend", removed, v, "-o", out, "--labels", back}, 1);
  EXPECT_NE(err.find("compact"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliLivingErrors, OutputsNeverReplaceInputs) {
  const std::string idx = small_index("o.cagra"), v = random_vectors(3, 8, "o_v.fbin", 9);
  const std::string ids = temp_path("o_ids.npy"), alias = fs::path(idx).parent_path().string() +
                                                          "/./" + fs::path(idx).filename().string();
  write_npy_i64(ids, {1, 2, 3}, 3, 1);
  const auto idx_bytes = read_bytes(idx), v_bytes = read_bytes(v), ids_bytes = read_bytes(ids);
  for (const std::string& o : {idx, alias}) {
    expect_error({"extend", idx, v, "-o", o, "--force"}, 1);
    expect_error({"remove", idx, ids, "-o", o, "--force"}, 1);
    expect_error({"compact", idx, "-o", o, "--force"}, 1);
  }
  expect_error({"extend", idx, v, "-o", v, "--force"}, 1);
  expect_error({"remove", idx, ids, "-o", ids, "--force"}, 1);
  const std::string labels = temp_path("o_labels.npy");
  write_npy_i64(labels, {20, 21, 22}, 3, 1);
  expect_error({"extend", idx, v, "-o", labels, "--labels", labels, "--force"}, 1);
  // An existing output needs --force.
  const std::string keep = temp_path("o_keep.cagra");
  write_bytes(keep, {'k', 'e', 'e', 'p'});
  expect_error({"extend", idx, v, "-o", keep}, 1);
  expect_error({"remove", idx, ids, "-o", keep}, 1);
  expect_error({"compact", idx, "-o", keep}, 1);
  EXPECT_EQ(read_bytes(keep), (std::vector<uint8_t>{'k', 'e', 'e', 'p'}));
  cli_result r = run_cli({"compact", idx, "-o", keep, "--force"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_bytes(idx), idx_bytes);
  EXPECT_EQ(read_bytes(v), v_bytes);
  EXPECT_EQ(read_bytes(ids), ids_bytes);
}

}  // namespace
}  // namespace cagra::test
