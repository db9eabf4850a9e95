// Tests of the multi-GPU surfaces of the `cagra` tool (docs/multi_gpu.md, docs/cli.md): a
// sharded index built with --shards on the CPU backend, searched, evaluated, benchmarked and
// described like a single index; --devices parsed strictly; every command that takes one
// cagra::index refusing a sharded manifest with one clear line. Run as a separate process like
// test_cli.cpp. The CPU backend ignores the device list, so --devices 0,1 here exercises the
// parsing, the sharding rule (one shard per device) and the records, not the GPUs.
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include <gtest/gtest.h>

#include "cli_run.hpp"
#include "test_data.hpp"

namespace fs = std::filesystem;

namespace cagra::test {
namespace {

/** The value after `key` on the line of `out` that starts with it ("shards             3"). */
std::string field(const std::string& out, const std::string& key) {
  const size_t at = out.rfind(key, 0) == 0 ? 0 : out.find("\n" + key);
  if (at == std::string::npos) return "";
  const size_t begin = out.find_first_not_of(' ', out.find(key, at) + key.size());
  return out.substr(begin, out.find('\n', begin) - begin);
}

/** recall@10 of `index` (single or sharded) on bigann10k's queries at `itopk`, through search
 *  and eval; `extra` options go to search. */
double recall_at(const std::string& index, uint32_t itopk, const std::string& tag,
                 const std::vector<std::string>& extra = {}) {
  const std::string nn = temp_path("mg_nn_" + tag + ".ibin");
  std::vector<std::string> args = {
      "search", index, bigann("query.u8bin"), "-k", "10", "--itopk", std::to_string(itopk),
      "-o",     nn,    "--backend",           "cpu"};
  args.insert(args.end(), extra.begin(), extra.end());
  cli_result r = run_cli(args);
  EXPECT_EQ(r.status, 0) << r.err;
  cli_result e = run_cli({"eval", nn, bigann("groundtruth.ibin"), "-k", "10"});
  EXPECT_EQ(e.status, 0) << e.err;
  return parse_recall(e.out, 10);
}

/** A sharded index of 3 shards over bigann10k (built once for the suite). */
const std::string& sharded_bigann() {
  static const std::string path = [] {
    const std::string p = temp_path("mg_bigann.cagra");
    cli_result r = run_cli({"build", bigann("base.u8bin"), "-o", p, "--shards", "3", "--backend",
                            "cpu", "--graph-degree", "32", "--force"});
    EXPECT_EQ(r.status, 0) << r.err;
    return p;
  }();
  return path;
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

TEST(CliMultiGpu, HelpNamesTheOptions) {
  for (const char* cmd : {"build", "search", "bench"}) {
    cli_result h = run_cli({cmd, "--help"});
    EXPECT_EQ(h.status, 0) << cmd;
    EXPECT_NE(h.out.find("--devices"), std::string::npos) << cmd << ": " << h.out;
  }
  cli_result h = run_cli({"build", "--help"});
  EXPECT_NE(h.out.find("--shards"), std::string::npos) << h.out;
}

// ---- the pipeline on real data ----------------------------------------------------------------

TEST(CliMultiGpuPipeline, Bigann10kShardedBuildSearchEvalBenchInfo) {
  const std::string sh = sharded_bigann();
  ASSERT_TRUE(fs::exists(sh));
  for (int s = 0; s < 3; ++s) EXPECT_TRUE(fs::exists(sh + ".shard-" + std::to_string(s) + "-of-3"));
  EXPECT_FALSE(fs::exists(sh + ".shard-3-of-3"));

  // Recall: sharded >= single - 0.01 at the same itopk, and >= 0.9 at itopk 64.
  const std::string single = temp_path("mg_single.cagra");
  cli_result r = run_cli({"build", bigann("base.u8bin"), "-o", single, "--backend", "cpu",
                          "--graph-degree", "32", "--force"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (uint32_t itopk : {16u, 64u}) {
    const double one = recall_at(single, itopk, "single" + std::to_string(itopk));
    const double three = recall_at(sh, itopk, "sharded" + std::to_string(itopk));
    EXPECT_GE(three, one - 0.01) << "itopk " << itopk;
    if (itopk == 64) {
      EXPECT_GE(three, 0.9);
    }
  }
  // --devices on a search: the CPU ignores the list; the line names it, the results hold.
  EXPECT_GE(recall_at(sh, 64, "sharded_devices", {"--devices", "0,1"}), 0.9);

  // Global ids: every returned id is a row of the whole set, and rows of every shard come back.
  const std::string nn = temp_path("mg_nn_sharded64.ibin");
  const io::neighbors_file found = io::read_neighbors(nn);
  ASSERT_EQ(found.ids.rows(), 100);
  const auto* ids = static_cast<const uint32_t*>(found.ids.data());
  std::set<int> shards_seen;
  for (int64_t i = 0; i < found.ids.rows() * found.ids.cols(); ++i) {
    ASSERT_LT(ids[i], 9900u);
    shards_seen.insert(int(ids[i] / 3300));
  }
  EXPECT_EQ(shards_seen.size(), 3u);

  // .npy output: int64 global row numbers.
  r = run_cli({"search", sh, bigann("query.u8bin"), "-k", "10", "-o", temp_path("mg_nn.npy"),
               "--backend", "cpu"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("3 shards merged"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("int64 row numbers"), std::string::npos) << r.out;

  // --explain prints shard 0's plan.
  r = run_cli({"search", sh, bigann("query.u8bin"), "-k", "10", "-o", temp_path("mg_nn_x.ibin"),
               "--backend", "cpu", "--explain"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("plan: 3 shards; each (shard 0): backend=cpu k=10"), std::string::npos)
      << r.out;

  // bench: the JSON records the devices and the shard count.
  const std::string json = temp_path("mg_bench.jsonl");
  fs::remove(json);
  r = run_cli({"bench", sh, bigann("query.u8bin"), bigann("groundtruth.ibin"), "--itopk", "64",
               "--backend", "cpu", "--json", json, "--devices", "0,1"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("3 shards"), std::string::npos) << r.out;
  std::string line = slurp(json);
  EXPECT_NE(line.find("\"devices\":[0,1],\"shards\":3"), std::string::npos) << line;
  const size_t row = r.out.find("\n    64");
  ASSERT_NE(row, std::string::npos) << r.out;
  EXPECT_GE(std::atof(r.out.substr(row + 20, 11).c_str()), 0.9) << r.out;
  // A single index: shards 1, the default device.
  fs::remove(json);
  r = run_cli({"bench", single, bigann("query.u8bin"), bigann("groundtruth.ibin"), "--itopk", "64",
               "--backend", "cpu", "--json", json});
  ASSERT_EQ(r.status, 0) << r.err;
  line = slurp(json);
  EXPECT_NE(line.find("\"devices\":[0],\"shards\":1"), std::string::npos) << line;
  // --batch keeps its meaning on a sharded index; filtered points work over the global rows.
  r = run_cli({"bench", sh, bigann("query.u8bin"), bigann("groundtruth.ibin"), "--itopk", "64",
               "--backend", "cpu", "--batch", "10", "--filter-selectivity", "0.5"});
  ASSERT_EQ(r.status, 0) << r.err;

  // info: the shard count, rows per shard, a line per shard and the totals.
  r = run_cli({"info", sh});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(field(r.out, "shards"), "3") << r.out;
  EXPECT_EQ(field(r.out, "rows"), "9900") << r.out;
  EXPECT_EQ(field(r.out, "rows per shard"), "3300") << r.out;
  EXPECT_EQ(field(r.out, "dim"), "128") << r.out;
  EXPECT_EQ(field(r.out, "graph degree"), "32") << r.out;
  for (int s = 0; s < 3; ++s)
    EXPECT_NE(r.out.find("\nshard " + std::to_string(s) + " "), std::string::npos) << r.out;
  for (const char* sound : {"invalid edges      0", "self loops         0", "duplicate edges    0"})
    EXPECT_NE(r.out.find(sound), std::string::npos) << r.out;
  EXPECT_EQ(field(r.out, "weak components"), "3 (summed over the shards)") << r.out;
  // Each shard file is an ordinary index.
  r = run_cli({"info", sh + ".shard-1-of-3"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(field(r.out, "rows"), "3300") << r.out;
}

// --devices with several entries and no --shards: one shard per device; --explain names the
// per-shard plan; uneven shards.
TEST(CliMultiGpuPipeline, DevicesMakeOneShardPerDevice) {
  const std::string base = random_vectors(50, 8, "mg_small.fbin", 1);
  const std::string out = temp_path("mg_two.cagra");
  cli_result r = run_cli({"build", base, "-o", out, "--devices", "0,1", "--backend", "cpu",
                          "--graph-degree", "8", "--explain", "--force"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("plan: 2 shards of up to 25 rows; each: backend=cpu"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("sharded   2 shards over 50 rows"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(out + ".shard-1-of-2"));
  // 7 shards of 50 rows: 7 or 8 rows each; a search for more neighbours than a shard holds
  // returns every row of the set in order.
  const std::string seven = temp_path("mg_seven.cagra");
  r = run_cli({"build", base, "-o", seven, "--shards", "7", "--backend", "cpu", "--graph-degree",
               "4", "--force"});
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_cli({"info", seven});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(field(r.out, "rows per shard"), "7 .. 8") << r.out;
  const std::string nn = temp_path("mg_seven_nn.ibin");
  r = run_cli({"search", seven, base, "-k", "20", "--itopk", "64", "-o", nn, "--backend", "cpu",
               "--force"});
  ASSERT_EQ(r.status, 0) << r.err;
  const io::neighbors_file found = io::read_neighbors(nn);
  const auto* ids = static_cast<const uint32_t*>(found.ids.data());
  for (int64_t q = 0; q < 50; ++q) EXPECT_EQ(ids[q * 20], uint32_t(q)) << "a row is its own nn";
  // --shards 0 with one device: one shard; --devices 0 alone: a single index.
  r = run_cli({"build", base, "-o", temp_path("mg_one.cagra"), "--shards", "0", "--backend", "cpu",
               "--graph-degree", "4", "--force"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::exists(temp_path("mg_one.cagra.shard-0-of-1")));
  r = run_cli({"build", base, "-o", temp_path("mg_plain.cagra"), "--devices", "0", "--backend",
               "cpu", "--graph-degree", "4", "--force"});
  ASSERT_EQ(r.status, 0) << r.err;
  r = run_cli({"info", temp_path("mg_plain.cagra")});
  EXPECT_EQ(field(r.out, "shards"), "") << r.out;
  EXPECT_EQ(field(r.out, "rows"), "50") << r.out;
}

// ---- errors -----------------------------------------------------------------------------------

TEST(CliMultiGpuPipeline, CheckpointResumesTheShards) {
  const std::string dir = temp_path("mg_ckpt");
  fs::remove_all(dir);
  const std::string a = temp_path("mg_ckpt_a.cagra"), b = temp_path("mg_ckpt_b.cagra");
  const std::vector<std::string> common = {
      "--shards", "3", "--backend", "cpu", "--graph-degree", "32", "--checkpoint", dir, "--force"};
  std::vector<std::string> args = {"build", bigann("base.u8bin"), "-o", a};
  args.insert(args.end(), common.begin(), common.end());
  cli_result r = run_cli(args);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("checkpoint " + dir + ": 0 shards resumed, 3 built"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(3300 rows), built\n"), std::string::npos) << r.out;
  // Shard 1 lost (an interrupted build had not finished it): only it is built again.
  fs::remove(dir + "/shard-1-of-3.cagra");
  args[3] = b;
  r = run_cli(args);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("2 shards resumed, 1 built"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shard 0   rows 0 .. 3299 (3300 rows), resumed from " + dir),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("shard 1   rows 3300 .. 6599 (3300 rows), built (checkpoint not used: "
                       "shard-1-of-3.cagra is missing)"),
            std::string::npos)
      << r.out;
  // The same index either way: every file of the two sets is the same.
  for (int s = 0; s < 3; ++s) {
    const std::string suffix = ".shard-" + std::to_string(s) + "-of-3";
    EXPECT_EQ(read_bytes(a + suffix), read_bytes(b + suffix)) << suffix;
  }
  EXPECT_GE(recall_at(b, 64, "ckpt"), 0.9);
  // Another degree: every shard is built again, and says why.
  args.insert(args.end(), {"--graph-degree", "24"});
  r = run_cli(args);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("0 shards resumed, 3 built"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("graph_degree: 32 in the checkpoint, 24 now"), std::string::npos) << r.out;

  // Usage errors: a file in place of the folder (one index checkpoints its kNN partitions:
  // test_partitioned_build.cpp).
  std::string err = expect_error({"build", bigann("base.u8bin"), "-o", temp_path("mg_ckpt_c.cagra"),
                                  "--shards", "2", "--checkpoint", bigann("base.u8bin")},
                                 2);
  EXPECT_NE(err.find("is not a folder"), std::string::npos) << err;
  // A garbled fingerprint: the build stops, naming the file.
  write_bytes(dir + "/shard-0-of-3.fingerprint", {'x', '\n'});
  err = expect_error(args, 1);
  EXPECT_NE(err.find("shard-0-of-3.fingerprint"), std::string::npos) << err;
}

TEST(CliMultiGpuErrors, CommandsThatTakeOneIndexRefuseASet) {
  const std::string sh = sharded_bigann();
  const std::string v = bigann("query.u8bin"), out = temp_path("mg_refused.cagra");
  const std::string ids = temp_path("mg_ids.ibin");
  host_matrix rows(dtype::i32, 1, 2);
  io::write_matrix(ids, rows.view());
  const std::string hnsw = temp_path("mg_refused.hnsw");
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"extend", {"extend", sh, v, "-o", out}},
      {"remove", {"remove", sh, ids, "-o", out}},
      {"compact", {"compact", sh, "-o", out}},
      {"export-hnsw", {"export-hnsw", sh, "-o", hnsw}},
  };
  for (const auto& [name, args] : cases) {
    const std::string err = expect_error(args, 1);
    EXPECT_NE(err.find("is a sharded index (3 shards): " + name + " works on a single index"),
              std::string::npos)
        << err;
  }
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(hnsw));
  // --stats counts one index's CPU search.
  std::string err =
      expect_error({"bench", sh, v, bigann("groundtruth.ibin"), "--itopk", "64", "--stats"}, 1);
  EXPECT_NE(err.find("sharded index (3 shards)"), std::string::npos) << err;
}

TEST(CliMultiGpuErrors, BadDevices) {
  const std::string base = random_vectors(20, 8, "mg_d.fbin", 2), out = temp_path("mg_d.cagra");
  for (const char* bad : {"0,0", "-1", "a", "0,,1", "1.5", "0,1,", "99999999999"}) {
    const std::string err =
        expect_error({"build", base, "-o", out, "--devices", bad, "--backend", "cpu"}, 2);
    EXPECT_NE(err.find("--devices"), std::string::npos) << err;
  }
  std::string err = expect_error({"build", base, "-o", out, "--devices", "1,0,1"}, 2);
  EXPECT_NE(err.find("device 1 is listed twice"), std::string::npos) << err;
  expect_error({"search", sharded_bigann(), bigann("query.u8bin"), "-k", "10", "-o",
                temp_path("mg_d.ibin"), "--devices", "2,2"},
               2);
  expect_error({"bench", sharded_bigann(), bigann("query.u8bin"), bigann("groundtruth.ibin"),
                "--devices", "x"},
               2);
  expect_error({"info", sharded_bigann(), "--devices", "0"}, 2);  // not an info option
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliMultiGpuErrors, ShardCountsAndOutputs) {
  const std::string base = random_vectors(20, 8, "mg_s.fbin", 3);
  const std::string out = temp_path("mg_s.cagra");
  fs::remove(out);
  std::string err =
      expect_error({"build", base, "-o", out, "--shards", "21", "--backend", "cpu"}, 1);
  EXPECT_NE(err.find("21 shards for 20 rows"), std::string::npos) << err;
  err = expect_error({"build", base, "-o", out, "--shards", "5000"}, 2);
  EXPECT_NE(err.find("--shards"), std::string::npos) << err;
  expect_error({"build", base, "-o", out, "--shards", "-1"}, 2);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".shard-0-of-21"));

  // An existing shard file of the set to write needs --force, like the manifest itself.
  const std::string shard1 = out + ".shard-1-of-2";
  write_bytes(shard1, {'k', 'e', 'e', 'p'});
  err = expect_error({"build", base, "-o", out, "--shards", "2", "--backend", "cpu"}, 1);
  EXPECT_NE(err.find("shard-1-of-2' exists"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_EQ(read_bytes(shard1), (std::vector<uint8_t>{'k', 'e', 'e', 'p'}));
  cli_result r = run_cli({"build", base, "-o", out, "--shards", "2", "--backend", "cpu",
                          "--graph-degree", "4", "--force"});
  ASSERT_EQ(r.status, 0) << r.err;
  // A shard file may not be the dataset, even with --force.
  const std::string as_input = temp_path("mg_in.cagra");
  const std::string input_copy = as_input + ".shard-0-of-2";
  fs::copy_file(base, input_copy, fs::copy_options::overwrite_existing);
  err = expect_error({"build", input_copy, "-o", as_input, "--shards", "2", "--force"}, 1);
  EXPECT_NE(err.find("is also an input"), std::string::npos) << err;
  // bench --json may not append to a shard file of the index.
  const std::string q = random_vectors(3, 8, "mg_s_q.fbin", 4);
  const auto before = read_bytes(out + ".shard-0-of-2");
  err = expect_error({"bench", out, q, q, "--json", out + ".shard-0-of-2"}, 1);
  EXPECT_NE(err.find("is also an input"), std::string::npos) << err;
  EXPECT_EQ(read_bytes(out + ".shard-0-of-2"), before);
  // A search whose queries have another dimension, or -k beyond the set.
  const std::string q7 = random_vectors(3, 7, "mg_s_q7.fbin", 5);
  err = expect_error({"search", out, q7, "-k", "5", "-o", temp_path("mg_s.ibin")}, 1);
  EXPECT_NE(err.find("dim 7"), std::string::npos) << err;
  err = expect_error({"search", out, q, "-k", "21", "-o", temp_path("mg_s.ibin")}, 1);
  EXPECT_NE(err.find("larger than the index (20 vectors)"), std::string::npos) << err;
  // A set with a shard file replaced since it was saved is refused by name.
  fs::copy_file(out + ".shard-0-of-2", out + ".shard-1-of-2", fs::copy_options::overwrite_existing);
  err = expect_error({"info", out}, 1);
  EXPECT_NE(err.find("not the one the manifest names"), std::string::npos) << err;
}

}  // namespace
}  // namespace cagra::test
