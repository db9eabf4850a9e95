// The multi-device layer's plumbing: one host thread per device task, and filters cut to a shard's
// rows or a replica's queries (core/multi_gpu/multi_gpu.hpp).
#include <algorithm>
#include <exception>
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

void run_tasks(size_t n, bool parallel, const std::function<void(size_t)>& task) {
  if (!parallel || n <= 1) {
    for (size_t i = 0; i < n; ++i) task(i);
    return;
  }
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        task(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
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
