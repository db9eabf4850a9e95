// A program outside the project that uses the installed C++ package: it builds an index over
// 4,000 random vectors, searches 200 random queries and checks recall@10 against the exact
// neighbors. Exit status 0 when the recall is at least 0.9. scripts/check-install.sh compiles it
// against an installed prefix, once with cagra::cagra and once with cagra::cagra_static.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>  // not used: compiled to check that every public header came along

int main() {
  constexpr int64_t kRows = 4000, kQueries = 200, kDim = 32;
  constexpr uint32_t kK = 10;
  try {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    cagra::host_matrix base(cagra::dtype::f32, kRows, kDim);
    cagra::host_matrix queries(cagra::dtype::f32, kQueries, kDim);
    for (cagra::host_matrix* m : {&base, &queries}) {
      auto values = m->as<float>();
      for (int64_t i = 0; i < values.rows * values.cols; ++i) values.data[i] = uniform(rng);
    }

    cagra::index_params ip;
    ip.graph_degree = 32;
    ip.intermediate_graph_degree = 64;
    const cagra::index idx = cagra::build({}, ip, base);

    std::vector<uint32_t> ids(kQueries * kK);
    std::vector<float> distances(kQueries * kK);
    cagra::search_params sp;
    sp.itopk_size = 64;
    cagra::search({}, sp, idx, queries, kK, {ids.data(), kQueries, kK},
                  {distances.data(), kQueries, kK});

    const cagra::knn_graph exact = cagra::brute_force_knn({}, cagra::metric::l2, base, queries, kK);
    const double recall = cagra::recall({ids.data(), kQueries, kK}, exact.view(), kK);
    std::printf("cagra %s: %lld x %lld, recall@%u %.4f\n", cagra::version(),
                static_cast<long long>(kRows), static_cast<long long>(kDim), kK, recall);
    return recall >= 0.9 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
