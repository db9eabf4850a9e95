// The index and queries the GPU latency tools measure (bench/cuda): a saved 1M-scale index in
// DRAM when CAGRA_LATENCY_INDEX (a .cagra file) and CAGRA_LATENCY_QUERIES are set
// (scripts/dev/device-latency.sh), else the suite's bigann10k index (L2-resident).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>

#include "core/convert.hpp"

namespace cagra::test {

/** The mean microseconds of f() over `reps` calls, after reps / 10 + 1 calls of warm-up. */
template <typename F>
double mean_us(int reps, F&& f) {
  using clk = std::chrono::steady_clock;
  for (int r = 0; r < reps / 10 + 1; ++r) f();  // warm-up
  const auto t0 = clk::now();
  for (int r = 0; r < reps; ++r) f();
  return std::chrono::duration<double, std::micro>(clk::now() - t0).count() / reps;
}

struct latency_data {
  std::unique_ptr<cagra::index> loaded;
  std::unique_ptr<host_matrix> loaded_queries;
  const cagra::index* idx = nullptr;
  const host_matrix* queries = nullptr;
  std::string name;
};

/** The environment's index and queries, or `idx` / `queries` (named bigann10k). */
inline latency_data latency_data_or(const cagra::index* idx, const host_matrix* queries) {
  latency_data d;
  d.idx = idx;
  d.queries = queries;
  d.name = "bigann10k";
  const char* index_path = std::getenv("CAGRA_LATENCY_INDEX");
  const char* query_path = std::getenv("CAGRA_LATENCY_QUERIES");
  if (index_path && query_path) {
    d.loaded = std::make_unique<cagra::index>(cagra::load(index_path));
    d.loaded_queries = std::make_unique<host_matrix>(io::read_matrix(query_path));
    d.idx = d.loaded.get();
    d.queries = d.loaded_queries.get();
    d.name = index_path;
  }
  return d;
}

/** The first `max_rows` queries of `d`, each a one-row matrix in its index's storage layout
 *  (what cuda::search takes, converted once here rather than in every timed call). */
inline std::vector<host_matrix> one_row_queries(const latency_data& d, uint32_t max_rows) {
  const uint32_t n = std::min<uint32_t>(max_rows, uint32_t(d.queries->rows()));
  std::vector<host_matrix> rows;
  for (uint32_t i = 0; i < n; ++i) {
    const dataset_view v(d.queries->row_bytes(i), d.queries->type(), 1, d.queries->cols());
    rows.push_back(core::queries_for(v, d.idx->storage_dtype(), d.idx->metric(), 1));
  }
  return rows;
}

}  // namespace cagra::test
