// TEMPORARY link stubs while the stages are written; each is replaced by its real file.
#include <cagra/cagra.hpp>
#include <cagra/io.hpp>

namespace cagra {
#define CAGRA_STUB(name) CAGRA_FAIL("%s: not implemented yet", name)
index build(const resources&, const index_params&, dataset_view, build_report*) { CAGRA_STUB("build"); }
knn_graph build_knn_graph(const resources&, const index_params&, dataset_view) { CAGRA_STUB("build_knn_graph"); }
std::vector<uint32_t> optimize(const resources&, const knn_graph&, uint32_t, reorder_kind, dataset_view, metric) { CAGRA_STUB("optimize"); }
void search(const resources&, const search_params&, const index&, dataset_view, uint32_t, matrix_view<uint32_t>, matrix_view<float>) { CAGRA_STUB("search"); }
knn_graph brute_force_knn(const resources&, metric, dataset_view, dataset_view, uint32_t, bool) { CAGRA_STUB("brute_force_knn"); }
void index_params::validate(int64_t) const {}
void search_params::validate(uint32_t, int64_t, uint32_t) const {}
double recall(matrix_view<const uint32_t>, matrix_view<const uint32_t>, uint32_t) { CAGRA_STUB("recall"); }
bool cuda_available() { return false; }
}  // namespace cagra
