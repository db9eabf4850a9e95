/**
 * @file types.hpp
 * @brief Element types, metrics and the matrix views/containers that every API call takes.
 *
 * Convention (the only one): a matrix is row-major, `rows x cols`, element (i, j) at
 * `data[i * cols + j]`. Vector ids are `uint32_t`; the most significant bit is reserved by the
 * search (parent flag), so an index holds at most 2^31 - 1 vectors.
 */
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <cagra/error.hpp>

namespace cagra {

/** Largest number of vectors an index can hold (the id's MSB is the search's parent flag). */
constexpr int64_t kMaxRows = (int64_t{1} << 31) - 1;
/** Id written to result slots that have no neighbor (k larger than what the search found). */
constexpr uint32_t kInvalidId = 0xFFFFFFFFu;

/** Distance measure. Search results are ordered by ascending "distance":
 *  - l2: squared Euclidean distance;
 *  - inner_product: the negated dot product, -<q, x> (larger dot = nearer);
 *  - cosine: 1 - cos(q, x); vectors are normalized when the index is built. */
enum class metric : uint32_t { l2 = 0, inner_product = 1, cosine = 2 };

/** Element type of a matrix. f16 is IEEE binary16 stored as 16 bits (cagra::half). */
enum class dtype : uint32_t { f32 = 0, f16 = 1, u8 = 2, i8 = 3, u32 = 4, i32 = 5 };

/** Where the memory behind a view lives. The CPU backend accepts host memory only. */
enum class memory_space : uint32_t { host = 0, device = 1 };

/** IEEE binary16 value as raw bits (the public headers stay free of CUDA's __half). */
struct half {
  uint16_t bits = 0;
};
/** The value of `h` as a float (exact). */
float to_float(half h);
/** `f` rounded to the nearest binary16 (ties to even; overflow to infinity). */
half to_half(float f);

/** Size in bytes of one element of `t`. */
constexpr size_t dtype_size(dtype t) {
  switch (t) {
    case dtype::f32:
    case dtype::u32:
    case dtype::i32: return 4;
    case dtype::f16: return 2;
    case dtype::u8:
    case dtype::i8: return 1;
  }
  return 0;
}

/** The dtype tag of a C++ element type. */
// One line each, a table: not formatted.
// clang-format off
template <typename T> constexpr dtype dtype_of();
template <> constexpr dtype dtype_of<float>() { return dtype::f32; }
template <> constexpr dtype dtype_of<half>() { return dtype::f16; }
template <> constexpr dtype dtype_of<uint8_t>() { return dtype::u8; }
template <> constexpr dtype dtype_of<int8_t>() { return dtype::i8; }
template <> constexpr dtype dtype_of<uint32_t>() { return dtype::u32; }
template <> constexpr dtype dtype_of<int32_t>() { return dtype::i32; }
// clang-format on

/** Names used in messages, files and on the command line ("l2", "ip", "cosine"; "f32", "u8",
 *  ...). */
const char* to_string(metric m);
const char* to_string(dtype t);
/** Parses "l2" | "ip" | "inner_product" | "cosine"; throws cagra::error otherwise. */
metric parse_metric(const std::string& s);

/** Non-owning typed view of a row-major matrix. */
template <typename T>
struct matrix_view {
  T* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  memory_space space = memory_space::host;

  T* row(int64_t i) const { return data + i * cols; }
  int64_t size() const { return rows * cols; }
  bool empty() const { return data == nullptr || rows == 0; }
  /** A view of the same memory with const elements (only for non-const T). */
  template <typename U = T, typename = std::enable_if_t<!std::is_const_v<U>>>
  operator matrix_view<const U>() const {
    return {data, rows, cols, space};
  }
};

/** Non-owning view of a matrix whose element type is known at run time. Every API call that
 *  takes vectors takes this; it is built implicitly from a typed matrix_view. */
struct dataset_view {
  const void* data = nullptr;
  dtype type = dtype::f32;
  int64_t rows = 0;
  int64_t cols = 0;
  memory_space space = memory_space::host;

  dataset_view() = default;
  dataset_view(const void* d, dtype t, int64_t r, int64_t c, memory_space s = memory_space::host)
      : data(d), type(t), rows(r), cols(c), space(s) {}
  template <typename T>
  dataset_view(matrix_view<T> v)  // NOLINT: implicit on purpose
      : data(v.data), type(dtype_of<std::remove_const_t<T>>()), rows(v.rows), cols(v.cols),
        space(v.space) {}

  size_t row_bytes() const { return static_cast<size_t>(cols) * dtype_size(type); }
  template <typename T>
  matrix_view<const T> as() const {
    CAGRA_EXPECTS(type == dtype_of<T>(), "matrix holds %s, not %s", to_string(type),
                  to_string(dtype_of<T>()));
    return {static_cast<const T*>(data), rows, cols, space};
  }
};

namespace detail {
/** std::allocator whose value-initialization of bytes does nothing, so that a matrix about to be
 *  overwritten is not zero-filled first (one thread faulting in and zeroing gigabytes). */
template <typename T>
struct default_init_allocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = default_init_allocator<U>;
  };
  default_init_allocator() = default;
  template <typename U>
  default_init_allocator(const default_init_allocator<U>&) noexcept {}  // NOLINT: rebind
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
};
}  // namespace detail

/** Owning host matrix of any dtype (what the file readers return). */
class host_matrix {
 public:
  host_matrix() = default;
  /** rows x cols of zeros. */
  host_matrix(dtype t, int64_t rows, int64_t cols)
      : type_(t), rows_(rows), cols_(cols),
        bytes_(static_cast<size_t>(rows) * static_cast<size_t>(cols) * dtype_size(t), 0) {}
  /** rows x cols left as the allocator gives them: for a writer that sets every byte (the
   *  conversions and copies fill it over threads, so the pages are also faulted in in parallel). */
  static host_matrix uninitialized(dtype t, int64_t rows, int64_t cols) {
    host_matrix m;
    m.type_ = t;
    m.rows_ = rows;
    m.cols_ = cols;
    m.bytes_.resize(static_cast<size_t>(rows) * static_cast<size_t>(cols) * dtype_size(t));
    return m;
  }

  dtype type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  bool empty() const { return rows_ == 0; }
  size_t size_bytes() const { return bytes_.size(); }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  const uint8_t* row_bytes(int64_t i) const {
    return bytes_.data() + static_cast<size_t>(i) * static_cast<size_t>(cols_) * dtype_size(type_);
  }

  dataset_view view() const { return {bytes_.data(), type_, rows_, cols_}; }
  operator dataset_view() const { return view(); }  // NOLINT: implicit on purpose
  template <typename T>
  matrix_view<T> as() {
    CAGRA_EXPECTS(type_ == dtype_of<std::remove_const_t<T>>(), "matrix holds %s, not %s",
                  to_string(type_), to_string(dtype_of<std::remove_const_t<T>>()));
    return {reinterpret_cast<T*>(bytes_.data()), rows_, cols_};
  }
  template <typename T>
  matrix_view<const T> as() const {
    return view().as<T>();
  }
  /** Copies `v` (host memory) into a new owning matrix. */
  static host_matrix copy_of(const dataset_view& v);
  /** Appends the rows of `more` (same dtype and number of columns). */
  void append_rows(const host_matrix& more);
  /** Keeps the first `rows` rows (rows <= rows()). */
  void truncate_rows(int64_t rows);
  /** Reserves room for `rows` rows, so that appends up to that size do not reallocate; when it
   *  must grow, it grows by half again at least (repeated small appends copy rarely). */
  void reserve_rows(int64_t rows);

 private:
  dtype type_ = dtype::f32;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  std::vector<uint8_t, detail::default_init_allocator<uint8_t>> bytes_;
};

}  // namespace cagra
