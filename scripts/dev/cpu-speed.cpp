// How fast is this host core right now? A batch-1 call's host side (the work before the post,
// the merge of the lists) is CPU work, and on the GPU machines (KVM guests) a process's rate falls
// into levels that the host's time before the post follows (scripts/dev/device-batch1-levels.sh).
// This times, on the calling thread, a chain of dependent integer multiply-adds (the core's clock:
// ~4 cycles a step) and a chase of dependent loads over 64 MiB (memory latency: the uncore and
// where the memory lies), so that the level can be set beside the core's speed at that moment.
//
//   g++ -O2 -o /tmp/cpu-speed scripts/dev/cpu-speed.cpp && /tmp/cpu-speed
//   -> "chain_ns S chase_ns L" (ns a step)
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <random>
#include <vector>

int main() {
  using C = std::chrono::steady_clock;
  const int steps = 50000000;
  uint64_t x = 1;
  auto t0 = C::now();
  for (int i = 0; i < steps; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  const double chain = std::chrono::duration<double, std::nano>(C::now() - t0).count() / steps;
  // One random cycle over 8M slots (64 MiB): every load waits on the one before.
  const uint32_t n = 1u << 23;
  std::vector<uint32_t> order(n), next(n);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin() + 1, order.end(), std::mt19937(7));
  for (uint32_t i = 0; i < n; ++i) next[order[i]] = order[(i + 1) % n];
  const int loads = 2000000;
  uint32_t at = 0;
  t0 = C::now();
  for (int i = 0; i < loads; ++i) at = next[at];
  const double chase = std::chrono::duration<double, std::nano>(C::now() - t0).count() / loads;
  std::printf("chain_ns %.3f chase_ns %.1f%s\n", chain, chase, (x == 3 && at == 5) ? " " : "");
  return 0;
}
