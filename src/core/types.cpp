// Names of enums, parsing of user-facing strings, and the owning host matrix / index plumbing.
#include <cstring>
#include <new>
#include <thread>
#include <utility>

#include <cagra/cagra.hpp>

#include "core/half.hpp"

namespace cagra {

float to_float(half h) { return core::half_to_float(h); }
half to_half(float f) { return core::float_to_half(f); }

const char* to_string(metric m) {
  switch (m) {
    case metric::l2: return "l2";
    case metric::inner_product: return "ip";
    case metric::cosine: return "cosine";
  }
  return "unknown";
}

const char* to_string(dtype t) {
  switch (t) {
    case dtype::f32: return "f32";
    case dtype::f16: return "f16";
    case dtype::u8: return "u8";
    case dtype::i8: return "i8";
    case dtype::u32: return "u32";
    case dtype::i32: return "i32";
  }
  return "unknown";
}

metric parse_metric(const std::string& s) {
  if (s == "l2" || s == "L2" || s == "euclidean") return metric::l2;
  if (s == "ip" || s == "inner_product" || s == "dot") return metric::inner_product;
  if (s == "cosine" || s == "angular") return metric::cosine;
  CAGRA_FAIL("unknown metric '%s' (expected l2, ip or cosine)", s.c_str());
}

const char* to_string(backend b) {
  switch (b) {
    case backend::automatic: return "auto";
    case backend::cpu: return "cpu";
    case backend::cuda: return "cuda";
  }
  return "unknown";
}

const char* to_string(knn_algo a) {
  switch (a) {
    case knn_algo::automatic: return "auto";
    case knn_algo::nn_descent: return "nn_descent";
    case knn_algo::brute_force: return "brute_force";
  }
  return "unknown";
}

const char* to_string(reorder_kind r) { return r == reorder_kind::rank ? "rank" : "distance"; }

const char* to_string(search_algo a) {
  switch (a) {
    case search_algo::automatic: return "automatic";
    case search_algo::single_cta: return "single_cta";
    case search_algo::multi_cta: return "multi_cta";
  }
  return "unknown";
}

const char* to_string(filter_algo a) {
  switch (a) {
    case filter_algo::automatic: return "automatic";
    case filter_algo::graph: return "graph";
    case filter_algo::exact: return "exact";
  }
  return "unknown";
}

const char* to_string(traversal_type t) {
  switch (t) {
    case traversal_type::exact: return "exact";
    case traversal_type::int8: return "int8";
  }
  return "unknown";
}

traversal_type parse_traversal(const std::string& s) {
  if (s == "exact") return traversal_type::exact;
  if (s == "int8") return traversal_type::int8;
  CAGRA_FAIL("unknown traversal '%s' (expected exact or int8)", s.c_str());
}

const char* to_string(rows_location r) {
  switch (r) {
    case rows_location::automatic: return "auto";
    case rows_location::device: return "device";
    case rows_location::host: return "host";
  }
  return "unknown";
}

rows_location parse_rows_location(const std::string& s) {
  if (s == "auto") return rows_location::automatic;
  if (s == "device") return rows_location::device;
  if (s == "host") return rows_location::host;
  CAGRA_FAIL("unknown stored-rows location '%s' (expected auto, device or host)", s.c_str());
}

backend parse_backend(const std::string& s) {
  if (s == "auto") return backend::automatic;
  if (s == "cpu") return backend::cpu;
  if (s == "cuda" || s == "gpu") return backend::cuda;
  CAGRA_FAIL("unknown backend '%s' (expected auto, cpu or cuda)", s.c_str());
}

host_matrix host_matrix::copy_of(const dataset_view& v) {
  CAGRA_EXPECTS(v.space == memory_space::host, "copy_of needs host memory");
  host_matrix m = host_matrix::uninitialized(v.type, v.rows, v.cols);
  if (m.size_bytes() > 0) std::memcpy(m.data(), v.data, m.size_bytes());
  return m;
}

void host_matrix::append_rows(const host_matrix& more) {
  CAGRA_EXPECTS(more.type_ == type_ && more.cols_ == cols_,
                "cannot append a %lld x %lld %s matrix to a %lld x %lld %s one",
                (long long)more.rows_, (long long)more.cols_, to_string(more.type_),
                (long long)rows_, (long long)cols_, to_string(type_));
  bytes_.insert(bytes_.end(), more.bytes_.begin(), more.bytes_.end());
  rows_ += more.rows_;
}

void host_matrix::truncate_rows(int64_t rows) {
  CAGRA_EXPECTS(rows >= 0 && rows <= rows_, "cannot keep %lld of %lld rows", (long long)rows,
                (long long)rows_);
  rows_ = rows;
  bytes_.resize(static_cast<size_t>(rows) * static_cast<size_t>(cols_) * dtype_size(type_));
}

void host_matrix::reserve_rows(int64_t rows) {
  const size_t row_bytes = static_cast<size_t>(cols_) * dtype_size(type_);
  const size_t want = static_cast<size_t>(rows) * row_bytes;
  if (want > bytes_.capacity()) bytes_.reserve(std::max(want, bytes_.size() + bytes_.size() / 2));
}

index::index(cagra::metric m, host_matrix vectors, std::vector<uint32_t> graph, uint32_t degree)
    : metric_(m), graph_degree_(degree), vectors_(std::move(vectors)), graph_(std::move(graph)) {
  const int64_t n = vectors_.rows();
  CAGRA_EXPECTS(n > 0 && n <= kMaxRows, "index size %lld outside [1, 2^31-1]", (long long)n);
  CAGRA_EXPECTS(degree > 0, "graph degree must be positive");
  CAGRA_EXPECTS(graph_.size() == static_cast<size_t>(n) * degree,
                "graph holds %zu ids, expected rows x degree = %lld x %u", graph_.size(),
                (long long)n, degree);
  for (uint32_t id : graph_)
    CAGRA_EXPECTS(id < static_cast<uint64_t>(n), "graph id %u out of range [0, %lld)", id,
                  (long long)n);
}
index::~index() = default;
index::index(index&&) noexcept = default;
// A backend's copy may pin the rows in host memory (search_params::stored_rows = host): it goes
// before the rows it pins, as the destructor's order (cache_ declared after vectors_) does.
index& index::operator=(index&& o) noexcept {
  if (this != &o) {
    this->~index();
    new (this) index(std::move(o));
  }
  return *this;
}

const char* version() {
#ifdef CAGRA_VERSION
  return CAGRA_VERSION;
#else
  return "0.0.0";
#endif
}

}  // namespace cagra
