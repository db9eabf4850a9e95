// The multi-device layer's plumbing: one host thread per device task, and filters cut to a shard's
// rows or a replica's queries (core/multi_gpu/multi_gpu.hpp).
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "core/filter.hpp"
#include "core/multi_gpu/multi_gpu.hpp"

namespace cagra {

std::vector<int> devices_of(const resources& res) {
  if (res.devices.empty()) return {res.device};
  for (size_t i = 0; i < res.devices.size(); ++i) {
    CAGRA_EXPECTS(res.devices[i] >= 0, "resources::devices holds a negative device ordinal (%d)",
                  res.devices[i]);
    for (size_t j = 0; j < i; ++j)
      CAGRA_EXPECTS(res.devices[j] != res.devices[i],
                    "resources::devices lists device %d twice (a device is used once; shards "
                    "share a device when there are more shards than devices)",
                    res.devices[i]);
  }
  return res.devices;
}

namespace core {

namespace {

/** Host threads that outlive the calls: a device's task runs on a thread that ran such tasks
 *  before, so its OpenMP team and its verified thread count (core/threads.cpp) are kept. A
 *  thread made anew for every call paid both each time: about 5 ms a call with 32-thread teams
 *  (replicated batch-10K search on 4 H100s ran at a fifth of one GPU's rate). Workers are added
 *  when all are busy (concurrent callers) and never end: the pool is deliberately leaked, so that
 *  no worker is joined while the process exits. */
class worker_pool {
 public:
  void submit(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
    if (idle_ == 0) {
      std::thread([this] { work(); }).detach();
    } else {
      --idle_;
      cv_.notify_one();
    }
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [this] { return !jobs_.empty(); });
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
      if (jobs_.empty())
        ++idle_;  // else: take the next job without waiting
      else
        continue;
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  size_t idle_ = 0;  // workers waiting, not yet promised a job
};

worker_pool& pool() {
  static worker_pool* p = new worker_pool;  // never destroyed (see worker_pool)
  return *p;
}

}  // namespace

void run_tasks(size_t n, bool parallel, const std::function<void(size_t)>& task) {
  if (!parallel || n <= 1) {
    for (size_t i = 0; i < n; ++i) task(i);
    return;
  }
  std::vector<std::exception_ptr> errors(n);
  std::mutex mu;
  std::condition_variable done;
  size_t left = n - 1;
  for (size_t i = 1; i < n; ++i)
    pool().submit([&, i] {
      try {
        task(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu);
      if (--left == 0) done.notify_one();
    });
  try {  // task 0 on the calling thread, which keeps its own OpenMP team
    task(0);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    done.wait(lock, [&] { return left == 0; });
  }
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

resources single_device(const resources& res, int device, int threads) {
  resources r = res;
  r.devices.clear();
  r.device = device;
  r.num_threads = threads;
  return r;
}

row_filter slice_rows(const row_filter& f, int64_t first, int64_t rows,
                      std::vector<uint32_t>& storage) {
  const int64_t in_words = row_filter::words_for(f.rows), out_words = row_filter::words_for(rows);
  const int64_t sets = f.queries ? f.queries : 1;
  storage.assign(size_t(sets * out_words), 0u);
  for (int64_t q = 0; q < sets; ++q) {
    const uint32_t* in = f.words + q * in_words;
    uint32_t* out = storage.data() + q * out_words;
    const int64_t shift = first & 31, base = first >> 5;
    for (int64_t w = 0; w < out_words; ++w) {
      // Bits [first + 32w, first + 32w + 32): the high part of word base + w, then the low part
      // of the next one (which may lie past the bitset: the rows past the end are cut below).
      uint64_t v = in[base + w] >> shift;
      if (shift && base + w + 1 < in_words) v |= uint64_t{in[base + w + 1]} << (32 - shift);
      out[w] = uint32_t(v);
    }
    if (rows & 31) out[out_words - 1] &= (1u << (rows & 31)) - 1u;
  }
  return f.queries ? row_filter::per_query(storage.data(), f.queries, rows)
                   : row_filter::shared(storage.data(), rows);
}

row_filter slice_queries(const row_filter& f, int64_t first, int64_t count) {
  if (f.empty() || f.queries == 0) return f;
  return row_filter::per_query(f.words + first * row_filter::words_for(f.rows), count, f.rows);
}

}  // namespace core
}  // namespace cagra
