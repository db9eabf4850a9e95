// One warp's sorted list of 32 entries (cuda/primitives/warp_list.cuh), merged on the device
// (testing::warp_list_merge) against a sort on the host: merge_list keeps the 32 nearest of the
// list and the candidates; merge_head, the multi-CTA kernel's last merge, keeps its first `head`
// exact, sorting only the candidates that can enter them (1 to 32 of them: sorts of 2 to 32
// lanes). Ties in distance (ordered by id, the parent flag ignored), empty entries and kNoId
// candidates are covered. Needs a GPU: label `cuda`.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/backend.hpp"
#include "cuda/testing.hpp"

namespace cagra::test {
namespace {

constexpr uint32_t kNoId = 0xFFFFFFFFu, kFlag = 0x80000000u, kMask = 0x7FFFFFFFu;
const float kFar = std::numeric_limits<float>::infinity();

struct entry {
  float d;
  uint32_t id;
};
bool key_less(const entry& a, const entry& b) {
  return a.d < b.d || (a.d == b.d && (a.id & kMask) < (b.id & kMask));
}

/** A case: a sorted list of `filled` entries (some flagged as parents) and n candidates, all
 *  distinct ids; `near` of the candidates drawn below the list's head so that they enter. */
struct merge_case {
  std::vector<float> list_d = std::vector<float>(32, kFar);
  std::vector<uint32_t> list_i = std::vector<uint32_t>(32, kNoId);
  std::vector<float> cand_d;
  std::vector<uint32_t> cand_i;
};

merge_case make_case(std::mt19937& rng, uint32_t filled, uint32_t n, uint32_t near, bool ties) {
  merge_case c;
  std::vector<uint32_t> ids(filled + n);
  for (uint32_t i = 0; i < ids.size(); ++i) ids[i] = 7 * i + 3;
  std::shuffle(ids.begin(), ids.end(), rng);
  // Ties: distances from a few values, so that many keys differ by id alone.
  const auto draw = [&](float lo, float hi) {
    const float v = std::uniform_real_distribution<float>(lo, hi)(rng);
    return ties ? float(int(v / 8.0f)) * 8.0f : v;
  };
  std::vector<entry> list(filled);
  for (uint32_t i = 0; i < filled; ++i) list[i] = {draw(100.0f, 1000.0f), ids[i]};
  std::sort(list.begin(), list.end(), key_less);
  for (uint32_t i = 0; i < filled; ++i) {
    c.list_d[i] = list[i].d;
    c.list_i[i] = list[i].id | (rng() % 3 == 0 ? kFlag : 0u);
  }
  for (uint32_t s = 0; s < n; ++s) {
    c.cand_i.push_back(rng() % 11 == 0 ? kNoId : ids[filled + s]);
    c.cand_d.push_back(s < near ? draw(50.0f, 200.0f) : draw(150.0f, 1200.0f));
  }
  std::shuffle(c.cand_d.begin(), c.cand_d.end(), rng);
  return c;
}

/** The first `head` entries of the union, sorted on the host. */
std::vector<entry> expected_head(const merge_case& c, uint32_t head) {
  std::vector<entry> all;
  for (uint32_t i = 0; i < 32; ++i)
    if (c.list_i[i] != kNoId) all.push_back({c.list_d[i], c.list_i[i]});
  for (size_t s = 0; s < c.cand_i.size(); ++s) {
    const uint32_t id = c.cand_i[s];
    if (id == kNoId) continue;
    all.push_back({c.cand_d[s], id});
  }
  std::sort(all.begin(), all.end(), key_less);
  all.resize(std::min<size_t>(all.size(), head));
  return all;
}

void check_merge(const merge_case& c, uint32_t head) {
  std::vector<float> d = c.list_d;
  std::vector<uint32_t> i = c.list_i;
  cuda::testing::warp_list_merge(d.data(), i.data(), c.cand_d.data(), c.cand_i.data(),
                                 uint32_t(c.cand_i.size()), head);
  const std::vector<entry> want = expected_head(c, head == 0 ? 32 : head);
  for (size_t e = 0; e < want.size(); ++e) {
    ASSERT_EQ(d[e], want[e].d) << "head " << head << " entry " << e;
    ASSERT_EQ(i[e] & kMask, want[e].id & kMask) << "head " << head << " entry " << e;
  }
  for (size_t e = want.size(); e < (head == 0 ? 32u : head); ++e)
    ASSERT_EQ(i[e], kNoId) << "head " << head << " entry " << e << ": not empty";
}

TEST(CudaWarpList, HeadMergeKeepsTheNearestAsTheFullMerge) {
  ASSERT_GT(cuda::device_count(), 0) << "no CUDA device: the cuda tests need a GPU";
  std::mt19937 rng(5);
  // Candidates that enter the head: none, a few (single insertions), many (a whole round).
  for (const uint32_t near : {0u, 1u, 3u, 6u, 7u, 20u, 64u})
    for (const uint32_t n : {0u, 1u, 31u, 32u, 33u, 64u, 96u})
      for (const uint32_t filled : {32u, 20u, 0u})
        for (const bool ties : {false, true}) {
          const merge_case c = make_case(rng, filled, n, std::min(near, n), ties);
          for (const uint32_t head : {0u, 1u, 10u, 16u, 32u}) check_merge(c, head);
        }
}

}  // namespace
}  // namespace cagra::test
