// Files and recall from Python: vector files (every format cagra::io reads) and neighbor or
// ground-truth files into numpy arrays without a copy, and recall@k of two id matrices.
#include <string>
#include <utility>

#include "ext_common.hpp"

#include <cagra/io.hpp>

namespace cagra_py {

nb::ndarray<nb::numpy, nb::ndim<2>> read_matrix(const std::string& path) {
  cagra::host_matrix mat;
  {
    nb::gil_scoped_release nogil;
    mat = cagra::io::read_matrix(path);
  }
  return to_numpy(std::move(mat));
}

nb::tuple read_neighbors(const std::string& path) {
  cagra::io::neighbors_file f;
  {
    nb::gil_scoped_release nogil;
    f = cagra::io::read_neighbors(path);
  }
  nb::object distances = nb::none();
  if (!f.distances.empty()) distances = nb::cast(to_numpy(std::move(f.distances)));
  return nb::make_tuple(to_numpy(std::move(f.ids)), distances);
}

double recall(const ids_in& found, const ids_in& truth, uint32_t k) {
  const auto view = [](const ids_in& a) {
    return cagra::matrix_view<const uint32_t>{a.data(), int64_t(a.shape(0)), int64_t(a.shape(1))};
  };
  return cagra::recall(view(found), view(truth), k);
}

}  // namespace cagra_py
