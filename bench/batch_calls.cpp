// Where one GPU's search call spends its time, by batch size (issue 19: a replicated call gives
// each GPU a slice of the batch, and one GPU is less efficient with fewer queries). For each
// batch size B (the first B queries) and each itopk x iteration cap, one saved index searched
// three ways, each the median of --repeat calls after a warm-up:
//  - host:   queries and results in host memory (the copy path: pinned staging, chunks);
//  - device: queries and results already in device memory (the kernels and the call's own
//            fixed work only);
//  - ordered: the device call with resources::stream_ordered, 10 x --repeat calls back to back
//            and one synchronize: the time a call when the host does not wait for each;
//  - plan:   the plan the library chose, printed once per point.
// host - device is what the host path costs; device at B against device at 10 x B shows the
// part of a call that does not grow with the batch (the slowest query's walk, launch, sync).
//
//   batch_calls INDEX QUERIES GT [--batches 132,1024,2500,10000] [--itopk 16,32]
//               [--max-iterations 0,12] [--repeat 9] [--dataset NAME] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>
#include <cagra/plan.hpp>

namespace {

using namespace cagra;
using clk = std::chrono::steady_clock;

#define CHECK_CUDA(x)                                                      \
  do {                                                                     \
    const cudaError_t e_ = (x);                                            \
    if (e_ != cudaSuccess) {                                               \
      std::fprintf(stderr, "error: %s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> v;
  for (size_t at = 0; at <= s.size();) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    v.push_back(std::stoll(s.substr(at, end - at)));
    at = end + 1;
  }
  return v;
}

template <typename F>
double median_ms(int repeat, F&& f) {
  f();  // warm-up: uploads, workspaces
  std::vector<double> t;
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = clk::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(clk::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: batch_calls INDEX QUERIES GT [--batches LIST] [--itopk LIST] "
                 "[--max-iterations LIST] [--repeat R] [--dataset NAME] [--json FILE]\n");
    return 2;
  }
  std::vector<int64_t> batches = {132, 1024, 2500, 10000}, itopks = {16, 32}, caps = {0, 12};
  int repeat = 9;
  std::string dataset = "unnamed", json;
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--batches")
      batches = parse_list(v);
    else if (a == "--itopk")
      itopks = parse_list(v);
    else if (a == "--max-iterations")
      caps = parse_list(v);
    else if (a == "--repeat")
      repeat = std::stoi(v);
    else if (a == "--dataset")
      dataset = v;
    else if (a == "--json")
      json = v;
    else {
      std::fprintf(stderr, "error: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  try {
    const cagra::index idx = cagra::load(argv[1]);
    const host_matrix q = io::read_matrix(argv[2]);
    const host_matrix gt = io::read_neighbors(argv[3]).ids;
    const uint32_t k = 10;
    const size_t row_bytes = size_t(q.cols()) * dtype_size(q.type());
    const int64_t max_b =
        std::min<int64_t>(q.rows(), *std::max_element(batches.begin(), batches.end()));
    void* d_q = nullptr;
    uint32_t* d_ids = nullptr;
    float* d_dist = nullptr;
    CHECK_CUDA(cudaMalloc(&d_q, size_t(max_b) * row_bytes));
    CHECK_CUDA(cudaMalloc(&d_ids, size_t(max_b) * k * 4));
    CHECK_CUDA(cudaMalloc(&d_dist, size_t(max_b) * k * 4));
    CHECK_CUDA(cudaMemcpy(d_q, q.data(), size_t(max_b) * row_bytes, cudaMemcpyHostToDevice));
    FILE* f = json.empty() ? nullptr : std::fopen(json.c_str(), "a");
    std::printf("%7s %6s %6s %9s %10s %10s %10s %12s %12s %12s\n", "batch", "itopk", "maxit",
                "recall", "host ms", "device ms", "ordered ms", "host QPS", "device QPS",
                "ordered QPS");
    const resources res{};
    for (int64_t b : batches) {
      b = std::min(b, q.rows());
      for (int64_t itopk : itopks)
        for (int64_t cap : caps) {
          search_params p;
          p.itopk_size = uint32_t(itopk);
          p.max_iterations = uint32_t(cap);
          std::vector<uint32_t> ids(size_t(b) * k);
          std::vector<float> dist(ids.size());
          const dataset_view hq(q.data(), q.type(), b, q.cols());
          const double host_ms = median_ms(repeat, [&] {
            search(res, p, idx, hq, k, {ids.data(), b, k}, {dist.data(), b, k});
          });
          const double rec = recall({ids.data(), b, k},
                                    {static_cast<const uint32_t*>(gt.data()), b, gt.cols()}, k);
          const dataset_view dq(d_q, q.type(), b, q.cols(), memory_space::device);
          const double dev_ms = median_ms(repeat, [&] {
            search(res, p, idx, dq, k, {d_ids, b, k, memory_space::device},
                   {d_dist, b, k, memory_space::device});
          });
          resources ordered = res;
          ordered.stream_ordered = true;
          const int calls = 10 * repeat;
          const double ordered_ms =
              median_ms(repeat,
                        [&] {
                          for (int c = 0; c < calls; ++c)
                            search(ordered, p, idx, dq, k, {d_ids, b, k, memory_space::device},
                                   {d_dist, b, k, memory_space::device});
                          CHECK_CUDA(cudaStreamSynchronize(cudaStreamLegacy));
                        }) /
              calls;
          const search_plan plan = plan_search(res, p, idx, k, b, memory_space::host);
          std::printf("%7lld %6lld %6lld %9.4f %10.4f %10.4f %10.4f %12.0f %12.0f %12.0f\n",
                      (long long)b, (long long)itopk, (long long)cap, rec, host_ms, dev_ms,
                      ordered_ms, b / host_ms * 1e3, b / dev_ms * 1e3, b / ordered_ms * 1e3);
          std::printf("plan %s\n", to_string(plan).c_str());
          if (f)
            std::fprintf(
                f,
                "{\"dataset\":\"%s\",\"batch\":%lld,\"itopk\":%lld,\"max_iterations\":%lld,"
                "\"recall\":%.6f,\"host_ms\":%.5f,\"device_ms\":%.5f,\"ordered_ms\":%.5f,"
                "\"plan\":\"%s\"}\n",
                dataset.c_str(), (long long)b, (long long)itopk, (long long)cap, rec, host_ms,
                dev_ms, ordered_ms, to_string(plan).c_str());
        }
    }
    if (f) std::fclose(f);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
