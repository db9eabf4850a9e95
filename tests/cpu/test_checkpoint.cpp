// Checkpoint and resume of a sharded build (cagra/multi_gpu.hpp, shard_build_options;
// docs/multi_gpu.md "Checkpoints") on the CPU backend: a second build with the same folder loads
// every shard (bit for bit the same index), a missing shard or one made from other inputs
// (another graph_degree, one changed row) is built again and only it, a killed save's temporary
// file is ignored, and a checkpoint file that cannot be read stops the build before any shard is
// built. Also the stream-free text helpers the fingerprint and the manifest are read with.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <cagra/multi_gpu.hpp>

#include "core/text_words.hpp"
#include "test_data.hpp"

namespace fs = std::filesystem;

namespace cagra::test {
namespace {

index_params small_params() {
  index_params p;
  p.graph_degree = 32;
  p.intermediate_graph_degree = 64;
  return p;
}

/** A fresh (empty, not yet made) checkpoint folder. */
std::string fresh_dir(const std::string& name) {
  const std::string d = temp_path(name);
  fs::remove_all(d);
  return d;
}

struct outcome {
  sharded_index idx;
  build_report report;
  std::vector<shard_event> events;  // by shard
};

outcome build_with(const std::string& dir, dataset_view data,
                   const index_params& p = small_params(), uint32_t shards = 3) {
  outcome o;
  o.events.resize(shards);
  shard_build_options opt;
  opt.shards = shards;
  opt.checkpoint_dir = dir;
  opt.on_shard = [&](const shard_event& e) {
    EXPECT_EQ(e.shard_count, shards);
    o.events.at(e.shard) = e;
  };
  o.idx = build_sharded(cpu(), p, data, opt, &o.report);
  return o;
}

bool same_index(const index& a, const index& b) {
  if (a.size() != b.size() || a.graph_degree() != b.graph_degree() || a.dim() != b.dim())
    return false;
  const size_t graph_bytes = size_t(a.size()) * a.graph_degree() * sizeof(uint32_t);
  return std::memcmp(a.graph().data, b.graph().data, graph_bytes) == 0 &&
         a.vectors().size_bytes() == b.vectors().size_bytes() &&
         std::memcmp(a.vectors().data(), b.vectors().data(), a.vectors().size_bytes()) == 0;
}

bool same_sharded(const sharded_index& a, const sharded_index& b) {
  if (a.shard_count() != b.shard_count()) return false;
  for (size_t s = 0; s < a.shard_count(); ++s)
    if (a.shard_offset(s) != b.shard_offset(s) || !same_index(a.shard(s), b.shard(s))) return false;
  return true;
}

class Checkpoint : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    set_ = new real_set(bigann10k());
    plain_ = new sharded_index(build_sharded(cpu(), small_params(), set_->base, 3));
  }
  static void TearDownTestSuite() {
    delete plain_;
    delete set_;
  }
  static inline real_set* set_ = nullptr;
  static inline sharded_index* plain_ = nullptr;  // the same build without a checkpoint
};

TEST_F(Checkpoint, SecondBuildResumesEveryShardBitForBit) {
  const std::string dir = fresh_dir("ckpt_all");
  const outcome first = build_with(dir, set_->base);
  EXPECT_EQ(first.report.shards_built, 3u);
  EXPECT_EQ(first.report.shards_resumed, 0u);
  for (const shard_event& e : first.events) {
    EXPECT_FALSE(e.resumed);
    EXPECT_EQ(e.reason, "") << e.shard;  // the folder was empty
  }
  EXPECT_EQ(first.events[1].first_row, 3300);
  EXPECT_EQ(first.events[1].rows, 3300);
  EXPECT_TRUE(same_sharded(first.idx, *plain_));
  for (int s = 0; s < 3; ++s) {
    const std::string stem = dir + "/shard-" + std::to_string(s) + "-of-3";
    EXPECT_TRUE(fs::exists(stem + ".cagra")) << stem;
    EXPECT_TRUE(fs::exists(stem + ".fingerprint")) << stem;
  }

  const outcome again = build_with(dir, set_->base);
  EXPECT_EQ(again.report.shards_built, 0u);
  EXPECT_EQ(again.report.shards_resumed, 3u);
  for (const shard_event& e : again.events) EXPECT_TRUE(e.resumed) << e.shard;
  EXPECT_TRUE(same_sharded(again.idx, *plain_));

  // The uint32_t form and an options struct without a folder build as before.
  build_report rep;
  shard_build_options none;
  none.shards = 3;
  EXPECT_TRUE(same_sharded(build_sharded(cpu(), small_params(), set_->base, none, &rep), *plain_));
  EXPECT_EQ(rep.shards_built, 3u);
  EXPECT_EQ(rep.shards_resumed, 0u);
}

TEST_F(Checkpoint, OnlyAMissingShardIsBuiltAndTemporaryFilesAreIgnored) {
  const std::string dir = fresh_dir("ckpt_missing");
  (void)build_with(dir, set_->base);
  fs::remove(dir + "/shard-1-of-3.cagra");
  // What a save killed mid-write leaves: partial temporary files (of a process that is gone).
  write_bytes(dir + "/shard-1-of-3.cagra.tmp.999999.0", std::vector<uint8_t>(1000, 0xab));
  write_bytes(dir + "/shard-0-of-3.cagra.tmp.999999.1", std::vector<uint8_t>(10, 0xcd));
  write_bytes(dir + "/shard-2-of-3.fingerprint.tmp.999999", {'C', 'A', 'G'});
  write_bytes(dir + "/notes.txt", {'h', 'i'});
  const outcome o = build_with(dir, set_->base);
  EXPECT_EQ(o.report.shards_built, 1u);
  EXPECT_EQ(o.report.shards_resumed, 2u);
  EXPECT_TRUE(o.events[0].resumed);
  EXPECT_FALSE(o.events[1].resumed);
  EXPECT_TRUE(o.events[2].resumed);
  EXPECT_NE(o.events[1].reason.find("missing"), std::string::npos) << o.events[1].reason;
  EXPECT_TRUE(same_sharded(o.idx, *plain_));
  EXPECT_EQ(build_with(dir, set_->base).report.shards_resumed, 3u);

  // A shard file without its fingerprint (a build killed between the two) is built again.
  fs::remove(dir + "/shard-2-of-3.fingerprint");
  const outcome p = build_with(dir, set_->base);
  EXPECT_EQ(p.report.shards_built, 1u);
  EXPECT_FALSE(p.events[2].resumed);
  EXPECT_NE(p.events[2].reason.find("no fingerprint"), std::string::npos) << p.events[2].reason;
  EXPECT_TRUE(same_sharded(p.idx, *plain_));
}

TEST_F(Checkpoint, AnotherParameterRebuildsEveryShard) {
  const std::string dir = fresh_dir("ckpt_param");
  (void)build_with(dir, set_->base);
  index_params p = small_params();
  p.graph_degree = 24;
  const outcome o = build_with(dir, set_->base, p);
  EXPECT_EQ(o.report.shards_built, 3u);
  EXPECT_EQ(o.report.shards_resumed, 0u);
  EXPECT_EQ(o.idx.graph_degree(), 24u);
  for (const shard_event& e : o.events)
    EXPECT_EQ(e.reason, "graph_degree: 32 in the checkpoint, 24 now") << e.shard;
  // The folder now holds the degree-24 shards: degree 32 builds again, then resumes.
  const outcome back = build_with(dir, set_->base);
  EXPECT_EQ(back.report.shards_built, 3u);
  EXPECT_TRUE(same_sharded(back.idx, *plain_));
  // Another seed, another knn setting: other inputs too.
  p = small_params();
  p.seed = 7;
  EXPECT_EQ(build_with(dir, set_->base, p).events[0].reason, "seed: 0 in the checkpoint, 7 now");
  // Another shard count names other files: nothing of the 3-shard set is reused.
  const outcome four = build_with(dir, set_->base, p, 4);
  EXPECT_EQ(four.report.shards_built, 4u);
  for (const shard_event& e : four.events) EXPECT_EQ(e.reason, "") << e.shard;
}

TEST_F(Checkpoint, OneChangedRowRebuildsItsShardOnly) {
  const std::string dir = fresh_dir("ckpt_data");
  (void)build_with(dir, set_->base);
  host_matrix changed = head(set_->base, set_->base.rows());
  static_cast<uint8_t*>(changed.data())[size_t(7000) * 128 + 5] ^= 1;  // row 7000: shard 2
  const outcome o = build_with(dir, changed.view());
  EXPECT_EQ(o.report.shards_built, 1u);
  EXPECT_TRUE(o.events[0].resumed);
  EXPECT_TRUE(o.events[1].resumed);
  EXPECT_FALSE(o.events[2].resumed);
  EXPECT_EQ(o.events[2].reason.rfind("data_xxh64: ", 0), 0u) << o.events[2].reason;
  const sharded_index direct = build_sharded(cpu(), small_params(), changed.view(), 3);
  EXPECT_TRUE(same_sharded(o.idx, direct));
  // Fewer rows: every row range moves, every shard is built again.
  const host_matrix fewer = head(set_->base, 9000);
  const outcome f = build_with(dir, fewer.view());
  EXPECT_EQ(f.report.shards_built, 3u);
  EXPECT_EQ(f.events[0].reason, "rows: 9900 in the checkpoint, 9000 now");
}

/** The message of the cagra::error `f` throws ("" when it throws none). */
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const error& e) {
    return e.what();
  }
  return "";
}

TEST_F(Checkpoint, UnreadableFilesStopTheBuildBeforeAnyShard) {
  const std::string dir = fresh_dir("ckpt_bad");
  (void)build_with(dir, set_->base);
  const std::string fp = dir + "/shard-1-of-3.fingerprint";
  const std::vector<uint8_t> good_fp = read_bytes(fp);
  int built = 0;
  shard_build_options opt;
  opt.shards = 3;
  opt.checkpoint_dir = dir;
  opt.on_shard = [&](const shard_event& e) { built += !e.resumed; };
  const auto run = [&] { (void)build_sharded(cpu(), small_params(), set_->base, opt); };

  // A garbled fingerprint: an error naming the file; nothing is built.
  write_bytes(fp, {'g', 'a', 'r', 'b', 'l', 'e', 'd', '\n'});
  std::string m = error_of(run);
  EXPECT_NE(m.find("shard-1-of-3.fingerprint"), std::string::npos) << m;
  EXPECT_NE(m.find("not a readable shard fingerprint"), std::string::npos) << m;
  // Truncated (no "end"), and a line of another form.
  std::vector<uint8_t> cut(good_fp.begin(), good_fp.begin() + long(good_fp.size() / 2));
  write_bytes(fp, cut);
  EXPECT_NE(error_of(run).find("truncated"), std::string::npos);
  std::string text(good_fp.begin(), good_fp.end());
  text.replace(text.find("seed 0"), 6, "seed 0 1");
  write_bytes(fp, std::vector<uint8_t>(text.begin(), text.end()));
  EXPECT_NE(error_of(run).find("bad line"), std::string::npos);
  EXPECT_EQ(built, 0);
  write_bytes(fp, good_fp);

  // A shard file whose bytes changed where the trailing checksum does not show it: the load's
  // checksum check refuses it.
  const std::string shard = dir + "/shard-2-of-3.cagra";
  const std::vector<uint8_t> good_shard = read_bytes(shard);
  std::vector<uint8_t> bad = good_shard;
  bad[bad.size() / 2] ^= 0xff;
  write_bytes(shard, bad);
  m = error_of(run);
  EXPECT_NE(m.find("shard-2-of-3.cagra"), std::string::npos) << m;
  EXPECT_NE(m.find("cannot be read"), std::string::npos) << m;
  EXPECT_EQ(built, 0);
  // A truncated shard file is not the one its fingerprint names: built again, not loaded.
  write_bytes(shard, std::vector<uint8_t>(good_shard.begin(), good_shard.end() - 100));
  (void)build_sharded(cpu(), small_params(), set_->base, opt);
  EXPECT_EQ(built, 1);
  EXPECT_EQ(read_bytes(shard), good_shard);

  // A folder in place of a shard file, and a file in place of the folder.
  fs::remove(shard);
  fs::create_directory(shard);
  EXPECT_NE(error_of(run).find("not a regular file"), std::string::npos);
  fs::remove(shard);
  const std::string file = temp_path("ckpt_not_a_folder");
  write_bytes(file, {'x'});
  opt.checkpoint_dir = file;
  EXPECT_NE(error_of(run).find("is not a folder"), std::string::npos);
}

// core/text_words.hpp: what the fingerprint and manifest readers accept as words and numbers.
TEST(TextWords, SplitAndParseWithoutStreams) {
  using V = std::vector<std::string>;
  EXPECT_EQ(core::split_words("  shard 1\trows  9\r\nend\n"),
            (V{"shard", "1", "rows", "9", "end"}));
  EXPECT_EQ(core::split_words(" \n\t"), V{});
  EXPECT_EQ(core::split_lines("a b\n\nend\n"), (V{"a b", "", "end"}));
  EXPECT_EQ(core::split_lines("a\nno newline"), (V{"a", "no newline"}));
  EXPECT_EQ(core::split_lines(""), V{});
  uint64_t u = 7;
  EXPECT_TRUE(core::parse_decimal("18446744073709551615", u));
  EXPECT_EQ(u, UINT64_MAX);
  for (const char* bad : {"", "-1", "+1", "1x", " 1", "0x10", "18446744073709551616"}) {
    u = 7;
    EXPECT_FALSE(core::parse_decimal(bad, u)) << bad;
    EXPECT_EQ(u, 7u) << bad;  // untouched on failure
  }
  int small = 0;
  EXPECT_FALSE(core::parse_decimal("2147483648", small));
  EXPECT_TRUE(core::parse_decimal("007", small));
  EXPECT_EQ(small, 7);
}

}  // namespace
}  // namespace cagra::test
