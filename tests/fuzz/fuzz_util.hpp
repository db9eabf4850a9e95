// Shared pieces of the libFuzzer targets (tests/fuzz/*.cpp; scripts/fuzz.sh runs them).
//
// The readers take paths, so each input is written to a file in a private temporary folder and
// read back through the public API. A cagra::error is the expected answer to a bad file; any other
// exception escapes to libFuzzer (std::terminate: reported as a crash), like a signal, a sanitizer
// report, a leak or a hang. check() reports a broken invariant the same way (abort with a
// message), so every finding is a crash input that reproduces with `target FILE`.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>

namespace cagra::fuzz {

/** Aborts with `what` unless `ok`: a broken invariant is a crash input for libFuzzer. */
inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
    std::abort();
  }
}

/** Called with every cagra::error a target catches: prints it when CAGRA_FUZZ_VERBOSE is set
 *  (to see why a seed or a reproducer is rejected: CAGRA_FUZZ_VERBOSE=1 build-fuzz/... FILE). */
inline void rejected(const cagra::error& e) {
  static const bool verbose = std::getenv("CAGRA_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "rejected: %s\n", e.what());
}

/** A private folder under $TMPDIR (default /tmp) for this process's input files, removed at exit.
 */
class scratch_dir {
 public:
  static const std::string& path() {
    static scratch_dir d;
    return d.path_;
  }

 private:
  scratch_dir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/cagra-fuzz-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    check(::mkdtemp(buf.data()) != nullptr, "mkdtemp failed (TMPDIR not writable?)");
    path_ = buf.data();
  }
  ~scratch_dir() {
    std::error_code ec;  // best effort: a crash leaves the folder (scripts/fuzz.sh removes it)
    std::filesystem::remove_all(path_, ec);
  }
  std::string path_;
};

/** Writes `n` bytes to `<scratch>/<name>` (replacing it) and returns the path. */
inline std::string write_input(const std::string& name, const uint8_t* data, size_t n) {
  const std::string p = scratch_dir::path() + "/" + name;
  std::FILE* f = std::fopen(p.c_str(), "wb");
  check(f != nullptr, "cannot create the input file");
  check(n == 0 || std::fwrite(data, 1, n, f) == n, "cannot write the input file");
  check(std::fclose(f) == 0, "cannot close the input file");
  return p;
}

/** The file's bytes (empty when it cannot be read). */
inline std::vector<uint8_t> read_back(const std::string& path) {
  std::vector<uint8_t> out;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  uint8_t buf[65536];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + got);
  std::fclose(f);
  return out;
}

/** What every successful read must give: a non-empty matrix whose byte size matches its shape. */
inline void check_matrix(const host_matrix& m) {
  check(m.rows() > 0 && m.cols() > 0, "a reader returned an empty matrix without an error");
  check(m.size_bytes() ==
            static_cast<size_t>(m.rows()) * static_cast<size_t>(m.cols()) * dtype_size(m.type()),
        "a reader returned a matrix whose bytes do not match its shape");
}

/** Writes `m` to `<scratch>/<name>` with write_matrix, reads it back and requires the same type,
 *  shape and bytes (a writer/reader round trip of what a reader accepted). */
inline void check_round_trip(const host_matrix& m, const std::string& name) {
  const std::string p = scratch_dir::path() + "/" + name;
  io::write_matrix(p, m);
  const host_matrix back = io::read_matrix(p);
  check(back.type() == m.type() && back.rows() == m.rows() && back.cols() == m.cols(),
        "write_matrix + read_matrix changed the type or shape");
  check(std::memcmp(back.data(), m.data(), m.size_bytes()) == 0,
        "write_matrix + read_matrix changed the bytes");
}

/** Standard XXH64 with seed 0 (the index file's checksum, docs/index_format.md), one shot. Kept
 *  separate from src/core/serialize.cpp's streaming one on purpose: an independent
 *  implementation of the published algorithm. */
inline uint64_t xxh64(const uint8_t* p, size_t n) {
  constexpr uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full,
                     P3 = 0x165667B19E3779F9ull, P4 = 0x85EBCA77C2B2AE63ull,
                     P5 = 0x27D4EB2F165667C5ull;
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  auto rd64 = [](const uint8_t* q) {
    uint64_t v;
    std::memcpy(&v, q, 8);
    return v;
  };
  auto round = [&](uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; };
  const uint8_t* end = p + n;
  uint64_t h;
  if (n >= 32) {
    uint64_t v1 = P1 + P2, v2 = P2, v3 = 0, v4 = 0 - P1;
    for (; p + 32 <= end; p += 32) {
      v1 = round(v1, rd64(p));
      v2 = round(v2, rd64(p + 8));
      v3 = round(v3, rd64(p + 16));
      v4 = round(v4, rd64(p + 24));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    for (uint64_t v : {v1, v2, v3, v4}) h = (h ^ round(0, v)) * P1 + P4;
  } else {
    h = P5;
  }
  h += n;
  for (; p + 8 <= end; p += 8) h = rotl(h ^ round(0, rd64(p)), 27) * P1 + P4;
  if (p + 4 <= end) {
    uint32_t w;
    std::memcpy(&w, p, 4);
    h = rotl(h ^ (uint64_t(w) * P1), 23) * P2 + P3;
    p += 4;
  }
  for (; p < end; ++p) h = rotl(h ^ (*p * P5), 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  return h ^ (h >> 32);
}

/** Checks the search results of one call: every id is < rows or kInvalidId, valid ids come first
 *  and are distinct within a row, and their distances are non-decreasing (NaN-free). */
inline void check_results(const std::vector<uint32_t>& ids, const std::vector<float>& dist,
                          int64_t nq, uint32_t k, int64_t rows) {
  for (int64_t q = 0; q < nq; ++q) {
    const uint32_t* id = ids.data() + q * k;
    const float* d = dist.data() + q * k;
    bool seen_invalid = false;
    for (uint32_t j = 0; j < k; ++j) {
      if (id[j] == kInvalidId) {
        seen_invalid = true;
        continue;
      }
      check(!seen_invalid, "a valid id after kInvalidId in a result row");
      check(id[j] < static_cast<uint64_t>(rows), "a result id >= rows");
      check(d[j] == d[j], "a NaN distance for a valid id");
      if (j > 0) check(d[j - 1] <= d[j], "result distances not in ascending order");
      for (uint32_t t = 0; t < j; ++t) check(id[t] != id[j], "a result id repeated in a row");
    }
  }
}

/** What load promises of an index it accepts (graph ids < rows, finite f32/f16 vectors), then a
 *  search with the index's first rows as queries (results well-formed) and analyze (its edge
 *  counts agree with a direct scan). The graph may hold self loops and repeated ids: load allows
 *  them (docs/index_format.md), so search must cope. */
inline void check_loaded(const index& idx) {
  const int64_t n = idx.size();
  const uint32_t d = idx.graph_degree();
  check(n > 0 && d > 0 && idx.dim() > 0, "load accepted an empty index");
  const auto g = idx.graph();
  int64_t self = 0, dup = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t* row = g.row(i);
    for (uint32_t j = 0; j < d; ++j) {
      check(row[j] < static_cast<uint64_t>(n), "load accepted a graph id >= rows");
      self += row[j] == static_cast<uint64_t>(i);
      bool repeated = false;
      for (uint32_t t = 0; t < j && !repeated; ++t) repeated = row[t] == row[j];
      dup += repeated;
    }
  }
  const host_matrix& v = idx.vectors();
  if (v.type() == dtype::f32) {
    const float* f = static_cast<const float*>(v.data());
    for (int64_t i = 0; i < v.rows() * v.cols(); ++i)
      check(std::isfinite(f[i]), "load accepted a non-finite f32 vector value");
  } else if (v.type() == dtype::f16) {
    const half* h = static_cast<const half*>(v.data());
    for (int64_t i = 0; i < v.rows() * v.cols(); ++i)
      check((h[i].bits & 0x7C00u) != 0x7C00u, "load accepted a non-finite f16 vector value");
  }

  resources res;
  res.target = backend::cpu;
  res.num_threads = 1;
  const graph_stats st = analyze(res, g, 16);
  check(st.nodes == n && st.degree == d && st.invalid_edges == 0, "analyze: wrong shape counts");
  check(st.self_loops == self && st.duplicate_edges == dup, "analyze: wrong self/duplicate counts");

  // Queries: the first rows (f32/f16 indexes take f32 queries; u8/i8 their own type).
  const int64_t nq = std::min<int64_t>(n, 3);
  host_matrix q;
  if (v.type() == dtype::f16) {
    q = host_matrix(dtype::f32, nq, v.cols());
    const half* h = static_cast<const half*>(v.data());
    float* o = static_cast<float*>(q.data());
    for (int64_t i = 0; i < nq * v.cols(); ++i) o[i] = to_float(h[i]);
  } else {
    q = host_matrix(v.type(), nq, v.cols());
    std::memcpy(q.data(), v.data(), q.size_bytes());
  }
  const uint32_t k = static_cast<uint32_t>(std::min<int64_t>(n + 1, 8));  // may exceed rows
  std::vector<uint32_t> ids(nq * k);
  std::vector<float> dist(nq * k);
  search_params sp;
  sp.itopk_size = 16;
  try {
    search(res, sp, idx, q, k, {ids.data(), nq, k}, {dist.data(), nq, k});
  } catch (const cagra::error& e) {
    rejected(e);  // e.g. a zero query row for cosine; never a crash
    return;
  }
  check_results(ids, dist, nq, k, n);
}

}  // namespace cagra::fuzz
