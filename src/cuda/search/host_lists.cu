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
    if (poll % 4096 == 0) {
      const cudaError_t e = cudaStreamQuery(stream);
      if (e == cudaSuccess) {
        done = tagged_end(tagged, done, n, tag);
        if (done < n) return false;
        break;
      }
      if (e != cudaErrorNotReady) CAGRA_CUDA_TRY(e);
    }
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  return true;
}

/** Waits for one query's n_lists lists of list_k entries in `words` (two words each, id and
 *  distance bits, | tag << 32; each list sorted by (distance, id), the lists disjoint) and
 *  merges them into its k nearest (fewer found: padded with kInvalidId, +inf). A list is read
 *  only while its entries can still enter the top k. Returns false as wait_for_tagged does. */
bool merge_host_lists(const uint64_t* words, uint32_t n_lists, uint32_t list_k, uint32_t k,
                      uint32_t tag, cudaStream_t stream, uint32_t* ids, float* distances) {
  if (!wait_for_tagged(words, size_t{n_lists} * list_k * 2, tag, stream)) return false;
  struct entry {
    float d;
    uint32_t id;
    bool operator<(const entry& o) const { return d < o.d || (d == o.d && id < o.id); }
  };
  thread_local std::vector<entry> best;
  best.resize(k);
  uint32_t count = 0;
  for (uint32_t l = 0; l < n_lists; ++l)
    for (uint32_t j = 0; j < list_k; ++j) {
      const uint64_t* w = words + 2 * (size_t{l} * list_k + j);
      entry e{0.0f, static_cast<uint32_t>(w[0])};
      const uint32_t bits = static_cast<uint32_t>(w[1]);
      std::memcpy(&e.d, &bits, sizeof bits);
      if (e.id == kInvalidId || (count == k && !(e < best[k - 1]))) break;  // the rest is farther
      const uint32_t pos = static_cast<uint32_t>(
          std::upper_bound(best.begin(), best.begin() + count, e) - best.begin());
      if (pos > 0 && best[pos - 1].id == e.id)
        continue;  // not expected (disjoint lists); never twice
      if (count < k) ++count;
      std::copy_backward(best.begin() + pos, best.begin() + count - 1, best.begin() + count);
      best[pos] = e;
    }
  for (uint32_t i = 0; i < k; ++i) {
    ids[i] = i < count ? best[i].id : kInvalidId;
    if (distances) distances[i] = i < count ? best[i].d : std::numeric_limits<float>::infinity();
  }
  return true;
}

}  // namespace cagra::cuda
