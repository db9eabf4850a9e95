// What the tests of the HDF5 reader and of its reader process (test_io_hdf5*.cpp,
// test_io_isolate.cpp) share: the check that a call fails with a cagra::error naming the problem,
// the peak resident size (no bad file may allocate much in the caller), whether a sanitizer's
// allocator is in the build, and (with HDF5) writers of small test files: datasets with chosen
// types and creation properties, chunked layouts, and deterministic contents.
#pragma once

#include <sys/resource.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/error.hpp>

#ifdef CAGRA_HAVE_HDF5
#include <hdf5.h>
#endif

namespace cagra::test::io_hdf5 {

// Runs f, expecting a cagra::error whose message contains every needle; returns the message.
inline std::string expect_error(const std::function<void()>& f,
                                const std::vector<std::string>& needles) {
  try {
    f();
  } catch (const cagra::error& e) {
    const std::string what = e.what();
    for (const auto& n : needles)
      EXPECT_NE(what.find(n), std::string::npos) << "message: " << what << "\nlacks: " << n;
    return what;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a cagra::error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception; expected one mentioning '" << needles.back() << "'";
  return "";
}

// Sanitizer builds report a failed allocation themselves (and the reader process exits).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

// The process's peak resident size so far, in bytes.
inline uint64_t peak_rss() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

#ifdef CAGRA_HAVE_HDF5
// A dataset from `data` (rows x cols of mem_type) with the given creation properties.
inline void h5_put(hid_t file, const char* name, hid_t file_type, hid_t mem_type, const void* data,
                   hsize_t rows, hsize_t cols, hid_t dcpl = H5P_DEFAULT, int rank = 2) {
  hsize_t dims[2] = {rows, cols};
  if (rank == 1) dims[0] = cols;
  hid_t space = H5Screate_simple(rank, dims, nullptr);
  hid_t d = H5Dcreate2(file, name, file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  ASSERT_GE(d, 0) << name;
  if (data != nullptr) {
    ASSERT_GE(H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), 0);
  }
  H5Dclose(d);
  H5Sclose(space);
}

inline hid_t chunked(hsize_t r, hsize_t c, bool shuffle, int deflate, bool fletcher = false) {
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  const hsize_t chunk[2] = {r, c};
  H5Pset_chunk(dcpl, 2, chunk);
  if (fletcher) H5Pset_fletcher32(dcpl);
  if (shuffle) H5Pset_shuffle(dcpl);
  if (deflate >= 0) H5Pset_deflate(dcpl, static_cast<unsigned>(deflate));
  return dcpl;
}

template <typename T>
std::vector<T> pattern(size_t n, uint32_t seed) {
  std::vector<T> v(n);
  uint32_t x = seed;
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    if constexpr (std::is_floating_point_v<T>) {
      e = static_cast<T>(static_cast<int32_t>(x >> 8) % 100000) / T(64);
    } else {
      e = static_cast<T>(x >> 9);
    }
  }
  return v;
}
#endif  // CAGRA_HAVE_HDF5

}  // namespace cagra::test::io_hdf5
