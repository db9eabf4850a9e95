// libFuzzer target: build + search on the CPU backend over tiny inputs. The input bytes are
// decoded (FuzzedDataProvider) into a small matrix (1-48 rows, 1-12 columns, f32/f16/u8/i8) and
// the build and search parameters, out-of-range values included (they must give a cagra::error).
//
// f32/f16 values come either from a small integer grid (distances stay exact-ish and finite) or,
// when the "raw" flag is set, from raw bit patterns: NaN, infinities, huge and subnormal values,
// where build must refuse what it cannot index and only the ids are checked.
//
// Checked on every build that succeeds:
//   - the graph has rows x graph_degree ids, each < rows, no self loop, no id twice in a row;
//   - the stored vectors are finite (a build must not make an index that load would refuse);
//   - the same graph with another thread count (the CPU backend's promise);
//   - save + load gives the same index.
// On every search that succeeds: ids < rows or kInvalidId (valid ones first, distinct), distances
// ascending and NaN-free (grid values), the same results with another thread count.
#include <fuzzer/FuzzedDataProvider.h>

#include "fuzz_util.hpp"

namespace cagra::fuzz {
namespace {

host_matrix decode_matrix(FuzzedDataProvider& in, dtype t, int64_t rows, int64_t cols, bool raw) {
  host_matrix m(t, rows, cols);
  const int64_t n = rows * cols;
  if (t == dtype::u8 || t == dtype::i8) {
    std::vector<uint8_t> b = in.ConsumeBytes<uint8_t>(n);
    b.resize(n, 0);
    std::memcpy(m.data(), b.data(), n);
  } else if (t == dtype::f32) {
    float* f = static_cast<float*>(m.data());
    for (int64_t i = 0; i < n; ++i) {
      if (raw) {
        const uint32_t bits = in.ConsumeIntegral<uint32_t>();
        std::memcpy(&f[i], &bits, 4);
      } else {
        f[i] = static_cast<float>(in.ConsumeIntegral<int8_t>()) / 8.0f;
      }
    }
  } else {  // f16
    half* h = static_cast<half*>(m.data());
    for (int64_t i = 0; i < n; ++i)
      h[i] = raw ? half{in.ConsumeIntegral<uint16_t>()}
                 : to_half(static_cast<float>(in.ConsumeIntegral<int8_t>()) / 8.0f);
  }
  return m;
}

struct results {
  std::vector<uint32_t> ids;
  std::vector<float> dist;
};

void check_graph(const index& idx, int64_t rows, uint32_t degree) {
  check(idx.size() == rows && idx.graph_degree() == degree, "build: wrong index shape");
  const auto g = idx.graph();
  for (int64_t i = 0; i < rows; ++i) {
    const uint32_t* row = g.row(i);
    for (uint32_t j = 0; j < degree; ++j) {
      check(row[j] < static_cast<uint64_t>(rows), "build: a graph id >= rows");
      check(row[j] != static_cast<uint64_t>(i), "build: a self loop");
      for (uint32_t t = 0; t < j; ++t) check(row[t] != row[j], "build: an id twice in a row");
    }
  }
  const host_matrix& v = idx.vectors();
  if (v.type() == dtype::f32) {
    const float* f = static_cast<const float*>(v.data());
    for (int64_t i = 0; i < v.rows() * v.cols(); ++i)
      check(std::isfinite(f[i]), "build: a non-finite stored f32 value");
  } else if (v.type() == dtype::f16) {
    const half* h = static_cast<const half*>(v.data());
    for (int64_t i = 0; i < v.rows() * v.cols(); ++i)
      check((h[i].bits & 0x7C00u) != 0x7C00u, "build: a non-finite stored f16 value");
  }
}

int run_one(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const dtype t = in.PickValueInArray({dtype::f32, dtype::f16, dtype::u8, dtype::i8});
  const bool raw = in.ConsumeBool();
  const int64_t rows = in.ConsumeIntegralInRange<int64_t>(1, 48);
  const int64_t cols = in.ConsumeIntegralInRange<int64_t>(1, 12);

  index_params ip;
  ip.metric = in.PickValueInArray({metric::l2, metric::inner_product, metric::cosine});
  ip.graph_degree = in.ConsumeIntegralInRange<uint32_t>(0, 50);  // >= rows is an error
  ip.intermediate_graph_degree = in.ConsumeIntegralInRange<uint32_t>(0, 60);
  ip.knn.algo =
      in.PickValueInArray({knn_algo::automatic, knn_algo::nn_descent, knn_algo::brute_force});
  ip.knn.max_iterations = in.ConsumeIntegralInRange<uint32_t>(0, 6);
  ip.reorder = in.PickValueInArray({reorder_kind::rank, reorder_kind::distance});
  ip.storage =
      in.PickValueInArray({storage_type::same_as_input, storage_type::f32, storage_type::f16});
  ip.seed = in.ConsumeIntegral<uint64_t>();

  search_params sp;
  sp.itopk_size = in.ConsumeIntegralInRange<uint32_t>(0, 80);
  sp.search_width = in.ConsumeIntegralInRange<uint32_t>(0, 6);
  sp.max_iterations = in.ConsumeIntegralInRange<uint32_t>(0, 12);
  sp.min_iterations = in.ConsumeIntegralInRange<uint32_t>(0, 12);
  sp.hash_bits = in.PickValueInArray({0u, 0u, 7u, 8u, 9u, 10u, 12u});
  sp.hash_reset_interval = in.ConsumeIntegralInRange<uint32_t>(0, 3);
  sp.num_random_samplings = in.ConsumeIntegralInRange<uint32_t>(0, 3);
  sp.seed = in.ConsumeIntegral<uint64_t>();
  const uint32_t k = in.ConsumeIntegralInRange<uint32_t>(0, 52);
  const int64_t nq = in.ConsumeIntegralInRange<int64_t>(1, 4);
  const bool own_rows = in.ConsumeBool();  // queries: the first base rows, or decoded

  const host_matrix base = decode_matrix(in, t, rows, cols, raw);
  const host_matrix queries = own_rows && nq <= rows
                                  ? host_matrix::copy_of({base.data(), t, nq, cols})
                                  : decode_matrix(in, t, nq, cols, raw);

  resources one, two;
  one.target = two.target = backend::cpu;
  one.num_threads = 1;
  two.num_threads = 2;

  index idx;
  try {
    idx = build(one, ip, base);
  } catch (const cagra::error& e) {
    rejected(e);
    return 0;
  }
  check_graph(idx, rows, ip.graph_degree);
  {
    const index again = build(two, ip, base);  // succeeded once: must succeed again, identically
    check(std::equal(again.graph().data, again.graph().data + rows * ip.graph_degree,
                     idx.graph().data),
          "build: another thread count gave another graph");
  }
  {
    const std::string p = scratch_dir::path() + "/built.cagra";
    save(idx, p);
    const index back = load(p);
    check(back.size() == idx.size() && back.graph_degree() == idx.graph_degree() &&
              back.storage_dtype() == idx.storage_dtype() && back.metric() == idx.metric(),
          "save + load changed the index's shape");
    check(std::equal(back.graph().data, back.graph().data + rows * ip.graph_degree,
                     idx.graph().data) &&
              std::memcmp(back.vectors().data(), idx.vectors().data(),
                          idx.vectors().size_bytes()) == 0,
          "save + load changed the index's bytes");
  }

  results a, b;
  auto run = [&](const resources& res, results& r) {
    r.ids.assign(size_t(nq) * k, 0);
    r.dist.assign(size_t(nq) * k, 0);
    search(res, sp, idx, queries, k, {r.ids.data(), nq, k}, {r.dist.data(), nq, k});
  };
  try {
    run(one, a);
  } catch (const cagra::error& e) {
    rejected(e);
    return 0;
  }
  run(two, b);  // succeeded once: must succeed again, identically
  check(a.ids == b.ids && std::memcmp(a.dist.data(), b.dist.data(), a.dist.size() * 4) == 0,
        "search: another thread count gave other results");
  if (!raw) {
    check_results(a.ids, a.dist, nq, k, rows);
  } else {
    for (uint32_t id : a.ids)
      check(id == kInvalidId || id < static_cast<uint64_t>(rows), "search: an id >= rows");
  }
  return 0;
}

}  // namespace
}  // namespace cagra::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return cagra::fuzz::run_one(data, size);
}
