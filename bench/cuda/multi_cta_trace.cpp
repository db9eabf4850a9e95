// The multi-CTA kernel's trace stamps read on the host (multi_cta_trace.hpp).
#include "multi_cta_trace.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include "cuda/backend.hpp"
#include "cuda/testing.hpp"

namespace cagra::test {

#if CAGRA_MCTA_TRACE
using clk = std::chrono::steady_clock;

trace_summary summarize(const std::vector<std::vector<uint64_t>>& calls, uint32_t n_ctas) {
  constexpr uint32_t S = cuda::kMultiCtaTraceSlots;
  trace_summary m;
  double iter_sum = 0, claim_n = 0;
  uint64_t iter_n = 0;
  const auto us = [](uint64_t a, uint64_t b) { return b > a ? (b - a) * 1e-3 : 0.0; };
  for (const std::vector<uint64_t>& t : calls) {
    uint64_t t0 = ~0ull, published = 0, counted = 0, merged = 0;
    for (uint32_t c = 0; c < n_ctas; ++c) {
      const uint64_t* r = t.data() + size_t{c} * S;
      t0 = std::min(t0, r[cuda::kTraceStart]);
      published = std::max(published, r[cuda::kTracePublished]);
      counted = std::max(counted, r[cuda::kTraceCounted]);
      merged = std::max(merged, r[cuda::kTraceEnd]);
      m.query_copy += us(r[cuda::kTraceStart], r[cuda::kTraceQueryCopied]);
      m.query_convert += us(r[cuda::kTraceQueryCopied], r[cuda::kTraceQueryReady]);
      m.init += us(r[cuda::kTraceQueryReady], r[cuda::kTraceInitDone]);
      m.pick += us(r[cuda::kTraceInitDone], r[cuda::kTracePicked0]);
      if (r[cuda::kTraceClaimed0]) {
        m.claim += us(r[cuda::kTracePicked0], r[cuda::kTraceClaimed0]);
        ++claim_n;
      }
      m.iteration0 += us(r[cuda::kTraceInitDone], r[cuda::kTraceIteration0]);
      for (uint32_t i = cuda::kTraceIteration0 + 1; i < cuda::kTracePublished && r[i] != 0;
           ++i, ++iter_n)
        iter_sum += us(r[i - 1], r[i]);
    }
    m.published += us(t0, published);
    if (counted) {  // the last CTA merged (not with the host merge)
      m.counted += us(published, counted);
      m.merged += us(counted, merged);
    }
    m.span += us(t0, std::max(published, merged));
  }
  const double n = double(calls.size()), nc = n * n_ctas;
  m.query_copy /= nc;
  m.query_convert /= nc;
  m.init /= nc;
  m.pick /= nc;
  m.claim = claim_n ? m.claim / claim_n : 0;
  m.iteration0 /= nc;
  m.iteration = iter_n ? iter_sum / iter_n : 0;
  m.published /= n;
  m.counted /= n;
  m.merged /= n;
  m.span /= n;
  return m;
}

/** The persistent kernel's call taken apart: per query the host's time around cuda::search
 *  (steady clock; the GPU's globaltimer is not on the host's clock closely enough to set the two
 *  against each other) and the CTAs' stamps: CTA 0's poll that found the job (one
 *  PCIe round trip), the other CTAs' start after CTA 0 (the relay through L2), the body from
 *  CTA 0's start to the last list written. The trace buffer is zeroed and read on a second
 *  stream while the kernel waits between queries. */
void trace_persistent(const std::string& label, const cagra::index& idx,
                      const std::vector<host_matrix>& q1, const search_plan& plan,
                      uint64_t* d_trace, size_t trace_words, uint32_t* ids, float* dist) {
  constexpr uint32_t S = cuda::kMultiCtaTraceSlots;
  const uint32_t ctas = plan.ctas_per_query, n_q = uint32_t(q1.size());
  cudaStream_t side;
  ASSERT_EQ(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking), cudaSuccess);
  uint64_t* h = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&h), trace_words * 8), cudaSuccess);
  cuda::testing::set_multi_cta_trace(d_trace);  // a new plan key: the kernel starts again, traced
  std::vector<std::vector<uint64_t>> calls;
  double total = 0, rtt = 0, relay = 0, relay_max = 0, body = 0;
  double cta_span = 0, cta_span_max = 0, head = 0, tail = 0, clear = 0, issue = 0, barrier = 0;
  double before_post = 0, round_trip = 0, after_merge = 0;  // the host's side (steady clock)
  double heads_to_merged = 0;          // every list's first entry taken, to the lists merged
  double to_entry = 0, to_seeded = 0;  // before_post's parts: to persistent_search, to the post
  double scan = 0, scan_clocks = 0;    // with a pool: the query ready to the slice scanned
  double steps[10] = {};  // before_post in steps: kHostStepNames, to persistent_search, the seed
  // Warp 0's steps: pick_parent at iteration 0 and the last merge (SM clocks), the last
  // iteration to that merge done, the last merge's candidates and those that can enter.
  double pick_clocks = 0, merge_clocks = 0, to_merged = 0, last_cands = 0, last_can_enter = 0;
  double same_code[6] = {0, 0, 0, 0, 0, 0}, head_clocks = 0;
  const auto steady_ns = [] {
    return double(
        std::chrono::duration_cast<std::chrono::nanoseconds>(clk::now().time_since_epoch())
            .count());
  };
  uint32_t n = 0;
  for (uint32_t i = 0; i < n_q + 20; ++i) {
    ASSERT_EQ(cudaMemsetAsync(d_trace, 0, trace_words * 8, side), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(side), cudaSuccess);
    const double h0 = steady_ns();
    cuda::search(idx, q1[i % n_q], plan, ids, dist, 0);
    const double h1 = steady_ns(), us = (h1 - h0) * 1e-3;
    const cuda::testing::persistent_host_stamps hs = cuda::testing::persistent_stamps();
    ASSERT_EQ(cudaMemcpyAsync(h, d_trace, trace_words * 8, cudaMemcpyDeviceToHost, side),
              cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(side), cudaSuccess);
    if (i < 20) continue;  // the launch and warm-up
    const uint64_t* c0 = h;
    uint64_t published = 0;
    double rs = 0, rm = 0, sm = 0;
    for (uint32_t c = 0; c < ctas; ++c) {
      const uint64_t* r = h + size_t{c} * S;
      const double span = (r[cuda::kTracePublished] - r[cuda::kTraceStart]) * 1e-3;
      cta_span += span;
      sm = std::max(sm, span);
      head += (r[cuda::kTraceQueryReady] - r[cuda::kTraceStart]) * 1e-3;
      clear += (r[cuda::kTraceCleared] - r[cuda::kTraceStart]) * 1e-3;
      issue += (r[cuda::kTraceInitIssued] - r[cuda::kTraceCleared]) * 1e-3;
      barrier += (r[cuda::kTraceQueryCopied] - r[cuda::kTraceInitIssued]) * 1e-3;
      if (r[cuda::kTracePoolScanned]) {
        scan += (r[cuda::kTracePoolScanned] - r[cuda::kTraceQueryReady]) * 1e-3;
        scan_clocks += double(r[cuda::kTraceScanClocks]);
      }
      uint32_t last = cuda::kTraceIteration0;
      while (last + 1 < cuda::kTracePublished && r[last + 1] != 0) ++last;
      tail += (r[cuda::kTracePublished] - r[last]) * 1e-3;
      pick_clocks += double(r[cuda::kTracePickClocks]);
      for (uint32_t j = 0; j < 5; ++j) same_code[j] += double(r[cuda::kTracePickClocks1 + j]);
      head_clocks += double(r[cuda::kTraceHeadClocks]);
      merge_clocks += double(r[cuda::kTraceLastMergeClocks]);
      to_merged += (double(r[cuda::kTraceLastMerged]) - double(r[last])) * 1e-3;
      last_cands += double(r[cuda::kTraceLastCandidates] & 0xFFFFFFFFu);
      last_can_enter += double(r[cuda::kTraceLastCandidates] >> 32);
      published = std::max(published, r[cuda::kTracePublished]);
      const double d = r[cuda::kTraceStart] > c0[cuda::kTraceStart]
                           ? (r[cuda::kTraceStart] - c0[cuda::kTraceStart]) * 1e-3
                           : 0.0;
      rs += d;
      rm = std::max(rm, d);
    }
    total += us;
    before_post += (double(hs.posted) - h0) * 1e-3;
    to_entry += (double(hs.entered) - h0) * 1e-3;
    to_seeded += (double(hs.seeded) - double(hs.entered)) * 1e-3;
    {
      // h0, steps 0-4 (cuda::search), entered, steps 5-7 (persistent_search), seeded.
      const double at[11] = {h0,
                             double(hs.step[0]),
                             double(hs.step[1]),
                             double(hs.step[2]),
                             double(hs.step[3]),
                             double(hs.step[4]),
                             double(hs.entered),
                             double(hs.step[5]),
                             double(hs.step[6]),
                             double(hs.step[7]),
                             double(hs.seeded)};
      for (int j = 0; j < 10; ++j) steps[j] += (at[j + 1] - at[j]) * 1e-3;
    }
    round_trip += (double(hs.merged) - double(hs.posted)) * 1e-3;
    heads_to_merged += hs.heads_seen ? (double(hs.merged) - double(hs.heads_seen)) * 1e-3 : 0.0;
    after_merge += (h1 - double(hs.merged)) * 1e-3;
    rtt += (c0[cuda::kTraceStart] - c0[cuda::kTracePollIssued]) * 1e-3;
    relay += ctas > 1 ? rs / (ctas - 1) : 0;
    relay_max += rm;
    cta_span_max += sm;
    body += (published - c0[cuda::kTraceStart]) * 1e-3;
    calls.emplace_back(h, h + trace_words);
    ++n;
  }
  cuda::testing::set_multi_cta_trace(nullptr);
  const trace_summary t = summarize(calls, ctas);
  std::vector<uint32_t> on_sm;  // CTAs of the last call on each SM
  for (uint32_t c = 0; c < ctas; ++c) {
    const uint64_t sm = calls.back()[size_t{c} * S + cuda::kTraceSm];
    if (sm >= on_sm.size()) on_sm.resize(sm + 1, 0);
    ++on_sm[sm];
  }
  std::printf(
      "[ latency  ] %-22s the persistent CTAs on %zu SMs (at most %u on one; CTA 0 on SM "
      "%u)\n",
      label.c_str(),
      size_t(std::count_if(on_sm.begin(), on_sm.end(), [](uint32_t x) { return x > 0; })),
      *std::max_element(on_sm.begin(), on_sm.end()), uint32_t(calls.back()[cuda::kTraceSm]));
  std::printf(
      "[ latency  ] %-22s %-17s call %5.1f us = body %5.1f + outside %4.1f | CTA 0's finding "
      "poll %.2f, other CTAs start +%.2f (last +%.2f); a CTA's start to its list %.2f (slowest "
      "%.2f) = to the query ready %.2f (clear %.2f, initial nodes issued %.2f, barrier %.2f), "
      "init %.2f (pool scan %.2f, %.0f SM clocks), pick %.2f, claim %.2f, iteration0 %.2f, next "
      "%.2f each, last iteration to the list %.2f (to the last merge done %.2f) | warp 0: pick "
      "%.0f SM clocks at iteration 0, last merge %.0f clocks of %.1f candidates (%.1f can enter "
      "the list's head) | the host: before the post "
      "%.2f (to persistent_search %.2f, to the seed state %.2f, the post %.2f), post to lists "
      "merged %.2f (%.2f outside the body; the last list's first entry taken to merged %.2f), "
      "after %.2f; %u CTAs an SM\n",
      label.c_str(), "persistent traced", total / n, body / n, (total - body) / n, rtt / n,
      relay / n, relay_max / n, cta_span / (n * ctas), cta_span_max / n, head / (n * ctas),
      clear / (n * ctas), issue / (n * ctas), barrier / (n * ctas), t.init, scan / (n * ctas),
      scan_clocks / (n * ctas), t.pick, t.claim, t.iteration0, t.iteration, tail / (n * ctas),
      to_merged / (n * ctas), pick_clocks / (n * ctas), merge_clocks / (n * ctas),
      last_cands / (n * ctas), last_can_enter / (n * ctas), before_post / n, to_entry / n,
      to_seeded / n, (before_post - to_entry - to_seeded) / n, round_trip / n,
      (round_trip - body) / n, heads_to_merged / n, after_merge / n,
      cuda::testing::persistent_ctas_per_sm(idx));
  std::printf("[ latency  ] %-22s %-17s the host before the post (us):", label.c_str(),
              "persistent traced");
  for (int j = 0; j < 10; ++j)
    std::printf(" %s %.3f",
                j < 5    ? cuda::testing::kHostStepNames[j]
                : j == 5 ? "to persistent_search"
                : j < 9  ? cuda::testing::kHostStepNames[j - 1]
                         : "buffers and seed state",
                steps[j] / n);
  std::printf("\n");
  // The same code at iterations 0 and 1 (an instruction cache cold at a job's start shows as
  // iteration 0 costing more clocks than iteration 1 for the same work).
  std::printf(
      "[ latency  ] %-22s %-17s same code, iteration 0 / 1 (SM clocks): pick %.0f / %.0f, "
      "merge_list %.0f / %.0f, claims' barrier to distances' %.0f / %.0f; start to initial "
      "nodes issued %.0f\n",
      label.c_str(), "persistent traced", pick_clocks / (n * ctas), same_code[0] / (n * ctas),
      same_code[1] / (n * ctas), same_code[2] / (n * ctas), same_code[3] / (n * ctas),
      same_code[4] / (n * ctas), head_clocks / (n * ctas));
  cudaFreeHost(h);
  cudaStreamDestroy(side);
}
#endif

}  // namespace cagra::test
