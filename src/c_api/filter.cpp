// The C interface's filters (include/cagra/c_api.h): a cagra_filter_t seen as a row_filter, and
// the registry of shared bitsets that callers promise not to change (cagra_filter_register),
// which hands the search their count and a stamp (docs/filter.md, "Stamps"): cagra_filter_t
// has no room for either, and fields appended to it would be read uninitialized from callers
// that fill it field by field.
#include <atomic>
#include <mutex>
#include <unordered_map>

#include "c_api/support.hpp"

namespace cagra::c_api {
namespace {

struct registered {
  int64_t rows = 0;
  int64_t allowed_rows = 0;
  uint64_t stamp = 0;
};

/** The registered bitsets by their words; `entries` counts them, so that a search with none
 *  registered takes no lock. */
struct filter_registry {
  std::mutex mutex;
  std::unordered_map<const uint32_t*, registered> by_words;
  std::atomic<size_t> entries{0};
};

filter_registry& registry() {
  static filter_registry r;
  return r;
}

/** Rows a bitset of `rows` rows allows (bits past the last row ignored). */
int64_t count_allowed(const uint32_t* words, int64_t rows) {
  int64_t count = 0;
  const int64_t full = rows / 32;
  for (int64_t w = 0; w < full; ++w) count += __builtin_popcount(words[w]);
  if (rows % 32) count += __builtin_popcount(words[full] & ((1u << (rows % 32)) - 1u));
  return count;
}

}  // namespace

row_filter to_row_filter(const cagra_filter_t* f, const char* function) {
  if (f == nullptr || f->words == nullptr) return {};
  require(f->rows >= 0 && f->queries >= 0, function,
          "filter->rows and filter->queries must be >= 0");
  filter_registry& r = registry();
  if (f->queries == 0 && r.entries.load(std::memory_order_relaxed) > 0) {
    std::lock_guard<std::mutex> lock(r.mutex);
    const auto it = r.by_words.find(f->words);
    if (it != r.by_words.end() && it->second.rows == f->rows)
      return row_filter::shared(f->words, f->rows, it->second.allowed_rows, it->second.stamp);
  }
  return {f->words, f->rows, f->queries, memory_space::host};
}

}  // namespace cagra::c_api

using namespace cagra::c_api;

extern "C" {

int64_t cagra_filter_words(int64_t rows) {
  return rows <= 0 ? 0 : cagra::row_filter::words_for(rows);
}

cagra_status_t cagra_filter_register(const cagra_filter_t* filter) {
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    const char* f = "cagra_filter_register";
    require(filter != nullptr && filter->words != nullptr, f, "filter or filter->words is NULL");
    require(filter->rows > 0, f, "filter->rows must be > 0");
    require(filter->queries == 0, f,
            "only a shared bitset (filter->queries = 0) is registered: a search reads per-query "
            "bitsets whole anyway");
    const registered entry{filter->rows, count_allowed(filter->words, filter->rows),
                           cagra::row_filter::new_stamp()};
    filter_registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.by_words[filter->words] = entry;
    r.entries.store(r.by_words.size(), std::memory_order_relaxed);
  });
}

cagra_status_t cagra_filter_unregister(const uint32_t* words) {
  return guarded(CAGRA_ERROR_INVALID_ARGUMENT, [&] {
    require(words != nullptr, "cagra_filter_unregister", "words is NULL");
    filter_registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.by_words.erase(words);
    r.entries.store(r.by_words.size(), std::memory_order_relaxed);
  });
}

}  // extern "C"
