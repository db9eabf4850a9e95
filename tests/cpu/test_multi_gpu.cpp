// The multi-device layer (cagra/multi_gpu.hpp) on the CPU backend: shards as logical parts of one
// machine. The merge against a sort of the union, filters cut to a shard's rows bit for bit, a
// sharded search equal to searching each shard by hand and merging, its recall against the single
// index at equal per-shard parameters, filters and global ids, the file set (round trip, a set
// mixed from two saves, a missing or damaged shard, the manifest given to cagra::load), and the
// errors of the layer (devices lists, shards that do not fit together).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <random>

#include <cagra/multi_gpu.hpp>

#include "core/multi_gpu/multi_gpu.hpp"
#include "test_data.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kK = 10;

index_params small_params() {
  index_params p;
  p.graph_degree = 32;
  p.intermediate_graph_degree = 64;
  return p;
}

struct answer {
  std::vector<uint32_t> ids;
  std::vector<float> dist;
};

template <typename Index>
answer run(const resources& res, const Index& idx, const host_matrix& q, uint32_t itopk,
           const row_filter& f = {}) {
  answer a{std::vector<uint32_t>(size_t(q.rows()) * kK), std::vector<float>(size_t(q.rows()) * kK)};
  search_params sp;
  sp.itopk_size = itopk;
  search(res, sp, idx, q, kK, {a.ids.data(), q.rows(), kK}, {a.dist.data(), q.rows(), kK}, f);
  return a;
}

double recall_of(const answer& a, const real_set& set) {
  return recall({a.ids.data(), set.queries.rows(), kK}, set.truth.as<uint32_t>(), kK);
}

TEST(MultiGpuMerge, EqualsSortingTheUnion) {
  std::mt19937 rng(7);
  const int64_t nq = 50;
  const uint32_t w = 12, k = 10;
  std::vector<std::vector<uint32_t>> ids(3, std::vector<uint32_t>(nq * w));
  std::vector<std::vector<float>> dist(3, std::vector<float>(nq * w));
  for (size_t s = 0; s < 3; ++s)
    for (int64_t q = 0; q < nq; ++q) {
      // Shard s holds ids s*1000 .. s*1000 + 999; a few lists end early (kInvalidId, +inf).
      const uint32_t valid = (q % 7 == int64_t(s)) ? 3 : w;
      std::vector<std::pair<float, uint32_t>> l;
      for (uint32_t j = 0; j < valid; ++j)
        l.push_back({float(rng() % 50), uint32_t(s * 1000 + rng() % 1000)});
      std::sort(l.begin(), l.end());
      l.erase(
          std::unique(l.begin(), l.end(), [](auto& a, auto& b) { return a.second == b.second; }),
          l.end());
      for (uint32_t j = 0; j < w; ++j) {
        ids[s][q * w + j] = j < l.size() ? l[j].second : kInvalidId;
        dist[s][q * w + j] = j < l.size() ? l[j].first : std::numeric_limits<float>::infinity();
      }
    }
  std::vector<matrix_view<const uint32_t>> iv;
  std::vector<matrix_view<const float>> dv;
  for (size_t s = 0; s < 3; ++s) {
    iv.push_back({ids[s].data(), nq, w});
    dv.push_back({dist[s].data(), nq, w});
  }
  std::vector<uint32_t> out(nq * k);
  std::vector<float> out_d(nq * k);
  merge_topk(iv, dv, k, {out.data(), nq, k}, {out_d.data(), nq, k});
  for (int64_t q = 0; q < nq; ++q) {
    std::vector<std::pair<float, uint32_t>> all;
    for (size_t s = 0; s < 3; ++s)
      for (uint32_t j = 0; j < w; ++j)
        if (ids[s][q * w + j] != kInvalidId) all.push_back({dist[s][q * w + j], ids[s][q * w + j]});
    std::sort(all.begin(), all.end());
    for (uint32_t j = 0; j < k; ++j) {
      ASSERT_EQ(out[q * k + j], all[j].second) << "query " << q << " slot " << j;
      ASSERT_EQ(out_d[q * k + j], all[j].first);
    }
  }
  // Fewer candidates than k: the rest is kInvalidId / +inf; distances may be skipped.
  std::vector<uint32_t> one_id = {5, kInvalidId};
  std::vector<float> one_d = {1.f, std::numeric_limits<float>::infinity()};
  std::vector<uint32_t> o(3);
  merge_topk({{one_id.data(), 1, 2}}, {{one_d.data(), 1, 2}}, 3, {o.data(), 1, 3}, {});
  EXPECT_EQ(o, (std::vector<uint32_t>{5, kInvalidId, kInvalidId}));
  EXPECT_THROW(merge_topk({{one_id.data(), 1, 2}}, {}, 3, {o.data(), 1, 3}, {}), error);
}

TEST(MultiGpuFilter, SliceRowsKeepsEveryBit) {
  const int64_t rows = 1000, nq = 3;
  std::mt19937 rng(3);
  std::vector<uint32_t> words(size_t(nq * row_filter::words_for(rows)));
  for (auto& w : words) w = rng();
  const row_filter per_query = row_filter::per_query(words.data(), nq, rows);
  const row_filter shared = row_filter::shared(words.data(), rows);
  for (const row_filter& f : {shared, per_query})
    for (int64_t first : {0, 1, 31, 32, 33, 500, 999})
      for (int64_t count : {int64_t{1}, int64_t{31}, int64_t{32}, int64_t{65}, rows - first}) {
        if (first + count > rows) continue;
        std::vector<uint32_t> storage;
        const row_filter s = core::slice_rows(f, first, count, storage);
        ASSERT_EQ(s.rows, count);
        ASSERT_EQ(s.queries, f.queries);
        for (int64_t q = 0; q < (f.queries ? nq : 1); ++q) {
          for (int64_t r = 0; r < count; ++r)
            ASSERT_EQ(s.allows(q, r), f.allows(q, first + r))
                << "first " << first << " count " << count << " row " << r;
          // Bits past the slice's rows are clear (a bitset's padding).
          const uint32_t last = storage[size_t((q + 1) * row_filter::words_for(count) - 1)];
          if (count & 31) {
            ASSERT_EQ(last >> (count & 31), 0u);
          }
        }
      }
}

class ShardedCpu : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    set_ = new real_set(bigann10k());
    single_ = new index(build(cpu(), small_params(), set_->base));
    sharded_ = new sharded_index(build_sharded(cpu(), small_params(), set_->base, 3));
  }
  static void TearDownTestSuite() {
    delete sharded_;
    delete single_;
    delete set_;
  }
  static inline real_set* set_ = nullptr;
  static inline index* single_ = nullptr;
  static inline sharded_index* sharded_ = nullptr;
};

TEST_F(ShardedCpu, ShardsAreContiguousEqualRanges) {
  const sharded_index& sh = *sharded_;
  ASSERT_EQ(sh.shard_count(), 3u);
  EXPECT_EQ(sh.size(), set_->base.rows());
  EXPECT_EQ(sh.dim(), 128u);
  EXPECT_EQ(sh.graph_degree(), 32u);
  EXPECT_EQ(sh.storage_dtype(), dtype::u8);
  EXPECT_EQ(sh.shard_offset(0), 0);
  EXPECT_EQ(sh.shard_offset(1), 3300);
  EXPECT_EQ(sh.shard_offset(2), 6600);
  EXPECT_EQ(sh.shard(2).size(), 3300);
  EXPECT_EQ(sh.shard_of(0), 0u);
  EXPECT_EQ(sh.shard_of(3299), 0u);
  EXPECT_EQ(sh.shard_of(3300), 1u);
  EXPECT_EQ(sh.shard_of(9899), 2u);
  EXPECT_THROW(sh.shard_of(9900), error);
  // Shard 1 is the index of rows 3300 .. 6599 built alone (the same build, bit for bit).
  const index alone = build(cpu(), small_params(), slice(set_->base, 3300, 3300));
  ASSERT_EQ(alone.size(), sh.shard(1).size());
  EXPECT_TRUE(std::equal(alone.graph().data, alone.graph().data + alone.graph().size(),
                         sh.shard(1).graph().data));
}

TEST_F(ShardedCpu, SearchIsTheMergeOfTheShardsWithGlobalIds) {
  const sharded_index& sh = *sharded_;
  const host_matrix& q = set_->queries;
  const answer got = run(cpu(), sh, q, 64);
  std::vector<std::vector<uint32_t>> ids;
  std::vector<std::vector<float>> dist;
  for (size_t s = 0; s < sh.shard_count(); ++s) {
    answer a = run(cpu(), sh.shard(s), q, 64);
    for (uint32_t& id : a.ids)
      if (id != kInvalidId) id += uint32_t(sh.shard_offset(s));
    ids.push_back(a.ids);
    dist.push_back(a.dist);
  }
  std::vector<matrix_view<const uint32_t>> iv;
  std::vector<matrix_view<const float>> dv;
  for (size_t s = 0; s < ids.size(); ++s) {
    iv.push_back({ids[s].data(), q.rows(), kK});
    dv.push_back({dist[s].data(), q.rows(), kK});
  }
  answer want{std::vector<uint32_t>(q.rows() * kK), std::vector<float>(q.rows() * kK)};
  merge_topk(iv, dv, kK, {want.ids.data(), q.rows(), kK}, {want.dist.data(), q.rows(), kK});
  EXPECT_EQ(got.ids, want.ids);
  EXPECT_EQ(got.dist, want.dist);
  // Global ids: the distances are those of the global rows.
  const uint8_t* x = static_cast<const uint8_t*>(set_->base.data());
  const uint8_t* qq = static_cast<const uint8_t*>(q.data());
  for (int64_t i = 0; i < q.rows(); i += 9) {
    int64_t d = 0;
    const uint32_t id = got.ids[i * kK];
    for (int j = 0; j < 128; ++j) {
      const int64_t t = int64_t(qq[i * 128 + j]) - int64_t(x[int64_t(id) * 128 + j]);
      d += t * t;
    }
    EXPECT_EQ(float(d), got.dist[i * kK]) << "query " << i;
  }
}

TEST_F(ShardedCpu, RecallAtLeastTheSingleIndexAtEqualParameters) {
  for (uint32_t itopk : {16u, 32u, 64u}) {
    const double one = recall_of(run(cpu(), *single_, set_->queries, itopk), *set_);
    const double three = recall_of(run(cpu(), *sharded_, set_->queries, itopk), *set_);
    std::printf("itopk %u: recall@10 single %.4f, 3 shards %.4f\n", itopk, one, three);
    EXPECT_GE(three, one) << "itopk " << itopk;
  }
}

TEST_F(ShardedCpu, DeviceListsDoNotChangeTheAnswer) {
  // On the CPU backend devices only place shards; shards on "more devices" give the same bytes.
  resources many = cpu();
  many.devices = {0, 1, 2, 3};
  const answer a = run(cpu(), *sharded_, set_->queries, 32);
  const answer b = run(many, *sharded_, set_->queries, 32);
  EXPECT_EQ(a.ids, b.ids);
  const sharded_index again = build_sharded(many, small_params(), set_->base, 3);
  for (size_t s = 0; s < 3; ++s)
    EXPECT_TRUE(std::equal(again.shard(s).graph().data,
                           again.shard(s).graph().data + again.shard(s).graph().size(),
                           sharded_->shard(s).graph().data));
  // A replicated search on the CPU is the plain search.
  const answer c = run(many, *single_, set_->queries, 32);
  const answer d = run(cpu(), *single_, set_->queries, 32);
  EXPECT_EQ(c.ids, d.ids);
}

TEST_F(ShardedCpu, FilterCoversTheGlobalRows) {
  for (double share : {0.3, 0.02}) {
    const row_bitset allowed = random_subset(sharded_->size(), share, 11);
    const answer a = run(cpu(), *sharded_, set_->queries, 64, allowed.view());
    int64_t valid = 0;
    for (uint32_t id : a.ids) {
      if (id == kInvalidId) continue;
      ++valid;
      ASSERT_LT(id, uint32_t(sharded_->size()));
      ASSERT_TRUE(allowed.test(id)) << "row " << id << " is not allowed";
    }
    EXPECT_EQ(valid, int64_t(a.ids.size())) << "share " << share;
  }
  // Per-query bitsets: query q may return only rows r with r % 100 == q % 100 (99 rows each).
  const int64_t nq = set_->queries.rows(), words = row_filter::words_for(sharded_->size());
  std::vector<uint32_t> w(size_t(nq * words), 0u);
  for (int64_t q = 0; q < nq; ++q)
    for (int64_t r = q % 100; r < sharded_->size(); r += 100)
      w[q * words + (r >> 5)] |= 1u << (r & 31);
  const answer a = run(cpu(), *sharded_, set_->queries, 64,
                       row_filter::per_query(w.data(), nq, sharded_->size()));
  for (int64_t q = 0; q < nq; ++q)
    for (uint32_t j = 0; j < kK; ++j) ASSERT_EQ(a.ids[q * kK + j] % 100, uint32_t(q % 100));
}

TEST_F(ShardedCpu, FileSetRoundTripAndItsChecks) {
  const std::string path = temp_path("sh.cagra");
  save(*sharded_, path);
  EXPECT_TRUE(is_sharded_file(path));
  EXPECT_FALSE(is_sharded_file(path + ".shard-0-of-3"));
  EXPECT_FALSE(is_sharded_file(temp_path("missing")));
  const sharded_index back = load_sharded(path);
  ASSERT_EQ(back.shard_count(), 3u);
  EXPECT_EQ(run(cpu(), back, set_->queries, 32).ids, run(cpu(), *sharded_, set_->queries, 32).ids);
  // Each shard file is an ordinary index file.
  EXPECT_EQ(load(path + ".shard-2-of-3").size(), 3300);
  // The manifest is not an index: cagra::load says what it is.
  try {
    (void)load(path);
    ADD_FAILURE() << "cagra::load read a manifest";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("load_sharded"), std::string::npos) << e.what();
  }
  // A single index is not a manifest.
  const std::string single = temp_path("single.cagra");
  save(*single_, single);
  EXPECT_THROW((void)load_sharded(single), error);

  // A set mixed from two saves: shard 1 from another build (another degree: at this size the
  // kNN graph is exact, so another seed would give the same bytes).
  const std::string other = temp_path("other.cagra");
  index_params p = small_params();
  p.graph_degree = 24;
  save(build_sharded(cpu(), p, set_->base, 3), other);
  const std::vector<uint8_t> good = read_bytes(path + ".shard-1-of-3");
  write_bytes(path + ".shard-1-of-3", read_bytes(other + ".shard-1-of-3"));
  try {
    (void)load_sharded(path);
    ADD_FAILURE() << "a mixed set loaded";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("not the one the manifest names"), std::string::npos)
        << e.what();
  }
  // A missing shard file.
  std::remove((path + ".shard-1-of-3").c_str());
  EXPECT_THROW((void)load_sharded(path), error);
  write_bytes(path + ".shard-1-of-3", good);
  EXPECT_NO_THROW((void)load_sharded(path));

  // Damaged manifests: every one is refused with a cagra::error.
  const std::string text(reinterpret_cast<const char*>(read_bytes(path).data()),
                         read_bytes(path).size());
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"CAGRASHD 1", "CAGRASHD 7"},
      {"shards 3", "shards 0"},
      {"shards 3", "shards 99999"},
      {"rows 9900", "rows 9901"},
      {"shard 1 rows", "shard 2 rows"},
      {"file sh.cagra.shard-0-of-3", "file ../x"},
      {"end\n", ""},
      {"checksum ", "checksum z"}};
  for (const auto& [from, to] : edits) {
    std::string t = text;
    const size_t at = t.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    const std::string bad = temp_path("bad.cagra");
    write_bytes(bad, std::vector<uint8_t>(t.begin(), t.end()));  // beside the shard files
    EXPECT_THROW((void)load_sharded(bad), error) << from << " -> " << to;
  }
}

TEST(MultiGpuErrors, DevicesAndShards) {
  resources r;
  r.devices = {0, -1};
  EXPECT_THROW((void)devices_of(r), error);
  r.devices = {1, 2, 1};
  EXPECT_THROW((void)devices_of(r), error);
  r.devices = {};
  r.device = 3;
  EXPECT_EQ(devices_of(r), std::vector<int>{3});

  // Shards that do not fit together.
  std::vector<index> two;
  two.push_back(ring_index());
  two.push_back(ring_index());
  EXPECT_NO_THROW(sharded_index{std::move(two)});
  EXPECT_THROW(sharded_index{std::vector<index>{}}, error);
  std::vector<index> labeled;
  labeled.push_back(ring_index());
  std::vector<int64_t> labels(20);
  for (int i = 0; i < 20; ++i) labels[i] = 100 + i;
  labeled[0].set_labels(labels);
  EXPECT_THROW(sharded_index{std::move(labeled)}, error);

  // More shards than rows; a shard too small for the graph degree names the shard.
  const host_matrix tiny = head(bigann10k().base, 40);
  EXPECT_THROW((void)build_sharded(cpu(), small_params(), tiny, 41), error);
  try {
    (void)build_sharded(cpu(), small_params(), tiny, 4);
    ADD_FAILURE() << "10-row shards built at degree 32";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("shard 0 of 4"), std::string::npos) << e.what();
  }
  // Queries of the wrong dimension, and device memory.
  const sharded_index sh = build_sharded(cpu(), small_params(), head(bigann10k().base, 600), 2);
  std::vector<float> q(10 * 64);
  std::vector<uint32_t> ids(10 * kK);
  EXPECT_THROW(search(cpu(), {}, sh, matrix_view<const float>{q.data(), 10, 64}, kK,
                      {ids.data(), 10, kK}, {}),
               error);
  // Device views: the CPU backend cannot read them; mixed spaces are refused on any backend.
  std::vector<uint8_t> q8(10 * 128);
  const dataset_view on_device(q8.data(), dtype::u8, 10, 128, memory_space::device);
  try {
    search(cpu(), {}, sh, on_device, kK, {ids.data(), 10, kK, memory_space::device}, {});
    ADD_FAILURE() << "device views searched on the CPU";
  } catch (const error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA backend"), std::string::npos) << e.what();
  }
  EXPECT_THROW(search(cpu(), {}, sh, on_device, kK, {ids.data(), 10, kK}, {}), error);
}

}  // namespace
}  // namespace cagra::test
