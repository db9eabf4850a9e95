// XXH64 (seed 0), the standard 64-bit xxHash, streaming: the index file's checksum
// (docs/index_format.md). Header-only; used by serialize.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace cagra::core {

// Streaming XXH64 (seed 0), the standard 64-bit xxHash: four independent multiply-rotate lanes
// over 32-byte stripes, >10 GB/s, so hashing is a small part of a load. Being the standard
// function, a user's own reader can check files with any xxHash library (docs/index_format.md).
class checksum {
 public:
  void update(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    total_ += n;
    if (buf_n_ > 0) {  // complete the stripe left over from the previous call
      size_t take = std::min(n, 32 - buf_n_);
      std::memcpy(buf_ + buf_n_, p, take);
      buf_n_ += take;
      p += take;
      n -= take;
      if (buf_n_ < 32) return;
      stripe(buf_);
      buf_n_ = 0;
    }
    uint64_t v0 = v_[0], v1 = v_[1], v2 = v_[2], v3 = v_[3];
    for (; n >= 32; p += 32, n -= 32) {
      v0 = round(v0, word(p));
      v1 = round(v1, word(p + 8));
      v2 = round(v2, word(p + 16));
      v3 = round(v3, word(p + 24));
    }
    v_[0] = v0, v_[1] = v1, v_[2] = v2, v_[3] = v3;
    std::memcpy(buf_, p, n);
    buf_n_ = n;
  }
  uint64_t finish() const {
    uint64_t h;
    if (total_ >= 32) {
      h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
      for (uint64_t v : v_) h = (h ^ round(0, v)) * kP1 + kP4;
    } else {
      h = kP5;  // seed 0
    }
    h += total_;
    const uint8_t* p = buf_;
    size_t n = buf_n_;
    for (; n >= 8; p += 8, n -= 8) h = rotl(h ^ round(0, word(p)), 27) * kP1 + kP4;
    if (n >= 4) {
      uint32_t w;
      std::memcpy(&w, p, 4);
      h = rotl(h ^ (uint64_t(w) * kP1), 23) * kP2 + kP3;
      p += 4;
      n -= 4;
    }
    for (; n > 0; ++p, --n) h = rotl(h ^ (*p * kP5), 11) * kP1;
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    return h ^ (h >> 32);
  }

 private:
  static constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full,
                            kP3 = 0x165667B19E3779F9ull, kP4 = 0x85EBCA77C2B2AE63ull,
                            kP5 = 0x27D4EB2F165667C5ull;
  static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
  static uint64_t round(uint64_t acc, uint64_t in) { return rotl(acc + in * kP2, 31) * kP1; }
  static uint64_t word(const uint8_t* p) {  // little-endian host (checked above)
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  }
  void stripe(const uint8_t* p) {
    for (int i = 0; i < 4; ++i) v_[i] = round(v_[i], word(p + 8 * i));
  }
  uint64_t v_[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  uint64_t total_ = 0;
  uint8_t buf_[32] = {};
  size_t buf_n_ = 0;
};

}  // namespace cagra::core
