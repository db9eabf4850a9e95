// The host's side of the batch-1 latency path, without a GPU: merging the CTAs' tagged lists
// (cuda::merge_host_lists: a row taken once, entries taken as they arrive and only while they can
// enter; the stamp traced calls take) and the persistent kernel's job words
// (cuda::write_job_words). Label `cuda` with the other CUDA tests; none of these needs a device.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cagra/types.hpp"
#include "cuda/search/host_lists.hpp"
#include "cuda/search/persistent.hpp"

namespace cagra::test {
namespace {

// The host's merge of the CTAs' lists takes a row once, also when it comes in two lists with two
// distances (a pool row whose claim was not waited for, under cosine: the scan's distance and the
// walk's may differ in the last bit).
TEST(CudaHostLists, MergeTakesARowOnce) {
  const uint32_t list_k = 3, k = 4, tag = 9;
  const auto list = [&](std::vector<uint64_t>& w,
                        std::initializer_list<std::pair<uint32_t, float>> e) {
    for (const auto& [id, d] : e) {
      uint32_t bits = 0;
      std::memcpy(&bits, &d, sizeof bits);
      w.push_back(id | uint64_t{tag} << 32);
      w.push_back(bits | uint64_t{tag} << 32);
    }
  };
  std::vector<uint64_t> words;
  list(words, {{5, 1.0f}, {7, 2.0f}, {8, 4.0f}});
  list(words, {{3, 0.5f}, {5, 1.0000001f}, {9, 3.0f}});
  list(words, {{7, 2.0f}, {5, 2.5f}, {kInvalidId, 1e30f}});
  std::vector<uint32_t> ids(k);
  std::vector<float> dist(k);
  ASSERT_TRUE(
      cuda::merge_host_lists(words.data(), 3, list_k, k, tag, nullptr, ids.data(), dist.data()));
  EXPECT_EQ(ids, (std::vector<uint32_t>{3, 5, 7, 9}));
  EXPECT_EQ(dist, (std::vector<float>{0.5f, 1.0f, 2.0f, 3.0f}));
}

// The host takes a list's entries as they arrive and does not wait for those that cannot enter
// its top k: here the first list's second entry (tagged with an earlier call's number) never
// arrives, and the merge must end without it (it would wait, then ask the stream, otherwise).
TEST(CudaHostLists, MergeWaitsOnlyForEntriesThatCanEnter) {
  const uint32_t list_k = 2, k = 2, tag = 9;
  const auto entry = [](std::vector<uint64_t>& w, uint32_t id, float d, uint32_t t) {
    uint32_t bits = 0;
    std::memcpy(&bits, &d, sizeof bits);
    w.push_back(id | uint64_t{t} << 32);
    w.push_back(bits | uint64_t{t} << 32);
  };
  std::vector<uint64_t> words;
  entry(words, 3, 0.7f, tag);  // list 0: taken first, then pushed out by list 1
  entry(words, 4, 0.8f, tag - 1);
  entry(words, 1, 0.5f, tag);  // list 1
  entry(words, 2, 0.6f, tag);
  std::vector<uint32_t> ids(k);
  uint64_t heads_seen = 0;  // traced calls: when every list's first entry had been taken
  const uint64_t before = cuda::steady_ns();
  ASSERT_TRUE(cuda::merge_host_lists(words.data(), 2, list_k, k, tag, nullptr, ids.data(), nullptr,
                                     nullptr, &heads_seen));
  EXPECT_EQ(ids, (std::vector<uint32_t>{1, 2}));
  EXPECT_GE(heads_seen, before);
}

// Against a sort of all the lists' entries: many lists of sorted, disjoint entries (a few ids
// in two lists with the same distance, as the pool's unwaited claims give), some lists short
// (padded with kInvalidId), k below and at the list length; unfiltered and under a bitset.
TEST(CudaHostLists, MergeMatchesASortOfAllLists) {
  std::mt19937 rng(7);
  for (const uint32_t n_lists : {1u, 16u, 64u, 128u}) {
    for (const uint32_t k : {1u, 4u, 10u}) {
      const uint32_t list_k = 10, tag = 3;
      std::vector<uint64_t> words;
      std::vector<std::pair<float, uint32_t>> all;
      for (uint32_t l = 0; l < n_lists; ++l) {
        std::vector<std::pair<float, uint32_t>> list;
        const uint32_t len = rng() % 4 == 0 ? rng() % list_k : list_k;
        for (uint32_t j = 0; j < len; ++j) {
          // Ids in [0, 600): a repeated id takes the distance it first had (one row, one
          // distance); otherwise a coarse grid of distances, so that ties occur.
          const uint32_t id = rng() % 600;
          float d = float(rng() % 2000);
          for (const auto& e : all)
            if (e.second == id) d = e.first;
          bool dup = false;
          for (const auto& e : list) dup |= e.second == id;
          if (dup) continue;
          list.emplace_back(d, id);
          all.emplace_back(d, id);
        }
        std::sort(list.begin(), list.end());
        for (uint32_t j = 0; j < list_k; ++j) {
          const auto [d, id] = j < list.size() ? list[j] : std::pair{1e30f, kInvalidId};
          uint32_t bits = 0;
          std::memcpy(&bits, &d, sizeof bits);
          words.push_back(id | uint64_t{tag} << 32);
          words.push_back(bits | uint64_t{tag} << 32);
        }
      }
      std::sort(all.begin(), all.end());
      all.erase(std::unique(all.begin(), all.end()), all.end());
      // Unfiltered, then with the rows of a bitset only (filter_in_merge): 90% of the ids, then
      // 10%, the expected answer the sorted entries whose rows it allows.
      for (const uint32_t allowed_share : {100u, 90u, 10u}) {
        std::vector<uint32_t> allowed((600 + 31) / 32, 0);
        std::vector<std::pair<float, uint32_t>> expected;
        for (uint32_t id = 0; id < 600; ++id)
          if (rng() % 100 < allowed_share) allowed[id >> 5] |= 1u << (id & 31);
        for (const auto& e : all)
          if ((allowed[e.second >> 5] >> (e.second & 31)) & 1u) expected.push_back(e);
        std::vector<uint32_t> ids(k);
        std::vector<float> dist(k);
        ASSERT_TRUE(cuda::merge_host_lists(words.data(), n_lists, list_k, k, tag, nullptr,
                                           ids.data(), dist.data(),
                                           allowed_share == 100 ? nullptr : allowed.data()));
        for (uint32_t i = 0; i < k; ++i) {
          const bool found = i < expected.size();
          EXPECT_EQ(ids[i], found ? expected[i].second : kInvalidId)
              << n_lists << " lists, k " << k << ", " << allowed_share << "% allowed";
          if (found) {
            EXPECT_EQ(dist[i], expected[i].first) << n_lists << " lists, k " << k;
          }
        }
      }
    }
  }
}

// The persistent kernel's job words carry every byte of the query (a tail of 1-3 bytes
// zero-padded), the seed state and the query's norm, each tagged with the job's seq.
TEST(CudaHostLists, JobWordsCarryTheQueryAndItsState) {
  const uint32_t seq = 0xA5A5A5A5u;
  const uint64_t state = 0x0123456789ABCDEFull;
  const int32_t norm = -123456;
  for (const size_t q_bytes : {size_t{128}, size_t{129}, size_t{130}, size_t{131}, size_t{3}}) {
    std::vector<uint8_t> q(q_bytes);
    for (size_t i = 0; i < q_bytes; ++i) q[i] = static_cast<uint8_t>(7 * i + 1);
    const size_t n = (q_bytes + 3) / 4 + 3;
    std::vector<uint64_t> words(n + 1, ~0ull);
    cuda::write_job_words(words.data(), q.data(), q_bytes, state, norm, seq);
    std::vector<uint8_t> back(4 * (n - 3));
    for (size_t w = 0; w < n; ++w) {
      EXPECT_EQ(uint32_t(words[w] >> 32), seq) << q_bytes << " bytes, word " << w;
      const uint32_t v = uint32_t(words[w]);
      if (w < n - 3) std::memcpy(back.data() + 4 * w, &v, 4);
    }
    for (size_t i = 0; i < back.size(); ++i)
      EXPECT_EQ(back[i], i < q_bytes ? q[i] : 0) << q_bytes << " bytes, byte " << i;
    EXPECT_EQ(uint32_t(words[n - 3]) | uint64_t(uint32_t(words[n - 2])) << 32, state);
    EXPECT_EQ(int32_t(uint32_t(words[n - 1])), norm);
    EXPECT_EQ(words[n], ~0ull) << "nothing written past the job";
  }
}

// |q|^2 of a byte query, the integer the kernel's byte distances start from: u8 elements
// unsigned, i8 signed.
TEST(CudaHostLists, ByteQueryNormReadsTheElementType) {
  const std::vector<uint8_t> q = {0, 1, 2, 255, 128, 127};
  EXPECT_EQ(cuda::byte_query_norm(dtype::u8, q.data(), q.size()),
            0 + 1 + 4 + 255 * 255 + 128 * 128 + 127 * 127);
  EXPECT_EQ(cuda::byte_query_norm(dtype::i8, q.data(), q.size()),
            0 + 1 + 4 + 1 + 128 * 128 + 127 * 127);
}

}  // namespace
}  // namespace cagra::test
