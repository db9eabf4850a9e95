// TEMPORARY link stubs for the dataset readers/writers; deleted when src/core/io/ lands.
#include <cagra/io.hpp>
namespace cagra::io {
host_matrix read_matrix(const std::string&) { CAGRA_FAIL("read_matrix: not implemented yet"); }
neighbors_file read_neighbors(const std::string&) { CAGRA_FAIL("read_neighbors: not implemented yet"); }
void write_matrix(const std::string&, dataset_view) { CAGRA_FAIL("write_matrix: not implemented yet"); }
void write_neighbors(const std::string&, matrix_view<const uint32_t>, matrix_view<const float>) { CAGRA_FAIL("write_neighbors: not implemented yet"); }
}  // namespace cagra::io
