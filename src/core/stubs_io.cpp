// TEMPORARY link stubs for io/serialize/analyze; replaced by the real files.
#include <cagra/cagra.hpp>
#include <cagra/io.hpp>
namespace cagra {
void save(const index&, const std::string&) { CAGRA_FAIL("save: not implemented yet"); }
index load(const std::string&) { CAGRA_FAIL("load: not implemented yet"); }
graph_stats analyze(const resources&, matrix_view<const uint32_t>, int64_t) { CAGRA_FAIL("analyze: not implemented yet"); }
namespace io {
host_matrix read_matrix(const std::string&) { CAGRA_FAIL("read_matrix: not implemented yet"); }
neighbors_file read_neighbors(const std::string&) { CAGRA_FAIL("read_neighbors: not implemented yet"); }
void write_matrix(const std::string&, dataset_view) { CAGRA_FAIL("write_matrix: not implemented yet"); }
void write_neighbors(const std::string&, matrix_view<const uint32_t>, matrix_view<const float>) { CAGRA_FAIL("write_neighbors: not implemented yet"); }
}  // namespace io
}  // namespace cagra
