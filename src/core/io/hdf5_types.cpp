// The HDF5 element types the reader accepts, and the type the matrix gets for each
// (hdf5_reader.hpp): float32/float64 as f32, u8, i8, i32, u32, and 32- or 64-bit integer
// neighbor ids as range-checked u32. Standard layouts only, so that libhdf5's generic
// conversion code never sees an odd type from a corrupt file.
#include "core/io/hdf5_reader.hpp"

#ifdef CAGRA_HAVE_HDF5
#include <initializer_list>

namespace cagra::io::detail::h5 {

namespace {

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER: return "integer";
    case H5T_FLOAT: return "float";
    case H5T_TIME: return "time";
    case H5T_STRING: return "string";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_COMPOUND: return "compound";
    case H5T_REFERENCE: return "reference";
    case H5T_ENUM: return "enum";
    case H5T_VLEN: return "variable-length";
    case H5T_ARRAY: return "array";
    default: return "unknown";
  }
}

bool equal_to_any(hid_t t, std::initializer_list<hid_t> candidates) {
  for (hid_t c : candidates)
    if (H5Tequal(t, c) > 0) return true;
  return false;
}

}  // namespace

element_type pick_type(hid_t type, bool as_ids, const std::string& where) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  element_type e;
  if (as_ids) {
    if (equal_to_any(type, {H5T_STD_I32LE, H5T_STD_I32BE, H5T_STD_I64LE, H5T_STD_I64BE})) {
      e = {H5T_NATIVE_INT64, dtype::u32, true, true};
    } else if (equal_to_any(type, {H5T_STD_U32LE, H5T_STD_U32BE, H5T_STD_U64LE, H5T_STD_U64BE})) {
      e = {H5T_NATIVE_UINT64, dtype::u32, true, false};
    } else {
      CAGRA_FAIL(
          "%s: neighbor ids must be 32- or 64-bit integers (the dataset holds HDF5 %s, %zu "
          "bytes)",
          where.c_str(), class_name(cls), size);
    }
    return e;
  }
  if (equal_to_any(type, {H5T_IEEE_F32LE, H5T_IEEE_F32BE, H5T_IEEE_F64LE, H5T_IEEE_F64BE})) {
    e = {H5T_NATIVE_FLOAT, dtype::f32};
  } else if (equal_to_any(type, {H5T_STD_U8LE, H5T_STD_U8BE})) {
    e = {H5T_NATIVE_UINT8, dtype::u8};
  } else if (equal_to_any(type, {H5T_STD_I8LE, H5T_STD_I8BE})) {
    e = {H5T_NATIVE_INT8, dtype::i8};
  } else if (equal_to_any(type, {H5T_STD_I32LE, H5T_STD_I32BE})) {
    e = {H5T_NATIVE_INT32, dtype::i32};
  } else if (equal_to_any(type, {H5T_STD_U32LE, H5T_STD_U32BE})) {
    e = {H5T_NATIVE_UINT32, dtype::u32};
  } else {
    CAGRA_FAIL(
        "%s: unsupported element type (HDF5 %s, %zu bytes); supported: float32, float64, uint8, "
        "int8, int32, uint32 (and 64-bit integers for neighbor ids), in the standard layouts",
        where.c_str(), class_name(cls), size);
  }
  return e;
}

H5T_conv_ret_t refuse_overflow(H5T_conv_except_t except, hid_t, hid_t, void*, void*, void* data) {
  if (except == H5T_CONV_EXCEPT_RANGE_HI || except == H5T_CONV_EXCEPT_RANGE_LOW) {
    static_cast<conv_state*>(data)->overflow = true;
    return H5T_CONV_ABORT;
  }
  return H5T_CONV_UNHANDLED;
}

}  // namespace cagra::io::detail::h5

#endif  // CAGRA_HAVE_HDF5
