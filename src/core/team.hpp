#pragma once
// A parallel region of a given size that is no region at all for one thread.

#include <omp.h>

namespace cagra::core {

/** Runs body() on `team` threads (at least one). body holds orphaned `omp for` loops (and
 *  `omp critical` sections to combine per-thread results): inside the region they share the
 *  iterations among the team; for a team of one, body runs on the caller's thread with no
 *  region, and each loop runs whole there. libgomp sets up a team even for one thread, ~1,200
 *  instructions a call: a few percent of a batch-1 walk, paid on every call of the CPU's
 *  latency-bound paths (bench/results/logs/cpu-no-one-thread-region-dev-2core.txt).
 *  Not when the caller is itself a thread of an active team (its own `omp parallel`, each
 *  thread searching its queries): there an orphaned `omp for` binds to the caller's team and
 *  hands each thread a share of loops it never sees, so body gets a region of its own
 *  (test Threads.OneThreadCallsFromInsideACallersParallelRegion).
 *  Size `team` by the work (core::threads_for_elements): a team wider than its work is worse
 *  than idle, since libgomp ends the threads a narrower team after it leaves out. */
template <typename Body>
void run_team(int team, Body&& body) {
  if (team <= 1 && !omp_in_parallel()) {
    body();
    return;
  }
#pragma omp parallel num_threads(team > 1 ? team : 1)
  body();
}

}  // namespace cagra::core
