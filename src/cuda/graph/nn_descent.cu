// NN-descent on the GPU (GNND-like, Wang et al. 2021; our own code). The graph lives on the
// device as keys [n, k] (orderable distance << 32 | id, rows ascending, so one unsigned compare
// orders by (distance, id)) and "new" flags [n, k]. After a random start (nn_descent_lists.cu: k
// distinct random neighbors per node from a counter-based hash of (seed, node, draw), their
// distances, a bitonic sort), each iteration runs four kernels with nothing shared between a
// writer and a reader inside one kernel:
//   sample — one warp per node: the first S new entries (flag cleared) and the first S old ones
//            (S = round(sample_rate * k), at most 32); reverse lists by atomicAdd into [n, S]
//            slots, later arrivals replacing a random slot (reservoir-like);
//   join   — nn_descent_join.cu: one CTA per node, new x (new ∪ old) distances, proposals
//            below the target's worst distance into per-node buffers [n, P] (P = max(2k, 128)
//            rounded up to a power of two): first come while there is room, then the slot
//            the id hashes to keeps the nearer key; once an eighth of the proposals held were
//            ids already listed, the join drops such offers itself (for good);
//   update — one CTA per node: its proposals are bitonic-sorted, duplicates and entries already
//            in the list dropped (a pair's distance has the same bits wherever it is computed,
//            see row_distance and tf32_start_distances), then merged with the list by rank (merge
//            path): the k smallest are kept, the inserted ones flagged new, and their number
//            counted;
//   stop   — after max_iterations or when fewer than termination_threshold * n * k entries
//            changed (the CPU's rule).
// Float rows' l2 distances are |x|^2 + |y|^2 - 2 x.y in the iterations (one FMA an element in the
// join's tile; from sm_80 tf32 products on tensor cores, in the start as in the join); lists
// returned with their distances are re-measured from the full elements and re-sorted
// (nn_descent_lists.cu).
// Dataset: one device copy in its storage type, rows zero padded to 16 bytes.
#include "core/bits.hpp"
#include "core/device_memory.hpp"
#include "cuda/graph/nn_descent_detail.cuh"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <vector>

#include <cuda_runtime_api.h>

#include "cuda/check.hpp"
#include "cuda/graph/build_trace.hpp"
#include "cuda/graph/device_lists.hpp"
#include "cuda/host_upload.hpp"
#include "cuda/memory.hpp"
#include "cuda/primitives/bitonic.cuh"

namespace cagra::cuda {
namespace {

using nnd_detail::make_key;
using u64 = unsigned long long;

// The buffer shapes are core's (core/device_memory.hpp), which models this file's allocations.
constexpr uint32_t kMaxK = core::gpu::kNnDescentMaxK;
constexpr uint32_t kThreads = 256;
constexpr uint32_t kFull = 0xFFFFFFFFu;

using bits::mix64;
uint32_t proposal_capacity(uint32_t k) { return core::gpu::nn_descent_proposal_capacity(k); }
size_t row_u4_for(int64_t dim, dtype t) { return (size_t(dim) * dtype_size(t) + 15) / 16; }

/** Number of entries of the ascending a[0, n) below key. */
__device__ __forceinline__ uint32_t lower_bound(const u64* a, uint32_t n, u64 key) {
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) >> 1;
    if (a[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/** Appends u to v's reverse list; past s entries, the arrival replaces a random slot. */
__device__ __forceinline__ void add_reverse(uint32_t* rev, uint32_t* rcnt, uint32_t v, uint32_t u,
                                            uint32_t s, uint64_t salt) {
  const uint32_t slot = atomicAdd(rcnt + v, 1u);
  if (slot < s) {
    rev[int64_t(v) * s + slot] = u;
  } else {
    const uint64_t h = mix64(salt ^ (uint64_t(u) << 32) ^ v);
    const uint32_t r = uint32_t(((h & 0xFFFFFFFFull) * (uint64_t(slot) + 1)) >> 32);
    if (r < s) rev[int64_t(v) * s + r] = u;
  }
}

/** One warp per node: forward samples (new ones lose their flag) and the reverse lists. */
__global__ void sample_kernel(const u64* keys, uint8_t* flags, int64_t n, uint32_t k, uint32_t s,
                              uint32_t* fwd_new, uint32_t* fwd_old, uint32_t* rev_new,
                              uint32_t* rev_old, uint32_t* rcnt_new, uint32_t* rcnt_old,
                              uint64_t salt) {
  const int64_t u = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const uint32_t lane = threadIdx.x & 31u;
  if (u >= n) return;
  const uint32_t lt = (1u << lane) - 1u;
  uint32_t nn = 0, no = 0;
  for (uint32_t j0 = 0; j0 < k && (nn < s || no < s); j0 += 32) {
    const uint32_t j = j0 + lane;
    const bool valid = j < k;
    const bool is_new = valid && flags[u * k + j] != 0;
    const bool is_old = valid && !is_new;
    const uint32_t bn = __ballot_sync(kFull, is_new), bo = __ballot_sync(kFull, is_old);
    const uint32_t id = valid ? uint32_t(keys[u * k + j]) : 0;
    const uint32_t pn = nn + __popc(bn & lt), po = no + __popc(bo & lt);
    if (is_new && pn < s) {
      fwd_new[u * s + pn] = id;
      flags[u * k + j] = 0;
      add_reverse(rev_new, rcnt_new, id, uint32_t(u), s, salt);
    }
    if (is_old && po < s) {
      fwd_old[u * s + po] = id;
      add_reverse(rev_old, rcnt_old, id, uint32_t(u), s, salt ^ 0x5555555555555555ull);
    }
    nn = min(s, nn + __popc(bn));
    no = min(s, no + __popc(bo));
  }
  for (uint32_t i = nn + lane; i < s; i += 32) fwd_new[u * s + i] = kInvalidId;
  for (uint32_t i = no + lane; i < s; i += 32) fwd_old[u * s + i] = kInvalidId;
}

/** One CTA per node: merges its proposals into its list (see the file comment). counters[0] +=
 *  entries inserted, counters[1] += proposals past the buffer's room (competing in hashed
 *  slots), counters[2] += proposals held that the list already had, counters[3] += proposals
 *  held. Resets pcount. */
__global__ void update_kernel(u64* keys, uint8_t* flags, uint32_t k, const u64* props,
                              uint32_t* pcount, uint32_t cap, u64* counters) {
  extern __shared__ u64 sm[];
  u64* lk = sm;                                        // [k] the list
  u64* ok_keys = lk + k;                               // [k] the result
  u64* pk = ok_keys + k;                               // [cap] proposals
  u64* vk = pk + cap;                                  // [cap] surviving proposals
  uint8_t* lf = reinterpret_cast<uint8_t*>(vk + cap);  // [k]
  uint8_t* of = lf + k;                                // [k]
  __shared__ uint32_t wtot[kThreads / 32];
  __shared__ uint32_t s_nv, s_added, s_listed;
  const int64_t v = blockIdx.x;
  const uint32_t t = threadIdx.x, lane = t & 31u, warp = t >> 5;
  const uint32_t offered = pcount[v];
  if (offered == 0) return;
  __syncthreads();  // every thread has read pcount[v]
  if (t == 0) {
    pcount[v] = 0;
    if (offered > cap) atomicAdd(counters + 1, u64(offered - cap));
    s_nv = 0;
    s_added = 0;
    s_listed = 0;
  }
  const uint32_t np = min(offered, cap), np2 = bits::next_pow2(np);
  for (uint32_t i = t; i < np2; i += blockDim.x) pk[i] = i < np ? props[v * cap + i] : ~0ull;
  for (uint32_t i = t; i < k; i += blockDim.x) {
    lk[i] = keys[v * k + i];
    lf[i] = flags[v * k + i];
  }
  __syncthreads();
  dev::block_sort_u64(pk, np2);
  const u64 worst = lk[k - 1];
  // Surviving proposals: distinct, below the worst entry, not already in the list.
  for (uint32_t b0 = 0; b0 < np; b0 += blockDim.x) {
    const uint32_t i = b0 + t;
    bool ok = false;
    u64 key = 0;
    if (i < np) {
      key = pk[i];
      ok = key < worst && (i == 0 || pk[i - 1] != key);
      if (ok) {
        const uint32_t r = lower_bound(lk, k, key);
        ok = !(r < k && lk[r] == key);
        if (!ok) atomicAdd(&s_listed, 1u);
      }
    }
    const uint32_t b = __ballot_sync(kFull, ok);
    if (lane == 0) wtot[warp] = __popc(b);
    __syncthreads();
    uint32_t before = s_nv;
    for (uint32_t w = 0; w < warp; ++w) before += wtot[w];
    if (ok) vk[before + __popc(b & ((1u << lane) - 1u))] = key;
    __syncthreads();
    if (t == 0)
      for (uint32_t w = 0; w < blockDim.x / 32; ++w) s_nv += wtot[w];
    __syncthreads();
  }
  const uint32_t nv = s_nv;
  if (t == 0) {
    atomicAdd(counters + 2, u64(s_listed));
    atomicAdd(counters + 3, u64(np));
  }
  if (nv == 0) return;
  uint32_t added = 0;
  for (uint32_t q = t; q < nv; q += blockDim.x) {
    const uint32_t pos = q + lower_bound(lk, k, vk[q]);
    if (pos < k) {
      ok_keys[pos] = vk[q];
      of[pos] = 1;
      ++added;
    }
  }
  for (uint32_t i = t; i < k; i += blockDim.x) {
    const uint32_t pos = i + lower_bound(vk, nv, lk[i]);
    if (pos < k) {
      ok_keys[pos] = lk[i];
      of[pos] = lf[i];
    }
  }
  if (added) atomicAdd(&s_added, added);
  __syncthreads();
  for (uint32_t i = t; i < k; i += blockDim.x) {
    keys[v * k + i] = ok_keys[i];
    flags[v * k + i] = of[i];
  }
  if (t == 0 && s_added) atomicAdd(counters, u64(s_added));
}

struct run_state {
  int64_t n;
  uint32_t k, s, cap, row_u4;
  device_buffer<uint4> data;
  device_buffer<u64> keys, props, counters;
  device_buffer<uint8_t> flags;
  device_buffer<uint32_t> fwd_new, fwd_old, rev_new, rev_old, rcnt, pcount;
};

/** The CPU's argument checks and the GPU version's own limits, free device memory included
 *  (cagra::error, before anything is allocated). */
void check_inputs(const host_matrix& data, uint32_t k, const knn_graph_params& p, int device) {
  const int64_t n = data.rows(), dim = data.cols();
  CAGRA_EXPECTS(k >= 1 && static_cast<int64_t>(k) < n,
                "NN-descent needs 1 <= k < rows (k = %u, rows = %lld)", k, (long long)n);
  CAGRA_EXPECTS(k <= kMaxK,
                "the GPU NN-descent takes k <= %u (got k = %u); use the CPU backend or brute force",
                kMaxK, k);
  CAGRA_EXPECTS(n <= kMaxRows, "the GPU NN-descent takes at most %lld rows (got %lld)",
                (long long)kMaxRows, (long long)n);
  const dtype t = data.type();
  CAGRA_EXPECTS(t == dtype::f32 || t == dtype::f16 || t == dtype::u8 || t == dtype::i8,
                "the GPU NN-descent takes f32, f16, u8 or i8 vectors, not %s", to_string(t));
  CAGRA_EXPECTS(dim >= 1, "the dataset has no columns");
  CAGRA_EXPECTS(
      dtype_size(t) != 1 || dim <= 16384,
      "the GPU NN-descent takes byte vectors of dimension <= 16384 (exact int32 sums), got %lld",
      (long long)dim);
  CAGRA_EXPECTS(p.sample_rate > 0.0f, "NN-descent sample_rate must be > 0 (got %g)",
                double(p.sample_rate));
  device_guard guard(device);
  const size_t need = nn_descent_device_bytes(n, dim, t, k, p.sample_rate);
  size_t free_b = 0, total_b = 0;
  CAGRA_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  CAGRA_EXPECTS(need <= free_b,
                "the GPU NN-descent needs %zu bytes (%.1f MiB) of device memory for %lld x %lld %s "
                "rows with k = %u, "
                "but device %d has only %zu bytes (%.1f MiB) free",
                need, need / 1048576.0, (long long)n, (long long)dim, to_string(t), k, device,
                free_b, free_b / 1048576.0);
}

}  // namespace

uint32_t nn_descent_max_k() { return kMaxK; }

size_t nn_descent_device_bytes(int64_t rows, int64_t dim, dtype t, uint32_t k, float sample_rate) {
  // run_state's buffers, one term each (core::nn_descent_memory names them).
  return size_t(core::nn_descent_memory(rows, dim, t, k, sample_rate).total());
}

device_lists nn_descent_lists(const host_matrix& data, metric m, uint32_t k,
                              const knn_graph_params& p, uint64_t seed, int device,
                              const core::progress_fn& progress, uint32_t* iterations_run,
                              bool with_distances) {
  check_inputs(data, k, p, device);
  const int64_t n = data.rows(), dim = data.cols();
  const dtype t = data.type();
  build_trace trace("nn-descent");
  device_guard guard(device);

  cuda_stream stream;
  const cudaStream_t st = stream.get();
  run_state r;
  r.n = n;
  r.k = k;
  r.s = core::gpu::nn_descent_sample_size(k, p.sample_rate);
  r.cap = proposal_capacity(k);
  r.row_u4 = uint32_t(row_u4_for(dim, t));
  const size_t nk = size_t(n) * k;
  r.data.reserve(size_t(n) * r.row_u4);
  r.keys.reserve(nk);
  r.flags.reserve(nk);
  r.props.reserve(size_t(n) * r.cap);
  r.pcount.reserve(size_t(n));
  r.fwd_new.reserve(size_t(n) * r.s);
  r.fwd_old.reserve(size_t(n) * r.s);
  r.rev_new.reserve(size_t(n) * r.s);
  r.rev_old.reserve(size_t(n) * r.s);
  r.rcnt.reserve(2 * size_t(n));
  r.counters.reserve(4);
  trace.mark("device buffers allocated");

  phase_timer timer(st, timing_build());
  timer.mark(0);
  // The dataset, rows zero padded to 16 bytes.
  const size_t src_pitch = size_t(dim) * dtype_size(t), dst_pitch = size_t(r.row_u4) * 16;
  if (dst_pitch != src_pitch)
    CAGRA_CUDA_TRY(cudaMemsetAsync(r.data.data(), 0, dst_pitch * size_t(n), st));
  upload_rows(r.data.data(), dst_pitch, data.data(), src_pitch, src_pitch, size_t(n), st);
  CAGRA_CUDA_TRY(cudaMemsetAsync(r.pcount.data(), 0, size_t(n) * sizeof(uint32_t), st));
  if (timing_build()) {
    stream.sync();
    trace.mark("dataset uploaded");
  }

  const bool dot = m != metric::l2, cosine = m == metric::cosine;
  // The proposal buffer is free until the first join: the start's scratch (n floats).
  nnd_detail::launch_start(t, r.data.data(), r.row_u4, n, k, seed, dot, cosine,
                           reinterpret_cast<float*>(r.props.data()), r.keys.data(), r.flags.data(),
                           st);
  timer.mark(1);
  if (timing_build()) {
    stream.sync();
    std::fprintf(
        stderr,
        "[gpu nn-descent] n=%lld dim=%lld %s k=%u S=%u P=%u: upload + random init %.2f ms\n",
        (long long)n, (long long)dim, to_string(t), k, r.s, r.cap, timer.ms(0, 1));
    trace.mark("upload + random init");
  }

  nnd_detail::join_args ja;
  ja.data = r.data.data();
  ja.row_u4 = r.row_u4;
  ja.keys = r.keys.data();
  ja.k = k;
  ja.s = r.s;
  ja.cap = r.cap;
  ja.fwd_new = r.fwd_new.data();
  ja.fwd_old = r.fwd_old.data();
  ja.rev_new = r.rev_new.data();
  ja.rev_old = r.rev_old.data();
  ja.rcnt_new = r.rcnt.data();
  ja.rcnt_old = r.rcnt.data() + n;
  ja.props = r.props.data();
  ja.pcount = r.pcount.data();
  ja.n = n;
  ja.dot = dot;
  ja.cosine = cosine;
  ja.check_listed = false;

  const size_t update_smem = size_t(k) * (2 * sizeof(u64) + 2) + size_t(r.cap) * 2 * sizeof(u64);
  if (update_smem > 48 * 1024)
    CAGRA_CUDA_TRY(cudaFuncSetAttribute(update_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        int(update_smem)));
  const double stop = double(p.termination_threshold) * double(n) * k;
  const unsigned sample_blocks = unsigned((n * 32 + kThreads - 1) / kThreads);
  uint32_t it = 0;
  while (it < p.max_iterations) {
    CAGRA_CUDA_TRY(cudaMemsetAsync(r.rcnt.data(), 0, 2 * size_t(n) * sizeof(uint32_t), st));
    CAGRA_CUDA_TRY(cudaMemsetAsync(r.counters.data(), 0, 4 * sizeof(u64), st));
    const uint64_t salt = mix64(seed ^ (uint64_t(it + 1) << 40));
    timer.mark(0);
    sample_kernel<<<sample_blocks, kThreads, 0, st>>>(
        r.keys.data(), r.flags.data(), n, k, r.s, r.fwd_new.data(), r.fwd_old.data(),
        r.rev_new.data(), r.rev_old.data(), r.rcnt.data(), r.rcnt.data() + n, salt);
    CAGRA_CUDA_CHECK_LAUNCH();
    timer.mark(1);
    nnd_detail::launch_join(t, ja, st);
    timer.mark(2);
    update_kernel<<<unsigned(n), kThreads, update_smem, st>>>(r.keys.data(), r.flags.data(), k,
                                                              r.props.data(), r.pcount.data(),
                                                              r.cap, r.counters.data());
    CAGRA_CUDA_CHECK_LAUNCH();
    timer.mark(3);
    u64 counters[4] = {0, 0, 0, 0};
    CAGRA_CUDA_TRY(
        cudaMemcpyAsync(counters, r.counters.data(), sizeof(counters), cudaMemcpyDeviceToHost, st));
    stream.sync();
    ++it;
    if (timing_build())
      std::fprintf(stderr,
                   "[gpu nn-descent] iteration %u: %llu entries changed, %llu proposals past the "
                   "room, %llu of %llu held listed%s; "
                   "sample %.2f ms, "
                   "join %.2f ms, update %.2f ms\n",
                   it, counters[0], counters[1], counters[2], counters[3],
                   ja.check_listed ? " (listed dropped in the join)" : "", timer.ms(0, 1),
                   timer.ms(1, 2), timer.ms(2, 3));
    if (progress) progress("NN-descent", double(it) / p.max_iterations);
    if (double(counters[0]) < stop) break;
    // The CPU build's rule: drop listed ids in the join from the iteration after one where an
    // eighth of the proposals held were listed; then for good (the join's drops are not
    // counted, and the listed share only grows as the lists settle).
    ja.check_listed = ja.check_listed || (counters[3] > 0 && counters[2] * 8 >= counters[3]);
  }
  if (iterations_run) *iterations_run = it;
  trace.mark("iterations done");

  // Ids (and distances) decoded into their own buffers, the proposals' memory given back first.
  r.props = device_buffer<u64>();
  device_lists lists;
  lists.rows = n;
  lists.k = k;
  lists.ids.reserve(nk);
  if (with_distances) lists.distances.reserve(nk);
  nnd_detail::launch_lists_out(t, r.data.data(), r.row_u4, n, k, dot, cosine, r.keys.data(),
                               lists.ids.data(), with_distances ? lists.distances.data() : nullptr,
                               st);
  stream.sync();
  trace.mark("lists decoded");
  if (progress) progress("NN-descent", 1.0);
  return lists;
}

knn_graph nn_descent(const host_matrix& data, metric m, uint32_t k, const knn_graph_params& p,
                     uint64_t seed, int device, const core::progress_fn& progress,
                     uint32_t* iterations_run) {
  check_inputs(data, k, p, device);
  knn_graph g;
  g.rows = data.rows();
  g.k = k;
  // The host result is allocated (zero-filled, faulted in) while the GPU runs; the checks above
  // come first, so that a run refused at once does not wait for a large allocation.
  const size_t nk = size_t(g.rows) * k;
  auto allocated = std::async(std::launch::async, [&g, nk] {
    g.ids.resize(nk);
    g.distances.resize(nk);
  });
  device_lists lists;
  try {
    lists = nn_descent_lists(data, m, k, p, seed, device, progress, iterations_run, true);
  } catch (...) {
    allocated.wait();
    throw;
  }
  allocated.get();
  device_guard guard(device);
  CAGRA_CUDA_TRY(
      cudaMemcpy(g.ids.data(), lists.ids.data(), nk * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  CAGRA_CUDA_TRY(cudaMemcpy(g.distances.data(), lists.distances.data(), nk * sizeof(float),
                            cudaMemcpyDeviceToHost));
  return g;
}

}  // namespace cagra::cuda
