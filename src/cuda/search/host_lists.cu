// The host's half of the multi-CTA latency path (search.cu): merging the CTAs' lists, which
// the kernel writes to mapped pinned memory as words tagged with the call's number, into a
// query's k nearest as they arrive. Tagged 8-byte words (value | tag << 32) need no
// flag or fence: an aligned 8-byte store reaches the host whole (NCCL's LL protocol relies on
// the same), so a word that carries the call's tag carries the call's value.
#include "cuda/search/host_lists.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "cagra/types.hpp"
#include "cuda/check.hpp"

namespace cagra::cuda {
namespace {

/** True once `stream` has finished (false while it runs); throws the error of a failed one. */
bool stream_finished(cudaStream_t stream) {
  const cudaError_t e = cudaStreamQuery(stream);
  if (e == cudaErrorNotReady) return false;
  CAGRA_CUDA_TRY(e);
  return true;
}

/** A list entry on the host: (distance, id), ordered as the kernel orders its lists. */
struct host_entry {
  float d;
  uint32_t id;
  bool operator<(const host_entry& o) const { return d < o.d || (d == o.d && id < o.id); }
};

/** Takes list entries into best[0, count) (at most k, sorted) from entry `next` on, while they
 *  have arrived (both words tagged) and can still enter. Returns the entry to look at next time,
 *  or list_k once the list is done: its entries from there on cannot enter (it is sorted, so
 *  the rest is farther) or there are none; entries that cannot enter are not waited for. An
 *  entry is read only when the one before it entered: each line of mapped memory the device
 *  wrote is a cache miss on the host, and most of a batch-1 call's 64 lists give no entry or
 *  one (reading whole lists, ~2.5x the lines, was slower: docs/cuda.md). */
uint32_t take_entries(const volatile uint64_t* list, uint32_t next, uint32_t list_k, uint32_t tag,
                      uint32_t k, const uint32_t* allowed, host_entry* best, uint32_t& count) {
  const auto entry = [&](uint32_t j) {
    host_entry e{0.0f, static_cast<uint32_t>(list[2 * j])};
    const uint32_t bits = static_cast<uint32_t>(list[2 * j + 1]);
    std::memcpy(&e.d, &bits, sizeof bits);
    return e;
  };
  // The entry before (taken, its line read): where it no longer makes the top k, nor does the
  // rest, arrived or not.
  if (next > 0 && count == k && !(entry(next - 1) < best[k - 1])) return list_k;
  for (uint32_t j = next; j < list_k; ++j) {
    if (uint32_t(list[2 * j] >> 32) != tag || uint32_t(list[2 * j + 1] >> 32) != tag) return j;
    const host_entry e = entry(j);
    if (e.id == kInvalidId || (count == k && !(e < best[k - 1]))) return list_k;
    if (allowed && !((allowed[e.id >> 5] >> (e.id & 31)) & 1u)) continue;  // filter_in_merge
    // Never twice. The lists are nearly always disjoint, but a CTA's initial nodes from the pool
    // are claimed without waiting (pool_claim), so a row may come in two lists, and with two
    // distances where the scan's arithmetic differs from the walk's (cosine): matched by id.
    if (std::any_of(best, best + count, [&](const host_entry& b) { return b.id == e.id; }))
      continue;
    const uint32_t pos = static_cast<uint32_t>(std::upper_bound(best, best + count, e) - best);
    if (count < k) ++count;
    std::copy_backward(best + pos, best + count - 1, best + count);
    best[pos] = e;
  }
  return list_k;
}

}  // namespace

uint64_t steady_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

/** Waits for one query's n_lists lists of list_k entries in `words` (two words each, id and
 *  distance bits, | tag << 32; each list sorted by (distance, id), the lists disjoint) and
 *  merges them into its k nearest (fewer found: padded with kInvalidId, +inf). Entries are
 *  taken as they arrive, while the host waits for the others (take_entries: a list is read only
 *  while its entries can still enter). Every 4096 passes (a few microseconds) it asks the
 *  stream, so that a failed launch or a kernel fault is reported instead of waited on forever;
 *  false when the stream finished without every list arrived. */
bool merge_host_lists(const uint64_t* words, uint32_t n_lists, uint32_t list_k, uint32_t k,
                      uint32_t tag, cudaStream_t stream, uint32_t* ids, float* distances,
                      const uint32_t* allowed, uint64_t* heads_seen_ns) {
  thread_local std::vector<host_entry> best;
  thread_local std::vector<uint32_t> pending, next;  // lists not done; their next entries
  best.resize(k);
  pending.resize(n_lists);
  next.assign(n_lists, 0);
  for (uint32_t l = 0; l < n_lists; ++l) pending[l] = l;
  uint32_t count = 0, n_pending = n_lists;
  // List l's entries, from its next one on; true once it is done. The words are read volatile
  // (they change under the loop) and each carries its tag: no fence is needed.
  uint32_t heads = 0;  // lists whose first entry has been taken (or that are done)
  const auto take = [&](uint32_t l) {
    const volatile uint64_t* list = words + size_t{l} * 2 * list_k;
    const bool fresh = next[l] == 0;
    next[l] = take_entries(list, next[l], list_k, tag, k, allowed, best.data(), count);
    if (heads_seen_ns && fresh && next[l] != 0 && ++heads == n_lists) *heads_seen_ns = steady_ns();
    return next[l] == list_k;
  };
  // One list after another, each read as its entries arrive. Prefetching every pending list's
  // next line each pass and taking all heads before later entries (3.5x faster on a CPU with
  // every line flushed) was slower on the GPU machine: 0.3 us more from the last head to the
  // merged list, 1.9 us a cached merge of 64 lists against 1.0, ~4% fewer QPS in one binary
  // (docs/cuda.md, "The poll's phase, a relay CTA, two pollers, and the host merge on the GPU").
  for (uint32_t pass = 1; n_pending > 0; ++pass) {
    for (uint32_t i = 0; i < n_pending;) {
      if (take(pending[i]))
        pending[i] = pending[--n_pending];
      else
        ++i;
    }
    // Finished: whatever has not arrived now never will (if all has, the next pass takes it).
    if (n_pending > 0 && pass % 4096 == 0 && stream_finished(stream))
      for (uint32_t i = 0; i < n_pending; ++i)
        if (!take(pending[i])) return false;
  }
  for (uint32_t i = 0; i < k; ++i) {
    ids[i] = i < count ? best[i].id : kInvalidId;
    if (distances) distances[i] = i < count ? best[i].d : std::numeric_limits<float>::infinity();
  }
  return true;
}

}  // namespace cagra::cuda
