// The host's part of the batch-1 latency path, on the CPU alone (a measurement for the logs, in
// bench/: nothing asserted but the answer's order; `cagra_cuda_bench
// --gtest_filter=CudaLatencyHost*`, no GPU needed): merge_host_lists on random lists, and on the
// CPU model's CTA lists of real queries with their lines cached and flushed.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/search/host_lists.hpp"
#include "latency_data.hpp"

namespace cagra::test {
namespace {

using clk = std::chrono::steady_clock;

// The host's part of a latency-path call after the CTAs' lists have landed: merging the lists
// (merge_host_lists, which reads an entry only while it can enter), for 64 CTAs x 10 entries
// (the automatic batch-1 shape at k = 10) and 16 x 10, on lists already in the cache. It sits
// on the critical path of every batch-1 call; this is its floor on this host's CPU.
TEST(CudaLatencyHost, HostMerge) {
  for (uint32_t n_lists : {16u, 64u}) {
    const uint32_t list_k = 10, k = 10, tag = 7;
    std::mt19937 rng(1);
    std::vector<uint64_t> words(size_t{n_lists} * list_k * 2);
    for (uint32_t l = 0, id = 0; l < n_lists; ++l) {
      std::vector<float> d(list_k);
      for (float& x : d) x = std::uniform_real_distribution<float>(1e3f, 1e5f)(rng);
      std::sort(d.begin(), d.end());
      for (uint32_t j = 0; j < list_k; ++j, ++id) {
        uint32_t bits = 0;
        std::memcpy(&bits, &d[j], sizeof bits);
        words[2 * (size_t{l} * list_k + j)] = id | uint64_t{tag} << 32;
        words[2 * (size_t{l} * list_k + j) + 1] = bits | uint64_t{tag} << 32;
      }
    }
    std::vector<uint32_t> ids(k);
    std::vector<float> dist(k);
    const int reps = 100000;
    const double merge = mean_us(reps, [&] {
      ASSERT_TRUE(cuda::merge_host_lists(words.data(), n_lists, list_k, k, tag, nullptr, ids.data(),
                                         dist.data()));
    });
    std::printf("[ latency  ] host merge of %u lists x %u: %.3f us\n", n_lists, list_k, merge);
    EXPECT_TRUE(std::is_sorted(dist.begin(), dist.end()));
  }
}

/** The host merge of real CTA lists: CAGRA_HOST_MERGE_LISTS names files of `multi_cta_sim
 *  --lists` (the CPU model's CTA lists of each query, the kernel's shape), separated by commas.
 *  Per file: the mean merge of a query's lists with their lines in the host's cache (merged
 *  once before), and with every line flushed first (as lines the device has just written: each
 *  one a miss). */
TEST(CudaLatencyHost, HostMergeRealLists) {
  const char* files = std::getenv("CAGRA_HOST_MERGE_LISTS");
  if (files == nullptr) GTEST_SKIP() << "CAGRA_HOST_MERGE_LISTS names multi_cta_sim --lists files";
  std::string rest = files;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string path = rest.substr(0, comma);
    rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
    std::FILE* f = std::fopen(path.c_str(), "rb");
    ASSERT_NE(f, nullptr) << path;
    double warm = 0, cold = 0;
    uint32_t queries = 0, n_lists = 0, k = 0;
    std::vector<uint64_t> words;
    std::vector<uint32_t> ids;
    std::vector<float> dist;
    for (uint32_t head[2]; std::fread(head, sizeof head, 1, f) == 1; ++queries) {
      n_lists = head[0];
      k = head[1];
      const uint32_t tag = queries + 1;
      words.resize(size_t{n_lists} * k * 2);
      for (size_t e = 0; e < size_t{n_lists} * k; ++e) {
        uint32_t pair[2];  // distance bits, id
        ASSERT_EQ(std::fread(pair, sizeof pair, 1, f), 1u) << path;
        words[2 * e] = pair[1] | uint64_t{tag} << 32;
        words[2 * e + 1] = pair[0] | uint64_t{tag} << 32;
      }
      ids.resize(k);
      dist.resize(k);
      const auto merge_us = [&] {
        const auto t0 = clk::now();
        EXPECT_TRUE(cuda::merge_host_lists(words.data(), n_lists, k, k, tag, nullptr, ids.data(),
                                           dist.data()));
        return std::chrono::duration<double, std::micro>(clk::now() - t0).count();
      };
      merge_us();
      warm += merge_us();
#if defined(__x86_64__)
      for (size_t b = 0; b < words.size() * 8; b += 64)
        __builtin_ia32_clflush(reinterpret_cast<const char*>(words.data()) + b);
      __builtin_ia32_mfence();
#endif
      cold += merge_us();
      EXPECT_TRUE(std::is_sorted(dist.begin(), dist.end()));
    }
    std::fclose(f);
    ASSERT_GT(queries, 0u) << path;
    std::printf(
        "[ latency  ] host merge of real lists (%s: %u queries, %u lists x %u): %.3f us with the "
        "lines cached, %.3f us with every line flushed first\n",
        path.c_str(), queries, n_lists, k, warm / queries, cold / queries);
  }
}

}  // namespace
}  // namespace cagra::test
