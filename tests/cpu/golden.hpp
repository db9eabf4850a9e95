// What the golden tests (test_golden.cpp, which explains the scheme, and test_golden_fashion.cpp)
// share: hashing, the CPU resources every case runs on, the index parameters, and builds and
// searches that record their hashes under a case name with check(), which compares them with the
// golden table (golden_table.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>

namespace cagra::test::golden {

/** 64-bit FNV-1a over raw bytes; chain calls through `h` to hash several buffers. */
inline uint64_t fnv1a(const void* data, size_t bytes, uint64_t h = 0xCBF29CE484222325ull) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  return h;
}
template <typename T>
uint64_t hash_vec(const std::vector<T>& v) {
  return fnv1a(v.data(), v.size() * sizeof(T));
}

/** The CPU backend on CAGRA_GOLDEN_THREADS threads (default 2): the hashes must be the same for
 *  any value. */
resources cpu_res();

/** Records one case: prints it in print mode (CAGRA_GOLDEN_PRINT=1), else compares with the
 *  table. `exact`: the bytes do not depend on float rounding (checked on every machine);
 *  otherwise only on the profile the table was generated on. (golden_table.cpp) */
void check(const std::string& name, uint64_t hash, bool exact);

/** Graph degree 32 from an intermediate degree of 64, with the given metric, kNN algorithm,
 *  reordering and storage. */
index_params params_of(metric m, knn_algo algo, reorder_kind r = reorder_kind::rank,
                       storage_type s = storage_type::same_as_input);

/** Whether build_checked records the stored vectors' hash, and whether those bytes are exact. */
enum class vec { skip, exact, inexact };

/** Builds on the CPU, checks the graph hash (and the stored vectors' hash unless vec::skip). */
cagra::index build_checked(const std::string& name, const index_params& p, const host_matrix& base,
                           bool exact, vec vectors = vec::skip);

/** Searches on the CPU and checks the ids' and the distances' hashes. */
void search_checked(const std::string& name, const cagra::index& idx, const host_matrix& q,
                    uint32_t k, const search_params& p, bool exact);

/** Default search parameters but for itopk_size. */
search_params sp(uint32_t itopk = 64);

/** search_checked with k = 10 (".k10") and with k = itopk (".kfull", the whole top-M list). */
void search_both(const std::string& name, const cagra::index& idx, const host_matrix& q,
                 const search_params& p, bool exact);

/** The search_params knobs one at a time (and one combination), each through search_both; the
 *  knobs that only matter before convergence also with max_iterations 3. */
void search_sweep(const std::string& prefix, const cagra::index& idx, const host_matrix& q,
                  bool exact);

}  // namespace cagra::test::golden
