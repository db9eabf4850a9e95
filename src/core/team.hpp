#pragma once
// A parallel region of a given size that is no region at all for one thread.

namespace cagra::core {

/** Runs body() on `team` threads (at least one). body holds orphaned `omp for` loops (and
 *  `omp critical` sections to combine per-thread results): inside the region they share the
 *  iterations among the team; for a team of one, body runs on the caller's thread with no
 *  region, and each loop runs whole there. libgomp sets up a team even for one thread, ~1,200
 *  instructions a call: a few percent of a batch-1 walk, paid on every call of the CPU's
 *  latency-bound paths (bench/results/logs/cpu-no-one-thread-region-dev-2core.txt).
 *  Size `team` by the work (core::threads_for_elements): a team wider than its work is worse
 *  than idle, since libgomp ends the threads a narrower team after it leaves out. */
template <typename Body>
void run_team(int team, Body&& body) {
  if (team <= 1) {
    body();
    return;
  }
#pragma omp parallel num_threads(team)
  body();
}

}  // namespace cagra::core
