// A sharded search whose queries and results stay in device memory (core::device_shard_search,
// filled by the multi-GPU layer). What and why: a sharded search of host queries copies them to
// every shard's device and merges the lists on the host; queries that already live on a GPU
// (cupy, torch) would make a round trip through the host. Here NCCL broadcasts the queries from
// the device that holds them (the root) to the other shards' devices, every shard is searched on
// its own device (the layer's callback: the single-device search of device queries), NCCL sends
// the per-shard lists to the root, and merge_lists (one thread per query) merges them there by
// (distance, global id), the host merge's order (core/multi_gpu/merge.cpp).
//
// NCCL comes from the CUDA toolkit's libnccl.so.2, opened at run time (dlopen): the library does
// not depend on it to load, and a machine without it can still search shards that all live on the
// queries' device (no collective is needed then). One communicator per set of devices, made by
// ncclCommInitAll on first use and kept for the process, with a stream per device. NVLink
// multicast stays off (NCCL_NVLS_ENABLE=0 unless the environment sets it).
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <cagra/types.hpp>

#include "core/backend.hpp"
#include "core/multi_gpu/multi_gpu.hpp"
#include "cuda/check.hpp"
#include "cuda/memory.hpp"
#include "cuda/multi_gpu/device_shards.hpp"

#if CAGRA_HAVE_NCCL
#include <nccl.h>
#endif

namespace cagra::cuda {
namespace {

/** Most shards one merge takes (a thread keeps a read position per list). */
constexpr uint32_t kMaxMergedLists = 256;

/** Query q's k best of the lists' entries by (distance, global id); a list ends at its first
 *  kInvalidId; a NaN distance sorts last. */
__global__ void merge_lists(const uint32_t* const* ids, const float* const* dists,
                            const uint32_t* widths, const int64_t* offsets, uint32_t n_lists,
                            int64_t nq, uint32_t k, uint32_t* out_ids, float* out_d) {
  const int64_t q = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (q >= nq) return;
  uint32_t pos[kMaxMergedLists];
  for (uint32_t s = 0; s < n_lists; ++s) pos[s] = 0;
  const float inf = __int_as_float(0x7F800000);
  for (uint32_t slot = 0; slot < k; ++slot) {
    uint32_t best = n_lists, best_id = kInvalidId;
    float best_d = inf;
    for (uint32_t s = 0; s < n_lists; ++s) {
      if (pos[s] == widths[s]) continue;
      const size_t at = size_t(q) * widths[s] + pos[s];
      const uint32_t local = ids[s][at];
      if (local == kInvalidId) continue;
      const uint32_t id = uint32_t(offsets[s] + local);
      const float d = dists[s][at];
      if (best == n_lists || d < best_d || (d == best_d && id < best_id) ||
          (best_d != best_d && d == d)) {
        best = s;
        best_d = d;
        best_id = id;
      }
    }
    if (best != n_lists)
      ++pos[best];
    else
      best_d = inf;
    out_ids[size_t(q) * k + slot] = best_id;
    if (out_d) out_d[size_t(q) * k + slot] = best_d;
  }
}

int device_of(const void* p, const char* what) {
  cudaPointerAttributes at{};
  const cudaError_t e = cudaPointerGetAttributes(&at, p);
  if (e != cudaSuccess) (void)cudaGetLastError();
  CAGRA_EXPECTS(e == cudaSuccess && at.type == cudaMemoryTypeDevice,
                "%s is a device view, but %p is not CUDA device memory (allocate it with "
                "cudaMalloc, cupy or torch .cuda(), or pass a host view)",
                what, p);
  return at.device;
}

#if CAGRA_HAVE_NCCL
/** The NCCL entry points this file uses, from libnccl.so.2. */
struct nccl_api {
  decltype(&ncclCommInitAll) comm_init_all = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) group_start = nullptr;
  decltype(&ncclGroupEnd) group_end = nullptr;
  decltype(&ncclGetErrorString) error_string = nullptr;
  std::string missing;  // why it could not be loaded; empty when loaded
};

const nccl_api& nccl() {
  static const nccl_api api = [] {
    nccl_api a;
    void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* e = dlerror();
      a.missing = e ? e : "libnccl.so.2 not found";
      return a;
    }
    const auto get = [&](auto& f, const char* name) {
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(dlsym(lib, name));
      if (!f && a.missing.empty()) a.missing = std::string("libnccl has no ") + name;
    };
    get(a.comm_init_all, "ncclCommInitAll");
    get(a.broadcast, "ncclBroadcast");
    get(a.send, "ncclSend");
    get(a.recv, "ncclRecv");
    get(a.group_start, "ncclGroupStart");
    get(a.group_end, "ncclGroupEnd");
    get(a.error_string, "ncclGetErrorString");
    return a;  // the library stays open for the process
  }();
  return api;
}

void nccl_try(ncclResult_t r, const char* call) {
  if (r != ncclSuccess)
    CAGRA_FAIL("NCCL error in %s: %s", call, nccl().error_string ? nccl().error_string(r) : "?");
}

/** A communicator over a set of devices (rank r = devices[r]) and a stream per device. Kept for
 *  the process: never destroyed (at exit the driver may already be gone). */
struct device_group {
  std::vector<int> devices;
  std::vector<ncclComm_t> comms;
  std::vector<cudaStream_t> streams;
  int rank_of(int device) const {
    return int(std::find(devices.begin(), devices.end(), device) - devices.begin());
  }
};

const device_group& group_for(const std::vector<int>& devices) {
  static std::mutex mu;
  static auto* groups = new std::map<std::vector<int>, std::unique_ptr<device_group>>;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = (*groups)[devices];
  if (slot) return *slot;
  const nccl_api& api = nccl();
  CAGRA_EXPECTS(api.missing.empty(),
                "a sharded search of device queries over %zu devices needs NCCL, which could not "
                "be loaded (%s): pass host queries, or put every shard on the queries' device",
                devices.size(), api.missing.c_str());
  setenv("NCCL_NVLS_ENABLE", "0", 0);  // NVLink multicast off unless the user set it
  auto g = std::make_unique<device_group>();
  g->devices = devices;
  g->comms.resize(devices.size());
  nccl_try(api.comm_init_all(g->comms.data(), int(devices.size()), devices.data()),
           "ncclCommInitAll");
  for (int d : devices) {
    device_guard guard(d);
    cudaStream_t s = nullptr;
    CAGRA_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    g->streams.push_back(s);
  }
  slot = std::move(g);
  return *slot;
}

void sync_all(const device_group& g) {
  for (size_t r = 0; r < g.devices.size(); ++r) {
    device_guard guard(g.devices[r]);
    CAGRA_CUDA_TRY(cudaStreamSynchronize(g.streams[r]));
  }
}
#endif

}  // namespace

void search_shards_on_devices(const core::device_shard_search& job) {
  const size_t n_shards = job.shard_device.size();
  CAGRA_EXPECTS(n_shards >= 1 && n_shards <= kMaxMergedLists,
                "a sharded search of device queries takes 1 to %u shards (got %zu)",
                kMaxMergedLists, n_shards);
  const int root = device_of(job.queries, "queries");
  CAGRA_EXPECTS(device_of(job.ids, "neighbors") == root &&
                    (!job.distances || device_of(job.distances, "distances") == root),
                "the neighbors and distances of a sharded search must be on the queries' device "
                "(%d)",
                root);
  CAGRA_EXPECTS(std::find(job.devices.begin(), job.devices.end(), root) != job.devices.end(),
                "the queries are on CUDA device %d, which holds no shard: list it in "
                "resources::devices",
                root);
  const bool several = std::any_of(job.shard_device.begin(), job.shard_device.end(),
                                   [&](int d) { return d != root; });
  const size_t q_bytes = size_t(job.nq) * job.row_bytes;

  // Per shard: its lists on its device, and a copy on the root when it lives elsewhere.
  std::vector<device_buffer<uint32_t>> ids(n_shards), got_ids(n_shards);
  std::vector<device_buffer<float>> dist(n_shards), got_dist(n_shards);
  std::vector<device_buffer<uint8_t>> queries(job.devices.size());  // non-root devices' copies
  for (size_t s = 0; s < n_shards; ++s) {
    const size_t m = size_t(job.nq) * job.shard_k[s];
    {
      device_guard guard(job.shard_device[s]);
      ids[s].reserve(m);
      dist[s].reserve(m);
    }
    if (job.shard_device[s] != root) {
      device_guard guard(root);
      got_ids[s].reserve(m);
      got_dist[s].reserve(m);
    }
  }
  const auto queries_on = [&](int device) -> const void* {
    if (device == root) return job.queries;
    const size_t r =
        size_t(std::find(job.devices.begin(), job.devices.end(), device) - job.devices.begin());
    return queries[r].data();
  };

#if CAGRA_HAVE_NCCL
  const device_group* g = several ? &group_for(job.devices) : nullptr;
  if (g) {
    const nccl_api& api = nccl();
    const int root_rank = g->rank_of(root);
    for (size_t r = 0; r < g->devices.size(); ++r)
      if (g->devices[r] != root) {
        device_guard guard(g->devices[r]);
        queries[r].reserve(q_bytes);
      }
    {  // the caller wrote the queries on its stream (by default the legacy default stream)
      device_guard guard(root);
      cuda_event().order(caller_stream(job.caller_stream, root), g->streams[size_t(root_rank)]);
    }
    nccl_try(api.group_start(), "ncclGroupStart");
    for (size_t r = 0; r < g->devices.size(); ++r) {
      void* buf = g->devices[r] == root ? const_cast<void*>(job.queries) : queries[r].data();
      nccl_try(api.broadcast(buf, buf, q_bytes, ncclUint8, root_rank, g->comms[r], g->streams[r]),
               "ncclBroadcast");
    }
    nccl_try(api.group_end(), "ncclGroupEnd");
    sync_all(*g);
  }
#else
  CAGRA_EXPECTS(!several,
                "a sharded search of device queries over several devices needs NCCL, and this "
                "build has none (configure with NCCL's header, CAGRA_NCCL): pass host queries, or "
                "put every shard on the queries' device");
  (void)q_bytes;
#endif

  core::run_tasks(n_shards, true, [&](size_t s) {
    device_guard guard(job.shard_device[s]);
    job.search_shard(s, queries_on(job.shard_device[s]), ids[s].data(), dist[s].data());
  });

#if CAGRA_HAVE_NCCL
  if (g) {
    const nccl_api& api = nccl();
    const int root_rank = g->rank_of(root);
    const size_t root_r = size_t(root_rank);
    nccl_try(api.group_start(), "ncclGroupStart");
    for (size_t s = 0; s < n_shards; ++s) {
      const int d = job.shard_device[s];
      if (d == root) continue;
      const size_t r = size_t(g->rank_of(d)), m = size_t(job.nq) * job.shard_k[s];
      nccl_try(api.send(ids[s].data(), m, ncclUint32, root_rank, g->comms[r], g->streams[r]),
               "ncclSend");
      nccl_try(api.send(dist[s].data(), m, ncclFloat32, root_rank, g->comms[r], g->streams[r]),
               "ncclSend");
      nccl_try(
          api.recv(got_ids[s].data(), m, ncclUint32, int(r), g->comms[root_r], g->streams[root_r]),
          "ncclRecv");
      nccl_try(api.recv(got_dist[s].data(), m, ncclFloat32, int(r), g->comms[root_r],
                        g->streams[root_r]),
               "ncclRecv");
    }
    nccl_try(api.group_end(), "ncclGroupEnd");
    sync_all(*g);
  }
#endif

  // The merge on the root: the lists' addresses, widths and offsets go up with one copy.
  device_guard guard(root);
  std::vector<const uint32_t*> id_lists(n_shards);
  std::vector<const float*> dist_lists(n_shards);
  for (size_t s = 0; s < n_shards; ++s) {
    const bool here = job.shard_device[s] == root;
    id_lists[s] = here ? ids[s].data() : got_ids[s].data();
    dist_lists[s] = here ? dist[s].data() : got_dist[s].data();
  }
  // One table, one copy: [id list pointers | distance list pointers | offsets | widths].
  const size_t ptr_bytes = n_shards * sizeof(void*);
  const size_t at_dist = ptr_bytes, at_offset = 2 * ptr_bytes;
  const size_t at_width = at_offset + n_shards * sizeof(int64_t);
  const size_t table_bytes = at_width + n_shards * sizeof(uint32_t);
  std::vector<uint8_t> table(table_bytes);
  std::memcpy(table.data(), id_lists.data(), ptr_bytes);
  std::memcpy(table.data() + at_dist, dist_lists.data(), ptr_bytes);
  std::memcpy(table.data() + at_offset, job.shard_offset.data(), n_shards * sizeof(int64_t));
  std::memcpy(table.data() + at_width, job.shard_k.data(), n_shards * sizeof(uint32_t));
  device_buffer<uint8_t> d_table(table_bytes);
  CAGRA_CUDA_TRY(cudaMemcpy(d_table.data(), table.data(), table_bytes, cudaMemcpyHostToDevice));
  const uint8_t* t = d_table.data();
  cuda_stream stream;
  const unsigned block = 128;
  merge_lists<<<unsigned((job.nq + block - 1) / block), block, 0, stream.get()>>>(
      reinterpret_cast<const uint32_t* const*>(t),
      reinterpret_cast<const float* const*>(t + at_dist),
      reinterpret_cast<const uint32_t*>(t + at_width),
      reinterpret_cast<const int64_t*>(t + at_offset), uint32_t(n_shards), job.nq, job.k, job.ids,
      job.distances);
  CAGRA_CUDA_CHECK_LAUNCH();
  stream.sync();
}

}  // namespace cagra::cuda
