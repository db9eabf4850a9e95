// Tests of the `cagra` command-line tool, run as a separate process (CAGRA_CLI_PATH, cli_run.hpp)
// exactly as a user or script runs it. The error cases check the tool's contract: a non-zero
// status (2 for usage mistakes), exactly one "error: " line on stderr, and input files left byte
// for byte as they were. The pipeline test runs build -> search -> eval -> info -> bench -> gt on
// the real bigann10k set, so it also checks that the pieces agree on file formats. The living
// index's commands (extend, remove, compact) are tested in test_cli_living.cpp.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include <cagra/plan.hpp>

#include "cli_run.hpp"
#include "test_data.hpp"

namespace fs = std::filesystem;

namespace cagra::test {
namespace {

std::string copy_to_temp(const std::string& src, const std::string& name) {
  std::string dst = temp_path(name);
  fs::copy_file(src, dst, fs::copy_options::overwrite_existing);
  return dst;
}

// A small, valid index made without `build` (ring graph), so the error cases do not depend on
// the build algorithms: 20 random 8-d vectors, degree 4.
std::string small_index() {
  static std::string path;
  if (!path.empty()) return path;
  index idx = ring_index();
  path = temp_path("small.cagra");
  save(idx, path);
  return path;
}

std::string small_queries(int64_t dim, const std::string& name) {
  host_matrix q(dtype::f32, 5, dim);
  for (int64_t i = 0; i < q.rows() * q.cols(); ++i) q.as<float>().data[i] = 0.5f;
  std::string path = temp_path(name);
  io::write_matrix(path, q.view());
  return path;
}

TEST(CliUsage, HelpAndVersion) {
  cli_result r = run_cli({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("build"), std::string::npos);
  EXPECT_TRUE(r.err.empty()) << r.err;
  r = run_cli({"--version"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find(version()), std::string::npos) << r.out;
  for (const char* cmd : {"build", "search", "eval", "bench", "info", "gt"}) {
    r = run_cli({cmd, "--help"});
    EXPECT_EQ(r.status, 0) << cmd;
    EXPECT_NE(r.out.find(std::string("usage: cagra ") + cmd), std::string::npos) << r.out;
  }
}

TEST(CliUsage, UsageMistakesExitWithStatus2) {
  const std::string gt = bigann("groundtruth.ibin");
  const auto before = read_bytes(gt);
  expect_error({}, 2);
  expect_error({"frobnicate"}, 2);
  expect_error({"eval", gt, gt, "-k", "10", "--bogus"}, 2);
  expect_error({"eval", gt, "-k", "10"}, 2);          // missing argument
  expect_error({"eval", gt, gt}, 2);                  // missing -k
  expect_error({"eval", gt, gt, "-k"}, 2);            // -k without a value
  expect_error({"eval", gt, gt, gt, "-k", "10"}, 2);  // one argument too many
  for (const char* k : {"0", "abc", "-3", "1.5", "99999999999999999999"})
    expect_error({"eval", gt, gt, "-k", k}, 2);
  expect_error({"build", bigann("base.u8bin")}, 2);  // missing -o
  expect_error({"build", bigann("base.u8bin"), "-o", temp_path("x.cagra"), "--metric", "l3"}, 2);
  expect_error({"bench", gt, gt, gt, "--itopk", "16,,32"}, 2);
  EXPECT_EQ(read_bytes(gt), before);
  EXPECT_FALSE(fs::exists(temp_path("x.cagra")));
}

// --max-device-memory takes bytes or a binary suffix; anything else is a usage error before the
// dataset is read. The CPU backend ignores the budget (it uses no device memory).
TEST(CliUsage, MaxDeviceMemorySizes) {
  const std::string base = bigann("base.u8bin"), out = temp_path("budget.cagra");
  for (const char* bad : {"", "abc", "-1", "8GB", "8G", "8 XiB", "1.5", "1..5GiB", "GiB", "8GiBs",
                          "99999999999999999999", "17179869184GiB"}) {
    const std::string err =
        expect_error({"build", base, "-o", out, "--backend", "cpu", "--max-device-memory", bad}, 2);
    if (*bad) {
      EXPECT_NE(err.find("--max-device-memory"), std::string::npos) << err;
    }
  }
  EXPECT_FALSE(fs::exists(out));
  for (const char* good : {"0", "1048576", "512KiB", "8GiB", "1.5 GiB", "2TiB"}) {
    SCOPED_TRACE(good);
    cli_result r = run_cli({"build", base, "-o", out, "--force", "--backend", "cpu", "--limit",
                            "500", "--graph-degree", "8", "--max-device-memory", good});
    EXPECT_EQ(r.status, 0) << r.err;
  }
}

// --partition-rows: the kNN graph over partitions, the plan printed before the work and the
// partitions merged after it; too small a partition is an error before any work.
TEST(CliBuild, PartitionRows) {
  const std::string base = bigann("base.u8bin"), out = temp_path("parted.cagra");
  cli_result r = run_cli({"build", base, "-o", out, "--force", "--backend", "cpu", "--graph-degree",
                          "16", "--partition-rows", "3000"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(
      r.out.find("plan      kNN graph over partitions of at most 3000 rows, optimize on host"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("kNN graphs merged"), std::string::npos) << r.out;
  const std::string err = expect_error(
      {"build", base, "-o", temp_path("small.cagra"), "--backend", "cpu", "--partition-rows", "50"},
      1);
  EXPECT_NE(err.find("knn.partition_rows 50 is too small"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(temp_path("small.cagra")));
}

TEST(CliErrors, MissingInputFile) {
  const std::string out = temp_path("missing_out.cagra");
  expect_error({"build", temp_path("does_not_exist.u8bin"), "-o", out}, 1);
  expect_error({"search", temp_path("nope.cagra"), bigann("query.u8bin"), "-k", "10", "-o",
                temp_path("missing.ibin")},
               1);
  expect_error({"info", temp_path("nope.cagra")}, 1);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(temp_path("missing.ibin")));
}

TEST(CliErrors, KLargerThanIndexAndDimMismatch) {
  const std::string idx = small_index(), q8 = small_queries(8, "q8.fbin");
  const std::string q7 = small_queries(7, "q7.fbin"), out = temp_path("small_out.ibin");
  const auto idx_bytes = read_bytes(idx), q_bytes = read_bytes(q7);
  expect_error({"search", idx, q8, "-k", "50", "--itopk", "64", "-o", out});
  expect_error({"search", idx, q7, "-k", "3", "-o", out});
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(read_bytes(idx), idx_bytes);
  EXPECT_EQ(read_bytes(q7), q_bytes);
}

TEST(CliErrors, CorruptedIndex) {
  const std::string q8 = small_queries(8, "q8c.fbin"), out = temp_path("corrupt_out.ibin");
  auto good = read_bytes(small_index());
  const std::string garbage = temp_path("garbage.cagra"), truncated = temp_path("trunc.cagra");
  write_bytes(garbage, std::vector<uint8_t>(300, 0xA5));
  write_bytes(truncated, std::vector<uint8_t>(good.begin(), good.begin() + good.size() / 2));
  for (const auto& bad : {garbage, truncated}) {
    const auto before = read_bytes(bad);
    expect_error({"search", bad, q8, "-k", "3", "-o", out}, 1);
    expect_error({"info", bad}, 1);
    expect_error({"bench", bad, q8, bigann("groundtruth.ibin"), "-k", "3"}, 1);
    EXPECT_EQ(read_bytes(bad), before);
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliErrors, OutputThatIsAnInputIsRefused) {
  const std::string base = copy_to_temp(bigann("base.u8bin"), "same_base.u8bin");
  const std::string gt = copy_to_temp(bigann("groundtruth.ibin"), "same_gt.ibin");
  const auto base_bytes = read_bytes(base), gt_bytes = read_bytes(gt);
  const std::string base_alias = fs::path(base).parent_path().string() + "/./same_base.u8bin";
  expect_error({"build", base, "-o", base, "--force"}, 1);
  expect_error({"build", base, "-o", base_alias, "--force"}, 1);
  expect_error({"gt", gt, base, "-k", "5", "-o", gt, "--force"}, 1);
  expect_error({"bench", small_index(), small_queries(8, "qj.fbin"), gt, "--json", gt}, 1);
  EXPECT_EQ(read_bytes(base), base_bytes);
  EXPECT_EQ(read_bytes(gt), gt_bytes);
}

TEST(CliErrors, ExistingOutputNeedsForce) {
  const std::string keep = temp_path("keep.ibin"), keep_idx = temp_path("keep.cagra");
  write_bytes(keep, {'k', 'e', 'e', 'p'});
  write_bytes(keep_idx, {'k', 'e', 'e', 'p'});
  const std::string idx = small_index(), q8 = small_queries(8, "q8f.fbin");
  expect_error({"search", idx, q8, "-k", "3", "-o", keep}, 1);
  expect_error({"build", bigann("base.u8bin"), "-o", keep_idx}, 1);
  expect_error({"gt", bigann("base.u8bin"), bigann("query.u8bin"), "-k", "5", "-o", keep}, 1);
  EXPECT_EQ(read_bytes(keep), (std::vector<uint8_t>{'k', 'e', 'e', 'p'}));
  EXPECT_EQ(read_bytes(keep_idx), (std::vector<uint8_t>{'k', 'e', 'e', 'p'}));
}

TEST(CliErrors, EvalShapeMismatch) {
  const std::string gt = bigann("groundtruth.ibin");
  const std::string q8 = small_queries(8, "q8e.fbin");
  expect_error({"eval", gt, gt, "-k", "101"}, 1);                // only 100 columns
  expect_error({"bench", small_index(), q8, gt, "-k", "3"}, 1);  // 5 queries, 100 truth rows
}

// ---- the library's rules, as the CLI applies them ----------------------------------------------

/** The "plan: ..." line of an --explain run's stdout (without "plan: "), or "" when absent. */
std::string plan_line(const std::string& out) {
  const size_t at = out.rfind("plan: ", 0) == 0 ? 0 : out.find("\nplan: ");
  if (at == std::string::npos) return "";
  const size_t begin = out.find("plan: ", at) + 6;
  return out.substr(begin, out.find('\n', begin) - begin);
}

// itopk < k is not refused: the library raises it to k (like hnswlib's ef), and the summary and
// --explain show the value used.
TEST(CliRules, ItopkBelowKIsRaisedToK) {
  const std::string idx = small_index(), q8 = small_queries(8, "q8r.fbin");
  const std::string out = temp_path("small_raised.ibin");
  cli_result r =
      run_cli({"search", idx, q8, "-k", "10", "--itopk", "5", "-o", out, "--force", "--explain"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(plan_line(r.out).find(" k=10 itopk=10 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("search    k 10, itopk 10,"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(out));
}

// --traversal int8 on a float index: the search succeeds, its plan and summary name the traversal
// and the candidates re-ranked; an unknown traversal is a usage error, a rerank below k the
// library's error, both before any output is written.
TEST(CliRules, Int8Traversal) {
  const std::string idx = small_index(), q8 = small_queries(8, "q8t.fbin");
  const std::string out = temp_path("small_int8.ibin");
  cli_result r = run_cli({"search", idx, q8, "-k", "5", "--itopk", "16", "-o", out, "--force",
                          "--explain", "--backend", "cpu", "--traversal", "int8"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(plan_line(r.out).find(" traversal=int8 rerank=16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", traversal int8 (rerank 16)"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(out));
  r = run_cli({"search", idx, q8, "-k", "5", "--itopk", "16", "-o", out, "--force", "--explain",
               "--backend", "cpu", "--traversal", "int8", "--rerank", "8"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(plan_line(r.out).find(" traversal=int8 rerank=8"), std::string::npos) << r.out;
  r = run_cli({"search", idx, q8, "-k", "5", "--itopk", "16", "-o", out, "--force", "--explain",
               "--backend", "cpu", "--traversal", "int8", "--stored-rows", "host"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(plan_line(r.out).find(" rerank=16 stored_rows=host"), std::string::npos) << r.out;
  r = run_cli({"search", idx, q8, "-k", "5", "-o", out, "--force", "--explain", "--backend", "cpu",
               "--traversal", "exact"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(plan_line(r.out).find("traversal"), std::string::npos) << r.out;

  const std::string none = temp_path("small_int8_none.ibin");
  std::string err =
      expect_error({"search", idx, q8, "-k", "5", "-o", none, "--traversal", "bogus"}, 2);
  EXPECT_NE(err.find("--traversal: expected exact or int8, got 'bogus'"), std::string::npos) << err;
  err = expect_error({"search", idx, q8, "-k", "5", "-o", none, "--backend", "cpu", "--traversal",
                      "int8", "--rerank", "3"},
                     1);
  EXPECT_NE(err.find("rerank (3)"), std::string::npos) << err;
  err = expect_error({"search", idx, q8, "-k", "5", "-o", none, "--stored-rows", "disk"}, 2);
  EXPECT_NE(err.find("--stored-rows: expected auto, device or host"), std::string::npos) << err;
  err = expect_error(
      {"search", idx, q8, "-k", "5", "-o", none, "--backend", "cpu", "--stored-rows", "host"}, 1);
  EXPECT_NE(err.find("needs traversal = int8"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(none));

  // bench --traversal exact,int8: one point each; the int8 point's JSON names the traversal and
  // the plan's rerank count, the exact point's names neither.
  const index small = load(idx);
  const host_matrix queries = io::read_matrix(q8);
  const knn_graph gt = brute_force_knn({}, metric::l2, small.vectors().view(), queries.view(), 5);
  const std::string truth = temp_path("small_int8_gt.ibin"), json = temp_path("int8.jsonl");
  io::write_neighbors(truth, gt.view());
  r = run_cli({"bench", idx, q8, truth, "-k", "5", "--itopk", "16", "--backend", "cpu",
               "--traversal", "exact,int8", "--json", json});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("traversal int8, rerank auto"), std::string::npos) << r.out;
  std::ifstream lines(json);
  std::string exact_point, int8_point;
  ASSERT_TRUE(std::getline(lines, exact_point) && std::getline(lines, int8_point)) << r.out;
  EXPECT_EQ(exact_point.find("traversal"), std::string::npos) << exact_point;
  EXPECT_NE(int8_point.find("\"traversal\":\"int8\",\"rerank\":16"), std::string::npos)
      << int8_point;
  expect_error({"bench", idx, q8, truth, "-k", "5", "--traversal", "exact,fast"}, 2);
}

// With no --intermediate-degree, `cagra build` passes 0 (automatic) and prints the degree the
// library chose; its --explain line and `cagra search --explain` equal the library's plans.
TEST(CliRules, BuildAndSearchFollowTheLibraryDefaults) {
  host_matrix data(dtype::f32, 300, 8);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(0, 1);
  for (int64_t i = 0; i < data.rows() * data.cols(); ++i) data.as<float>().data[i] = u(rng);
  const std::string base = temp_path("rules_base.fbin"), idx = temp_path("rules.cagra");
  io::write_matrix(base, data.view());
  host_matrix q(dtype::f32, 4, 8);
  std::copy(data.as<float>().data, data.as<float>().data + 32, q.as<float>().data);
  const std::string queries = temp_path("rules_q.fbin"), out = temp_path("rules_nn.ibin");
  io::write_matrix(queries, q.view());

  struct build_case {
    std::vector<std::string> extra;
    uint32_t d, d_init;
  };
  for (const build_case& c :
       {build_case{{}, 64, 128}, build_case{{"--graph-degree", "16"}, 16, 32},
        build_case{{"--limit", "100"}, 64, 99},
        build_case{{"--graph-degree", "16", "--intermediate-degree", "24"}, 16, 24}}) {
    std::vector<std::string> cmd = {"build",   base,        "-o",        idx,
                                    "--force", "--explain", "--backend", "cpu"};
    cmd.insert(cmd.end(), c.extra.begin(), c.extra.end());
    SCOPED_TRACE(cmd_text(cmd));
    cli_result r = run_cli(cmd);
    ASSERT_EQ(r.status, 0) << r.err;
    index_params ip;
    ip.graph_degree = c.d;
    if (c.d_init != 2 * c.d && c.d_init != 99) ip.intermediate_graph_degree = c.d_init;
    resources cpu;
    cpu.target = backend::cpu;
    const build_plan plan = plan_build(cpu, ip, c.d_init == 99 ? 100 : 300, 8, dtype::f32);
    EXPECT_EQ(plan.intermediate_graph_degree, c.d_init);
    EXPECT_EQ(plan_line(r.out), to_string(plan)) << r.out;
    EXPECT_NE(r.out.find("degree " + std::to_string(c.d) + " (intermediate " +
                         std::to_string(c.d_init) + ")"),
              std::string::npos)
        << r.out;
  }

  // The last index (d = 16): the default search, k above the default itopk.
  cli_result r = run_cli(
      {"search", idx, queries, "-k", "80", "-o", out, "--force", "--explain", "--backend", "cpu"});
  ASSERT_EQ(r.status, 0) << r.err;
  resources cpu;
  cpu.target = backend::cpu;
  const search_plan plan = plan_search(cpu, search_params{}, load(idx), 80, 4);
  EXPECT_EQ(plan.itopk, 80u);
  EXPECT_EQ(plan_line(r.out), to_string(plan)) << r.out;
  EXPECT_NE(r.out.find("search    k 80, itopk 80,"), std::string::npos) << r.out;
}

// ---- the happy path on real data -------------------------------------------------------------

TEST(CliPipeline, Bigann10kBuildSearchEvalInfoBenchGt) {
  const std::string base = bigann("base.u8bin"), query = bigann("query.u8bin");
  const std::string truth = bigann("groundtruth.ibin");
  const std::string idx = temp_path("bigann.cagra"), nn = temp_path("bigann_nn.ibin");

  cli_result r =
      run_cli({"build", base, "-o", idx, "--graph-degree", "32", "--intermediate-degree", "64"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("optimize"), std::string::npos) << r.out;

  r = run_cli({"search", idx, query, "-k", "10", "--itopk", "64", "-o", nn});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("QPS"), std::string::npos) << r.out;

  r = run_cli({"eval", nn, truth, "-k", "10"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_GE(parse_recall(r.out, 10), 0.95) << r.out;

  r = run_cli({"info", idx});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"9900", "128", "u8", "l2", "32", "2-hop", "strong components",
                        "invalid edges      0", "self loops         0", "duplicate edges    0"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;

  const std::string json = temp_path("bench.jsonl");
  r = run_cli({"bench", idx, query, truth, "-k", "10", "--itopk", "8,16,64", "--search-width",
               "1,2", "--json", json, "--dataset", "bigann10k"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream f(json);
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 4u) << "itopk 8 < k is skipped: 2 itopk x 2 widths";
  const std::string run_id = lines[0].substr(0, lines[0].find(','));
  // The default backend searches on the GPU when this build has CUDA and sees a device.
  const std::string system_field =
      std::string("\"system\":\"cagra-") + (cuda_available() ? "cuda" : "cpu") + "\"";
  for (const auto& l : lines) {
    EXPECT_EQ(l.front(), '{');
    EXPECT_EQ(l.back(), '}');
    EXPECT_EQ(l.substr(0, l.find(',')), run_id) << "one run_id per sweep";
    for (const char* field :
         {"\"run_id\":\"", system_field.c_str(), "\"device\":\"", "\"commit\":\"",
          "\"dataset\":\"bigann10k\"", "\"n\":9900", "\"dim\":128", "\"batch\":0", "\"k\":10",
          "\"params\":{\"itopk\":", "\"search_width\":", "\"max_iterations\":0",
          "\"threads\":", "\"recall\":", "\"qps\":", "\"latency_ms\":", "\"build_s\":null",
          "\"plan\":\"backend=", " k=10 itopk="})
      EXPECT_NE(l.find(field), std::string::npos) << field << " in " << l;
  }

  r = run_cli({"bench", idx, query, truth, "--itopk", "32", "--batch", "1", "--json", json,
               "--build-s", "1.5"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("latency ms"), std::string::npos) << r.out;
  lines.clear();
  std::ifstream f2(json);
  for (std::string line; std::getline(f2, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u) << "--json appends";
  EXPECT_NE(lines[4].find("\"batch\":1"), std::string::npos) << lines[4];
  EXPECT_NE(lines[4].find("\"threads\":1,"), std::string::npos) << lines[4];
  EXPECT_NE(lines[4].find("\"build_s\":1.5,\"plan\":\""), std::string::npos) << lines[4];
  EXPECT_EQ(lines[4].back(), '}');

  // --persistent on|off (GPU batch 1, default on): "persistent": true marks only the points that
  // ran through the resident kernel (plan io=persistent), so never one with off, nor on the CPU.
  for (const char* mode : {"off", "on"}) {
    std::vector<std::string> cmd{"bench",   idx, query,          truth, "--itopk", "32",
                                 "--batch", "1", "--persistent", mode,  "--json",  json};
    if (std::string(mode) == "on") {
      cmd.push_back("--backend");
      cmd.push_back("cpu");
    }
    r = run_cli(cmd);
    ASSERT_EQ(r.status, 0) << mode << ": " << r.err;
    std::ifstream f(json);
    std::string last;
    for (std::string line; std::getline(f, line);) last = line;
    EXPECT_EQ(last.find("\"persistent\""), std::string::npos) << mode << ": " << last;
  }
  expect_error({"bench", idx, query, truth, "--persistent", "yes"}, 2);
  expect_error({"bench", idx, query, truth, "--persistent"}, 2);  // a value is needed
  // --persistent-lifetime-us: 200 .. 10000000 (search_params::persistent_lifetime_us).
  expect_error({"bench", idx, query, truth, "--persistent-lifetime-us", "100"}, 2);
  expect_error({"bench", idx, query, truth, "--persistent-lifetime-us", "20000000"}, 2);
  r = run_cli({"bench", idx, query, truth, "--itopk", "32", "--batch", "1", "--backend", "cpu",
               "--persistent-lifetime-us", "20000"});
  ASSERT_EQ(r.status, 0) << r.err;

  // --deleted-share: a share of the rows removed first; each point's ground truth is the exact
  // search of the rest and every returned id is checked (deleted_share, filter_violations).
  const std::string deleted = temp_path("deleted.jsonl");
  r = run_cli({"bench", idx, query, truth, "--itopk", "64", "--backend", "cpu", "--deleted-share",
               "0.3", "--filter-selectivity", "1,0.5", "--json", deleted});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("deleted   2970 rows (30%)"), std::string::npos) << r.out;
  lines.clear();
  std::ifstream fd(deleted);
  for (std::string line; std::getline(fd, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u);
  for (const auto& l : lines) {
    EXPECT_NE(l.find("\"deleted_share\":0.3,\"filter_violations\":0"), std::string::npos) << l;
    const size_t at = l.find("\"recall\":");
    ASSERT_NE(at, std::string::npos) << l;
    EXPECT_GE(std::stod(l.substr(at + 9)), 0.95) << l;
  }
  expect_error({"bench", idx, query, truth, "--deleted-share", "1"}, 2);

  // --explain: one plan line per point, before its row; a sweep whose every itopk is < k is a
  // usage error (nothing left to measure), one with some >= k skips the others.
  r = run_cli({"bench", idx, query, truth, "-k", "10", "--itopk", "8,32", "--search-width", "1,2",
               "--explain"});
  ASSERT_EQ(r.status, 0) << r.err;
  size_t plans = 0;
  for (size_t at = r.out.find("\nplan: "); at != std::string::npos;
       at = r.out.find("\nplan: ", at + 1))
    ++plans;
  EXPECT_EQ(plans, 2u) << r.out;
  EXPECT_NE(r.out.find("itopk=32 search_width=2"), std::string::npos) << r.out;
  expect_error({"bench", idx, query, truth, "-k", "10", "--itopk", "4,8"}, 2);

  // The ablation settings (paper Q-B1/Q-B2/Q-B3): swept team sizes, a forced kernel and the hash
  // go into params only when set; bad values are usage errors.
  const std::string ablation = temp_path("ablation.jsonl");
  r = run_cli({"bench", idx, query, truth, "--itopk", "32", "--team-size", "4,8", "--algo",
               "single", "--hash-bits", "10", "--hash-reset-interval", "2", "--json", ablation});
  ASSERT_EQ(r.status, 0) << r.err;
  lines.clear();
  std::ifstream f3(ablation);
  for (std::string line; std::getline(f3, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u) << "one point per team size";
  for (const char* field : {"\"team_size\":4", "\"algo\":\"single_cta\"", "\"hash_bits\":10",
                            "\"hash_reset_interval\":2"})
    EXPECT_NE(lines[0].find(field), std::string::npos) << field << " in " << lines[0];
  EXPECT_NE(lines[1].find("\"team_size\":8"), std::string::npos) << lines[1];
  expect_error({"bench", idx, query, truth, "--team-size", "3"}, 2);
  expect_error({"bench", idx, query, truth, "--algo", "fastest"}, 2);

  const std::string gt = temp_path("bigann_gt.ibin");
  const std::string gt_json = temp_path("gt.jsonl");
  r = run_cli(
      {"gt", base, query, "-k", "10", "-o", gt, "--json", gt_json, "--dataset", "bigann10k"});
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_cli({"eval", gt, truth, "-k", "10"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "recall@10=1.0000\n");
  // The exact search's QPS as one more bench record, recall 1.
  std::ifstream f4(gt_json);
  std::string rec;
  ASSERT_TRUE(std::getline(f4, rec));
  for (const char* field :
       {"\"system\":\"", "-brute-force\"", "\"dataset\":\"bigann10k\"", "\"n\":9900", "\"nq\":100",
        "\"k\":10", "\"recall\":1.000000", "\"qps\":"})
    EXPECT_NE(rec.find(field), std::string::npos) << field << " in " << rec;
}

}  // namespace
}  // namespace cagra::test
