// The array side of the extension: checks the vectors handed in from Python (dtype, shape,
// layout, device) with messages that say how to fix them, copies CUDA arrays to the host for
// the functions that run on the CPU, and hands C++ matrices to numpy without a copy.
#include <stdexcept>
#include <string>
#include <utility>

#include "ext_common.hpp"

#ifdef CAGRA_PY_CUDA
#include <cuda_runtime_api.h>
#endif

namespace cagra_py {

std::atomic<int64_t> g_host_copies{0};

namespace {

std::string format_shape(const any_array& a) {
  std::string s = "(";
  for (size_t i = 0; i < a.ndim(); ++i) s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

std::string dtype_name(nb::dlpack::dtype t) {
  using code = nb::dlpack::dtype_code;
  const char* base = "unknown";
  switch (static_cast<code>(t.code)) {
    case code::Int: base = "int"; break;
    case code::UInt: base = "uint"; break;
    case code::Float: base = "float"; break;
    case code::Bfloat: base = "bfloat"; break;
    case code::Complex: base = "complex"; break;
    case code::Bool: return "bool";
    default: break;
  }
  return base + std::to_string(t.bits);
}

/** The cagra dtype of a vector array; TypeError for anything but f32, f16, u8, i8. */
cagra::dtype vector_dtype(nb::dlpack::dtype t, const char* what) {
  using code = nb::dlpack::dtype_code;
  if (t.lanes == 1) {
    if (t.code == uint8_t(code::Float) && t.bits == 32) return cagra::dtype::f32;
    if (t.code == uint8_t(code::Float) && t.bits == 16) return cagra::dtype::f16;
    if (t.code == uint8_t(code::UInt) && t.bits == 8) return cagra::dtype::u8;
    if (t.code == uint8_t(code::Int) && t.bits == 8) return cagra::dtype::i8;
  }
  const std::string msg = std::string(what) + " has dtype " + dtype_name(t) +
                          "; cagra takes float32, float16, uint8 or int8 vectors, and converts "
                          "float64 host arrays to float32 (convert others with "
                          "x.astype(numpy.float32))";
  throw nb::type_error(msg.c_str());
}

}  // namespace

nb::dlpack::dtype to_dlpack(cagra::dtype t) {
  switch (t) {
    case cagra::dtype::f32: return nb::dtype<float>();
    case cagra::dtype::f16: return {uint8_t(nb::dlpack::dtype_code::Float), 16, 1};
    case cagra::dtype::u8: return nb::dtype<uint8_t>();
    case cagra::dtype::i8: return nb::dtype<int8_t>();
    case cagra::dtype::u32: return nb::dtype<uint32_t>();
    case cagra::dtype::i32: return nb::dtype<int32_t>();
  }
  throw std::runtime_error("unknown cagra dtype");
}

vectors_in::vectors_in(any_array a, const char* what) : array_(std::move(a)), what_(what) {
  if (array_.ndim() != 2) {
    const std::string msg = what_ + " must be a 2-D array [rows, dim], got shape " +
                            format_shape(array_) + " (one vector x: x.reshape(1, -1))";
    throw nb::value_error(msg.c_str());
  }
  const cagra::dtype t = vector_dtype(array_.dtype(), what);
  const auto rows = static_cast<int64_t>(array_.shape(0));
  const auto cols = static_cast<int64_t>(array_.shape(1));
  // Before the layout check: numpy gives an empty array strides that look non-contiguous, and
  // "not C-contiguous" would send the caller to fix the wrong thing.
  if (rows == 0 || cols == 0)
    throw cagra::error(what_ + " is empty (shape " + format_shape(array_) +
                       "): it needs at least one row and one column");
  const bool row_major =
      (rows <= 1 || array_.stride(0) == cols) && (cols <= 1 || array_.stride(1) == 1);
  if (!row_major) {
    const std::string msg = what_ +
                            " is not C-contiguous (row-major); pass "
                            "numpy.ascontiguousarray(x) (cupy.ascontiguousarray(x), "
                            "x.contiguous() for torch)";
    throw nb::value_error(msg.c_str());
  }
  const int dev = array_.device_type();
  if (dev == nb::device::cuda::value || dev == nb::device::cuda_managed::value) {
#ifndef CAGRA_PY_CUDA
    const std::string msg = what_ +
                            " is a CUDA array, but this cagra build has no CUDA backend; "
                            "pass a host array (cupy.asnumpy(x), x.cpu().numpy())";
    throw nb::value_error(msg.c_str());
#else
    on_device_ = true;
#endif
  } else if (dev != nb::device::cpu::value && dev != nb::device::cuda_host::value) {
    const std::string msg = what_ + " lives on DLPack device type " + std::to_string(dev) +
                            "; cagra takes host (CPU) arrays, or CUDA arrays";
    throw nb::value_error(msg.c_str());
  }
  view_ = cagra::dataset_view(array_.data(), t, rows, cols);
}

cagra::dataset_view vectors_in::host() {
  if (!on_device_) return view_;
#ifdef CAGRA_PY_CUDA
  if (copy_.empty()) copy_ = copy_to_host();
  return copy_.view();
#else
  return view_;
#endif
}

#ifdef CAGRA_PY_CUDA
/** Device -> host copy. The whole device is synchronized first: the producer may still be
 *  writing the array on a stream of its own, and DLPack gave us no stream to wait on. */
cagra::host_matrix vectors_in::copy_to_host() const {
  cagra::host_matrix m(view_.type, view_.rows, view_.cols);
  ++g_host_copies;
  int previous = 0;
  cudaError_t e = cudaGetDevice(&previous);
  if (e != cudaSuccess)
    throw cagra::error("copying " + what_ + " from the GPU failed: " + cudaGetErrorString(e));
  e = cudaSetDevice(array_.device_id());
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess && m.size_bytes() > 0)
    e = cudaMemcpy(m.data(), view_.data, m.size_bytes(), cudaMemcpyDefault);
  cudaSetDevice(previous);
  if (e != cudaSuccess)
    throw cagra::error("copying " + what_ + " from the GPU failed: " + cudaGetErrorString(e));
  return m;
}
#endif

nb::ndarray<nb::numpy, nb::ndim<2>> to_numpy(cagra::host_matrix&& m) {
  auto* owner = new cagra::host_matrix(std::move(m));
  nb::capsule deleter(owner, [](void* p) noexcept { delete static_cast<cagra::host_matrix*>(p); });
  return {owner->data(),
          {size_t(owner->rows()), size_t(owner->cols())},
          deleter,
          {},
          to_dlpack(owner->type())};
}

}  // namespace cagra_py
