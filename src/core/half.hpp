// IEEE binary16 <-> float on the host, exactly (float_to_half rounds to nearest even): the
// conversions of the CPU distance kernels, of the input conversion to f16 storage, and of the
// public cagra::to_float / cagra::to_half. Inline: the CPU's scalar f16 kernels call them per
// element.
#pragma once

#include <cstdint>
#include <cstring>

#include <cagra/types.hpp>

namespace cagra::core {

inline float half_to_float(half h) {
  uint32_t sign = (h.bits & 0x8000u) << 16, exp = (h.bits >> 10) & 0x1Fu, man = h.bits & 0x3FFu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400u) == 0);
      bits = sign | ((127 - 15 - e) << 23) | ((man & 0x3FFu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline half float_to_half(float f) {  // round to nearest even
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xFF) - 127 + 15;
  uint32_t man = x & 0x7FFFFFu;
  if (((x >> 23) & 0xFF) == 0xFF)
    return {static_cast<uint16_t>(sign | 0x7C00u | (man ? 0x200u : 0))};
  if (exp >= 31) return {static_cast<uint16_t>(sign | 0x7C00u)};
  if (exp <= 0) {
    if (exp < -10) return {static_cast<uint16_t>(sign)};
    man |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t h = man >> shift, rem = man & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return {static_cast<uint16_t>(sign | h)};
  }
  uint32_t h = sign | (static_cast<uint32_t>(exp) << 10) | (man >> 13);
  uint32_t rem = man & 0x1FFFu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: fine
  return {static_cast<uint16_t>(h)};
}

}  // namespace cagra::core
