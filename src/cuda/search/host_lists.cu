// The host's half of the multi-CTA latency path (search.cu): waiting for words that the kernel
// writes to mapped pinned memory tagged with the call's number, and merging the CTAs' lists
// that arrive that way into a query's k nearest. Tagged 8-byte words (value | tag << 32) need no
// flag or fence: an aligned 8-byte store reaches the host whole (NCCL's LL protocol relies on
// the same), so a word that carries the call's tag carries the call's value.
#include "cuda/search/host_lists.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "cagra/types.hpp"
#include "cuda/check.hpp"

namespace cagra::cuda {
namespace {

/** The end of the run of words from `done` on that carry `tag`, read afresh (a compiler barrier
 *  first: the words change under the loop). On x86 two words a 16-byte aligned load (an aligned
 *  SSE load reads each 8-byte half whole, as a word-sized load does; a pair read half old, half
 *  new shows the old tag and is read again on the next pass): the scan of a 64-CTA call's 1,280
 *  words is most of the host's merge otherwise (CudaLatencyHost.HostMerge). */
size_t tagged_end(const volatile uint64_t* tagged, size_t done, size_t n, uint32_t tag) {
  asm volatile("" ::: "memory");
#if defined(__SSE2__)
  const uint64_t* w = const_cast<const uint64_t*>(tagged);
  if (done < n && (reinterpret_cast<uintptr_t>(w + done) & 15) != 0) {
    if (uint32_t(tagged[done] >> 32) != tag) return done;
    ++done;
  }
  const __m128i high = _mm_set_epi32(-1, 0, -1, 0);  // the tags: the high half of each word
  const __m128i want = _mm_set_epi32(static_cast<int>(tag), 0, static_cast<int>(tag), 0);
  for (; done + 2 <= n; done += 2) {
    const __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(w + done));
    if (_mm_movemask_epi8(_mm_cmpeq_epi32(_mm_and_si128(v, high), want)) != 0xFFFF) break;
  }
#endif
  while (done < n && uint32_t(tagged[done] >> 32) == tag) ++done;
  return done;
}

/** True once `stream` has finished (false while it runs); throws the error of a failed one. */
bool stream_finished(cudaStream_t stream) {
  const cudaError_t e = cudaStreamQuery(stream);
  if (e == cudaErrorNotReady) return false;
  CAGRA_CUDA_TRY(e);
  return true;
}

}  // namespace

/** Waits until every word of tagged[0, n) carries `tag` (the kernel writes each result as one
 *  8-byte word), spinning on mapped memory: no stream synchronize on the latency path. Every
 *  4096 polls (a few microseconds) it asks the stream, so that a failed launch or a kernel fault
 *  is reported instead of waited on forever. Returns false when the stream finished without
 *  every word tagged. */
bool wait_for_tagged(const volatile uint64_t* tagged, size_t n, uint32_t tag, cudaStream_t stream) {
  size_t done = 0;  // words [0, done) carry the tag (each is written once per call)
  for (uint32_t poll = 1;; ++poll) {
    done = tagged_end(tagged, done, n, tag);
    if (done == n) break;
    if (poll % 4096 == 0 && stream_finished(stream)) {
      done = tagged_end(tagged, done, n, tag);
      if (done < n) return false;
      break;
    }
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  return true;
}

namespace {

/** A list entry on the host: (distance, id), ordered as the kernel orders its lists. */
struct host_entry {
  float d;
  uint32_t id;
  bool operator<(const host_entry& o) const { return d < o.d || (d == o.d && id < o.id); }
};

/** Takes list entries into best[0, count) (at most k, sorted) from entry `next` on, while they
 *  have arrived (both words tagged) and can still enter. Returns the entry to look at next time,
 *  or list_k once the list is done: its entries from there on cannot enter (it is sorted, so the
 *  rest is farther) or there are none; entries that cannot enter are not waited for. The host reads
 * an entry only when the one before it entered: reading mapped memory that the device wrote is a
 * cache miss each line (~100 ns on the hosts of H200 machines, overlapped a few at a time), and
 * most of the 64 lists of a batch-1 call give no entry or one, so waiting for whole lists read
 * ~2.5x the lines. */
uint32_t take_entries(const volatile uint64_t* list, uint32_t next, uint32_t list_k, uint32_t tag,
                      uint32_t k, host_entry* best, uint32_t& count) {
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

/** Waits for one query's n_lists lists of list_k entries in `words` (two words each, id and
 *  distance bits, | tag << 32; each list sorted by (distance, id), the lists disjoint) and
 *  merges them into its k nearest (fewer found: padded with kInvalidId, +inf). Entries are
 *  taken as they arrive, while the host waits for the others (take_entries: a list is read only
 *  while its entries can still enter). Asks the stream every 4096 passes, as wait_for_tagged
 *  does; returns false as it does. */
bool merge_host_lists(const uint64_t* words, uint32_t n_lists, uint32_t list_k, uint32_t k,
                      uint32_t tag, cudaStream_t stream, uint32_t* ids, float* distances) {
  thread_local std::vector<host_entry> best;
  thread_local std::vector<uint32_t> pending, next;  // lists not done; their next entries
  best.resize(k);
  pending.resize(n_lists);
  next.assign(n_lists, 0);
  for (uint32_t l = 0; l < n_lists; ++l) pending[l] = l;
  const size_t list_words = size_t{2} * list_k;
  const volatile uint64_t* all = words;
  uint32_t count = 0, n_pending = n_lists;
  for (uint32_t pass = 1; n_pending > 0; ++pass) {
    asm volatile("" ::: "memory");
    for (uint32_t i = 0; i < n_pending;) {
      const uint32_t l = pending[i];
      next[l] = take_entries(all + l * list_words, next[l], list_k, tag, k, best.data(), count);
      if (next[l] < list_k) {
        ++i;
        continue;
      }
      pending[i] = pending[--n_pending];
    }
    // Finished: whatever has not arrived now never will (if all has, the next pass takes it).
    if (n_pending > 0 && pass % 4096 == 0 && stream_finished(stream))
      for (uint32_t i = 0; i < n_pending; ++i) {
        const uint32_t l = pending[i];
        next[l] = take_entries(all + l * list_words, next[l], list_k, tag, k, best.data(), count);
        if (next[l] < list_k) return false;
      }
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  for (uint32_t i = 0; i < k; ++i) {
    ids[i] = i < count ? best[i].id : kInvalidId;
    if (distances) distances[i] = i < count ? best[i].d : std::numeric_limits<float>::infinity();
  }
  return true;
}

}  // namespace cagra::cuda
