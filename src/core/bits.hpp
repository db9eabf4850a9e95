// The arithmetic that the CPU backend and the CUDA kernels must compute identically, written
// once and compiled for the host and the device: the random streams (splitmix64, the query
// hashes that seed the initial nodes), the power-of-two helpers the plans size buffers with,
// the parent flag in an id's MSB, and the metric formulas. The promise that the single-CTA
// kernel and the GPU optimize equal the CPU bit for bit rests on this header, not on comments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include <cagra/types.hpp>

#if defined(__CUDACC__)
#define CAGRA_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define CAGRA_HOST_DEVICE inline
#endif

namespace cagra::bits {

/** Marks a top-list entry whose neighbors were expanded (paper §IV-B4); ids stay below 2^31. */
constexpr uint32_t kParentFlag = 0x80000000u;

/** splitmix64's finalizer: the one mixing step of every random stream in the library. */
CAGRA_HOST_DEVICE uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/** Home slot of node `id` in a visited hash of 2^bits slots (Fibonacci hashing), bits in
 *  [1, 32): the CPU's table and both GPU tables probe linearly from here. */
CAGRA_HOST_DEVICE uint32_t hash_home(uint32_t id, uint32_t bits) {
  return (id * 0x9E3779B1u) >> (32 - bits);
}

/** Random initial node t of CTA c: a counter-based draw from the query's seed state, inside
 *  stratum c * n_init + t of the n_ctas * n_init equal slices of [0, n_rows). The strata make
 *  the draws of all CTAs distinct (while n_rows >= the number of draws), so an initial node's
 *  claim in the device hash all but always succeeds: it is checked after the node's distance
 *  instead of before it (the multi-CTA kernel's init_finish). Host and device: the CPU model of
 *  that kernel (bench/multi_cta_sim.cpp) draws the same nodes. */
CAGRA_HOST_DEVICE uint32_t initial_node(uint64_t state, uint32_t c, uint32_t t, uint32_t n_init,
                                        uint32_t n_ctas, uint64_t n_rows) {
  // floor(g * n_rows / total) in double precision: exact, as the products stay below 2^53 and
  // a quotient's distance from an integer (>= 1 / total) exceeds its rounding error while
  // total < 2^21 (n_ctas x n_init is at most a few 10^4), and a 64-bit integer division is a
  // long software routine on the GPU, on the path of every CTA's first loads.
  const uint64_t g = uint64_t{c} * n_init + t;
  const double total = double(n_ctas) * double(n_init), rows = double(n_rows);
  const uint64_t lo = static_cast<uint64_t>(double(g) * rows / total),
                 hi = static_cast<uint64_t>(double(g + 1) * rows / total);
  const uint64_t x = mix64(state ^ ((g + 1) * 0xD1B54A32D192ED03ull));
  return static_cast<uint32_t>(lo + (((x >> 32) * (hi - lo)) >> 32));
}

/** Smallest power of two >= x (1 for x <= 1). */
CAGRA_HOST_DEVICE uint32_t next_pow2(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return x <= 1 ? 1u : 1u << (32 - __clz(x - 1));
#else
  uint32_t p = 1;
  while (p < x) p <<= 1;
  return p;
#endif
}

/** Smallest b with 2^b >= x. */
CAGRA_HOST_DEVICE uint32_t ceil_log2(uint64_t x) {
  uint32_t b = 0;
  while ((uint64_t{1} << b) < x) ++b;
  return b;
}

/** 8 little-endian bytes at p as one word (any alignment on the host; 8-aligned on the device). */
CAGRA_HOST_DEVICE uint64_t load_word(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint64_t*>(p);
#else
  uint64_t w;
  std::memcpy(&w, p, 8);
  return w;
#endif
}

/** The query hash that seeds a query's random initial nodes (every search: CPU, single-CTA,
 *  multi-CTA), in pieces a warp can share: word w's term (summed over the words in any order),
 *  the tail's terms, and the finish. query_seed_state adds them up on the host; the kernels
 *  spread the words over a warp's lanes (query_hash_warp). */
CAGRA_HOST_DEVICE uint64_t query_word_term(uint64_t word, uint32_t w) {
  return mix64(word ^ (uint64_t{w} * 0xD6E8FEB86659FD93ull));
}
CAGRA_HOST_DEVICE uint64_t query_tail_term(uint8_t byte, uint32_t i) {
  return mix64(uint64_t{byte} ^ (uint64_t{i} << 40));
}
CAGRA_HOST_DEVICE uint64_t query_hash_finish(uint64_t sum, uint32_t n) { return mix64(sum ^ n); }

/** The seed state of a query of n bytes: what the kernels compute with one warp, computed on
 *  the host by the CPU search, and for a batch-1 multi-CTA query so that its initial rows load
 *  at once. */
inline uint64_t query_seed_state(uint64_t seed, const uint8_t* p, uint32_t n) {
  uint64_t h = 0;
  for (uint32_t w = 0; w < n / 8; ++w) h += query_word_term(load_word(p + 8 * size_t{w}), w);
  for (uint32_t i = n & ~7u; i < n; ++i) h += query_tail_term(p[i], i);
  return mix64(seed ^ query_hash_finish(h, n));
}

/** Random initial node i of a query with seed state `state`, in [0, n_rows): splitmix64 at
 *  counter i, so that any thread can draw any node (the single-CTA kernel draws them all at once;
 *  the CPU search draws the same ids in order). */
CAGRA_HOST_DEVICE uint32_t random_node(uint64_t state, uint32_t i, uint64_t n_rows) {
  const uint64_t x = mix64(state + uint64_t{i} * 0x9E3779B97F4A7C15ull);
  return static_cast<uint32_t>(((x >> 32) * n_rows) >> 32);
}

/** The search distance from a dot product: inner product -dot, cosine 1 - dot (unit rows);
 *  smaller is nearer for every metric. l2 is the squared distance itself. */
CAGRA_HOST_DEVICE float distance_from_dot(metric m, float dot) {
  return m == metric::cosine ? 1.0f - dot : -dot;
}

}  // namespace cagra::bits
