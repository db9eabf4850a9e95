// How many host threads a call runs on: the one rule behind resources::num_threads, used by every
// entry point (the C++ API, the CLI's --threads, Python's num_threads) through core::host_threads
// before any OpenMP parallel region starts.
//
// Two failures are kept out of OpenMP's hands. An absurd request (65,536 threads, 2^31 - 1) is
// clamped to a few times the hardware threads: the results of every stage do not depend on the
// thread count, so a clamp changes nothing but the overhead. And a team the system cannot start
// (a pids or thread limit, or no address space for the stacks) is found before the parallel
// region by starting that many threads ourselves: libgomp's answer to a failed pthread_create is
// to print "Thread creation failed" and exit the process, which in Python kills the interpreter.
#include <omp.h>
#include <pthread.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include <cagra/cagra.hpp>

#include "core/backend.hpp"

namespace cagra {
namespace {

constexpr int kThreadsPerHardwareThread = 4;
constexpr int kMaxThreads = 1024;

// The hardware threads this process may run on (its CPU affinity mask), read once by each
// calling thread: omp_get_num_procs() asks the kernel every time (sched_getaffinity, ~0.26 us
// on the development machine), and a search call resolved its threads up to three times.
int hardware_threads() {
  thread_local const int hw = std::max(1, omp_get_num_procs());
  return hw;
}

// The stack size libgomp gives its threads: OMP_STACKSIZE or GOMP_STACKSIZE ("512M", "4096":
// kilobytes by default, B/K/M/G suffixes), parsed as libgomp does; 0 = the pthread default.
size_t omp_stack_size() {
  for (const char* name : {"OMP_STACKSIZE", "GOMP_STACKSIZE"}) {
    const char* s = std::getenv(name);
    if (s == nullptr) continue;
    while (std::isspace(static_cast<unsigned char>(*s))) ++s;
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(s, &end, 10);
    if (end == s || errno != 0) return 0;  // libgomp ignores an invalid value too
    while (std::isspace(static_cast<unsigned char>(*end))) ++end;
    unsigned shift = 10;
    switch (std::tolower(static_cast<unsigned char>(*end))) {
      case '\0': break;
      case 'b': shift = 0, ++end; break;
      case 'k': shift = 10, ++end; break;
      case 'm': shift = 20, ++end; break;
      case 'g': shift = 30, ++end; break;
      default: return 0;
    }
    while (std::isspace(static_cast<unsigned char>(*end))) ++end;
    if (*end != '\0' || v > (~0ull >> shift)) return 0;
    return static_cast<size_t>(v << shift);
  }
  return 0;
}

// Holds the probe's threads until all of them have been created, so that they coexist as an
// OpenMP team's would.
struct probe_gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
};

void* wait_at_gate(void* arg) {
  auto* gate = static_cast<probe_gate*>(arg);
  std::unique_lock<std::mutex> lock(gate->mu);
  gate->cv.wait(lock, [gate] { return gate->open; });
  return nullptr;
}

// Starts `n` threads beside the caller the way libgomp starts a team's workers (the same stack
// size), lets them all exit, and returns how many could be started; *err is pthread_create's
// error when that is fewer than n.
int start_threads(int n, int* err) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (const size_t stack = omp_stack_size()) pthread_attr_setstacksize(&attr, stack);
  probe_gate gate;
  std::vector<pthread_t> started;
  started.reserve(static_cast<size_t>(n));
  *err = 0;
  for (int i = 0; i < n; ++i) {
    pthread_t t;
    *err = pthread_create(&t, &attr, wait_at_gate, &gate);
    if (*err != 0) break;
    started.push_back(t);
  }
  pthread_attr_destroy(&attr);
  {
    std::lock_guard<std::mutex> lock(gate.mu);
    gate.open = true;
  }
  gate.cv.notify_all();
  for (pthread_t t : started) pthread_join(t, nullptr);
  return static_cast<int>(started.size());
}

// The largest team this thread has been shown to start (a team's workers belong to the thread
// that starts it, so each caller thread checks for itself, once per new maximum).
thread_local int t_verified_team = 1;

}  // namespace

int max_threads() {
  const int hw = hardware_threads();
  return std::max(hw, std::min(kThreadsPerHardwareThread * hw, kMaxThreads));
}

int resolve_threads(int num_threads) {
  CAGRA_EXPECTS(num_threads >= 0,
                "num_threads must be >= 0 (0 = all hardware threads, or OMP_NUM_THREADS), got %d",
                num_threads);
  const int wanted = num_threads > 0 ? num_threads : omp_get_max_threads();
  const int team = std::max(1, std::min(wanted, max_threads()));
  if (team <= t_verified_team) return team;
  // All team - 1 workers are started anew, although libgomp may still hold idle workers of an
  // earlier team of this thread: those count against the same limits, so this errs on the side
  // of a smaller team, never of a team libgomp cannot complete.
  int err = 0;
  const int started = start_threads(team - 1, &err);
  t_verified_team = std::max(t_verified_team, started + 1);
  if (started == team - 1) return team;
  // The default count shrinks to what the system allows; an explicit count is the caller's
  // choice, so it is an error with the number that would work.
  if (num_threads == 0) return t_verified_team;
  CAGRA_FAIL(
      "cannot start %d threads: the system refused thread %d (%s); use at most %d "
      "(resources::num_threads, --threads, num_threads=)",
      team, started + 2, std::strerror(err), t_verified_team);
}

namespace core {

int host_threads(int requested) { return resolve_threads(requested); }

int threads_for_elements(int threads, int64_t elements) {
  constexpr int64_t kElementsPerThread = int64_t{1} << 15;
  const int64_t wanted =
      (std::max<int64_t>(elements, 0) + kElementsPerThread - 1) / kElementsPerThread;
  return static_cast<int>(std::clamp<int64_t>(wanted, 1, std::max(threads, 1)));
}

}  // namespace core
}  // namespace cagra
