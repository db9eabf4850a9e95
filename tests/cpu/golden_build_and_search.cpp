// The golden cases' building and searching (declared in golden.hpp): everything on the CPU
// backend through the public API, on CAGRA_GOLDEN_THREADS threads (default 2), each graph and
// search result recorded with check() (golden_table.cpp).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "golden.hpp"
#include "test_data.hpp"

namespace cagra::test::golden {
namespace {

/** Threads for every build and search (CAGRA_GOLDEN_THREADS, default 2): the hashes must be the
 *  same for any value. */
int golden_threads() {
  const char* e = std::getenv("CAGRA_GOLDEN_THREADS");
  return e != nullptr && std::atoi(e) > 0 ? std::atoi(e) : 2;
}

}  // namespace

resources cpu_res() {
  resources res;
  res.target = backend::cpu;
  res.num_threads = golden_threads();
  return res;
}

index_params params_of(metric m, knn_algo algo, reorder_kind r, storage_type s) {
  index_params p;
  p.metric = m;
  p.graph_degree = 32;
  p.intermediate_graph_degree = 64;
  p.knn.algo = algo;
  p.reorder = r;
  p.storage = s;
  return p;
}

/** Builds on the CPU, checks the graph hash (and the stored vectors' hash unless vec::skip). */
cagra::index build_checked(const std::string& name, const index_params& p, const host_matrix& base,
                           bool exact, vec vectors) {
  build_report rep;
  cagra::index idx = build(cpu_res(), p, base, &rep);
  EXPECT_EQ(rep.backend_used, backend::cpu);
  EXPECT_EQ(rep.knn_used, p.knn.algo);
  check(name + ".graph", fnv1a(idx.graph().data, size_t(idx.graph().size()) * sizeof(uint32_t)),
        exact);
  if (p.knn.algo == knn_algo::nn_descent) check(name + ".knn_iterations", rep.knn_iterations, true);
  if (vectors != vec::skip)
    check(name + ".vectors", fnv1a(idx.vectors().data(), idx.vectors().size_bytes()),
          vectors == vec::exact);
  return idx;
}

/** Searches on the CPU and checks the ids' and the distances' hashes. */
void search_checked(const std::string& name, const cagra::index& idx, const host_matrix& q,
                    uint32_t k, const search_params& p, bool exact) {
  std::vector<uint32_t> ids(size_t(q.rows()) * k, 0);
  std::vector<float> dist(size_t(q.rows()) * k, 0);
  search(cpu_res(), p, idx, q, k, {ids.data(), q.rows(), k}, {dist.data(), q.rows(), k});
  check(name + ".ids", hash_vec(ids), exact);
  check(name + ".dist", hash_vec(dist), exact);
}

search_params sp(uint32_t itopk) {
  search_params p;
  p.itopk_size = itopk;
  return p;
}

/** search_checked with k = 10 (".k10") and with k = itopk (".kfull", the whole top-M list). */
void search_both(const std::string& name, const cagra::index& idx, const host_matrix& q,
                 const search_params& p, bool exact) {
  search_checked(name + ".k10", idx, q, 10, p, exact);
  search_checked(name + ".kfull", idx, q, p.itopk_size, p, exact);
}

/** The search_params knobs, one at a time (and one combination), each recorded twice: k = 10,
 *  and k = itopk (the whole internal top-M list, whose tail is far more sensitive to the
 *  traversal than the first 10, which mostly converge to the exact answer). The knobs that only
 *  matter before convergence (seed, random samplings) are also recorded with max_iterations 3. */
void search_sweep(const std::string& prefix, const cagra::index& idx, const host_matrix& q,
                  bool exact) {
  struct variant {
    std::string name;
    search_params p;
  };
  std::vector<variant> v;
  auto add = [&](std::string name, uint32_t itopk, auto&& set) {
    search_params p = sp(itopk);
    set(p);
    v.push_back({std::move(name), p});
  };
  auto none = [](search_params&) {};
  v.push_back({"defaults", search_params{}});
  add("itopk16", 16, none);
  add("itopk32", 32, none);
  add("itopk64", 64, none);
  add("itopk256", 256, none);
  add("itopk32.width1", 32, [](search_params& p) { p.search_width = 1; });
  add("itopk32.width4", 32, [](search_params& p) { p.search_width = 4; });
  add("itopk32.reset2", 32, [](search_params& p) { p.hash_reset_interval = 2; });
  add("itopk32.hashbits10", 32, [](search_params& p) { p.hash_bits = 10; });
  add("itopk32.hashbits10.reset2", 32,
      [](search_params& p) { p.hash_bits = 10, p.hash_reset_interval = 2; });
  add("itopk32.maxiter5", 32, [](search_params& p) { p.max_iterations = 5; });
  add("itopk32.miniter40", 32, [](search_params& p) { p.min_iterations = 40; });
  add("itopk32.samplings3", 32, [](search_params& p) { p.num_random_samplings = 3; });
  add("itopk32.seed7", 32, [](search_params& p) { p.seed = 7; });
  add("itopk32.maxiter3", 32, [](search_params& p) { p.max_iterations = 3; });
  add("itopk32.maxiter3.samplings3", 32,
      [](search_params& p) { p.max_iterations = 3, p.num_random_samplings = 3; });
  add("itopk32.maxiter3.seed7", 32, [](search_params& p) { p.max_iterations = 3, p.seed = 7; });
  add("itopk64.width4.hashbits10.reset2.samplings3.seed7", 64, [](search_params& p) {
    p.search_width = 4, p.hash_bits = 10, p.hash_reset_interval = 2, p.num_random_samplings = 3,
    p.seed = 7;
  });
  for (const variant& c : v) search_both(prefix + c.name, idx, q, c.p, exact);
}

}  // namespace cagra::test::golden
