// Does OpenMP start threads again when a call alternates a wide team and a narrower one? libgomp
// does: a team narrower than the one before ends the pool's threads it leaves out, and the next
// wide team starts them anew. A batch-1 search that checked its query on 16 threads and walked
// on 5 made and ended 11 threads a query (core::threads_for_elements, docs/benchmarks.md "The
// CPU's latency path"). This alternates a team of WIDE threads and one of NARROW, ROUNDS times,
// and counts the distinct thread ids the wide teams ran on: WIDE of them when the pool is kept.
//
//   g++ -O2 -fopenmp -o /tmp/omp-team-churn scripts/dev/omp-team-churn.cpp
//   /tmp/omp-team-churn 16 5      -> "wide 16 narrow 5: ... us a round, N distinct thread ids"
//   (on the 2-core development machine: 4 / 2 gave 4,002 ids in 2,000 rounds, 4 / 4 and 2 / 1 gave
//   4 and 2: a team of one thread does not touch the pool)
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

#include <omp.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: omp-team-churn WIDE NARROW [ROUNDS]\n");
    return 2;
  }
  const int wide = std::atoi(argv[1]), narrow = std::atoi(argv[2]);
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 2000;
  std::set<long> ids;
  std::mutex m;
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r) {
#pragma omp parallel num_threads(wide)
    {
      const long id = syscall(SYS_gettid);
      const std::lock_guard<std::mutex> hold(m);
      ids.insert(id);
    }
    volatile double sink = 0;
#pragma omp parallel num_threads(narrow)
    for (int i = 0; i < 20000; ++i) sink = sink + 1;
  }
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wide %d narrow %d: %.1f us a round, %zu distinct thread ids\n", wide, narrow,
              us / rounds, ids.size());
  return 0;
}
