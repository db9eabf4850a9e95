// hnswlib's on-disk index layout (what HierarchicalNSW::saveIndex writes and loadIndex reads),
// shared by the export (hnswlib_export.cpp) and the import (hnswlib_import.cpp). The layout is
// written down here field by field, little-endian, so that neither side depends on hnswlib's
// headers or on struct padding.
//
//   header (96 bytes): u64 offset_level0 (0), u64 max_elements, u64 element_count,
//     u64 size_data_per_element, u64 label_offset, u64 data_offset, i32 max_level,
//     u32 entry_point, u64 maxM, u64 maxM0, u64 M, f64 mult, u64 ef_construction
//   level 0, element_count records of size_data_per_element bytes:
//     u32 link header (bits 0-15: link count; byte 2, bit 0: deleted mark), maxM0 x u32 links,
//     the vector (dim x f32), u64 label
//   then per element: u32 byte size of its upper lists (level x (4 + 4 maxM); 0 on level 0),
//     and for levels 1 .. level: u32 link count, maxM x u32 links.
#pragma once

#include <cstdint>
#include <cstring>

#include <cagra/types.hpp>

#include "core/half.hpp"

namespace cagra::core::hnsw {

/** Byte size of the file header. */
constexpr uint64_t kHeaderBytes = 8 * 6 + 4 + 4 + 8 * 3 + 8 + 8;
/** The deleted mark: bit 0 of byte 2 of a level-0 link header (hnswlib's DELETE_MARK). */
constexpr uint32_t kDeletedBit = 1u << 16;
/** Link counts are 16 bits. */
constexpr uint32_t kMaxLinks = 0xFFFFu;

struct header {
  uint64_t offset_level0 = 0;
  uint64_t max_elements = 0;
  uint64_t element_count = 0;
  uint64_t size_data_per_element = 0;
  uint64_t label_offset = 0;
  uint64_t data_offset = 0;
  int32_t max_level = 0;
  uint32_t entry_point = 0;
  uint64_t maxM = 0;
  uint64_t maxM0 = 0;
  uint64_t M = 0;
  double mult = 0;
  uint64_t ef_construction = 0;

  /** Bytes of one level-0 link list (header + maxM0 slots) and of one upper-level list. */
  uint64_t level0_links_bytes() const { return 4 + 4 * maxM0; }
  uint64_t upper_links_bytes() const { return 4 + 4 * maxM; }

  void encode(uint8_t* out) const {
    uint8_t* p = out;
    const auto put = [&p](const void* v, size_t n) {
      std::memcpy(p, v, n);
      p += n;
    };
    put(&offset_level0, 8);
    put(&max_elements, 8);
    put(&element_count, 8);
    put(&size_data_per_element, 8);
    put(&label_offset, 8);
    put(&data_offset, 8);
    put(&max_level, 4);
    put(&entry_point, 4);
    put(&maxM, 8);
    put(&maxM0, 8);
    put(&M, 8);
    put(&mult, 8);
    put(&ef_construction, 8);
  }
  void decode(const uint8_t* in) {
    const uint8_t* p = in;
    const auto get = [&p](void* v, size_t n) {
      std::memcpy(v, p, n);
      p += n;
    };
    get(&offset_level0, 8);
    get(&max_elements, 8);
    get(&element_count, 8);
    get(&size_data_per_element, 8);
    get(&label_offset, 8);
    get(&data_offset, 8);
    get(&max_level, 4);
    get(&entry_point, 4);
    get(&maxM, 8);
    get(&maxM0, 8);
    get(&M, 8);
    get(&mult, 8);
    get(&ef_construction, 8);
  }
};

/** Row `row` of `v` (f32, f16, u8 or i8) as the float32 values hnswlib stores (exact). */
inline void row_as_float(const host_matrix& v, int64_t row, float* out) {
  const int64_t dim = v.cols();
  const uint8_t* src = v.row_bytes(row);
  switch (v.type()) {
    case dtype::f32: std::memcpy(out, src, size_t(dim) * sizeof(float)); return;
    case dtype::f16:
      for (int64_t j = 0; j < dim; ++j) {
        half h;
        std::memcpy(&h.bits, src + 2 * j, 2);
        out[j] = half_to_float(h);
      }
      return;
    case dtype::u8:
      for (int64_t j = 0; j < dim; ++j) out[j] = float(src[j]);
      return;
    case dtype::i8:
      for (int64_t j = 0; j < dim; ++j) out[j] = float(int8_t(src[j]));
      return;
    default: CAGRA_FAIL("vectors of dtype %s cannot be written to hnswlib", to_string(v.type()));
  }
}

/** hnswlib's distance between two float vectors: L2Space's squared L2 for l2, InnerProductSpace's
 *  1 - dot for inner_product and cosine (whose rows are unit-norm). */
inline float space_distance(metric m, const float* a, const float* b, int64_t dim) {
  float acc[4] = {0, 0, 0, 0};
  int64_t j = 0;
  if (m == metric::l2) {
    for (; j + 4 <= dim; j += 4)
      for (int t = 0; t < 4; ++t) acc[t] += (a[j + t] - b[j + t]) * (a[j + t] - b[j + t]);
    for (; j < dim; ++j) acc[0] += (a[j] - b[j]) * (a[j] - b[j]);
    return (acc[0] + acc[1]) + (acc[2] + acc[3]);
  }
  for (; j + 4 <= dim; j += 4)
    for (int t = 0; t < 4; ++t) acc[t] += a[j + t] * b[j + t];
  for (; j < dim; ++j) acc[0] += a[j] * b[j];
  return 1.0f - ((acc[0] + acc[1]) + (acc[2] + acc[3]));
}

}  // namespace cagra::core::hnsw
