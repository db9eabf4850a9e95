// Tests of cagra::save / cagra::load: bit-exact round trips for every storage dtype and metric,
// and a malformed file of every kind (each must throw cagra::error naming the file, never crash).
// The checksum (XXH64) is re-implemented here from its specification, so the tests also check
// that the library computes the documented function, and can forge files whose only defect is
// one field (a correct checksum over a bad field).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <cagra/cagra.hpp>
#include <cagra/io.hpp>

#include "test_data.hpp"

namespace fs = std::filesystem;
using cagra::test::read_bytes;
using cagra::test::temp_path;
using cagra::test::write_bytes;

namespace {

// Random vectors of `t` (finite values for the float types) and a random graph whose rows hold
// `degree` distinct ids, none equal to the row's own id.
cagra::index random_index(cagra::dtype t, cagra::metric m, int64_t rows, int64_t dim,
                          uint32_t degree, uint32_t seed) {
  std::mt19937 rng(seed);
  cagra::host_matrix v(t, rows, dim);
  auto* bytes = static_cast<uint8_t*>(v.data());
  for (size_t i = 0; i < v.size_bytes(); ++i) bytes[i] = uint8_t(rng());
  if (t == cagra::dtype::f32) {
    std::uniform_real_distribution<float> u(-10.f, 10.f);
    auto* f = static_cast<float*>(v.data());
    for (int64_t i = 0; i < rows * dim; ++i) f[i] = u(rng);
  } else if (t == cagra::dtype::f16) {
    auto* h = static_cast<cagra::half*>(v.data());
    for (int64_t i = 0; i < rows * dim; ++i) h[i].bits &= 0xBBFF;  // exponent < 31: finite
  }
  std::vector<uint32_t> graph(size_t(rows) * degree);
  std::uniform_int_distribution<uint32_t> pick(0, uint32_t(rows - 1));
  for (int64_t r = 0; r < rows; ++r) {
    uint32_t* row = graph.data() + r * degree;
    for (uint32_t j = 0; j < degree;) {
      uint32_t id = pick(rng);
      if (id == uint32_t(r) || std::find(row, row + j, id) != row + j) continue;
      row[j++] = id;
    }
  }
  return cagra::index(m, std::move(v), std::move(graph), degree);
}

// XXH64 with seed 0 (the checksum of docs/index_format.md), one-shot, written from the xxHash
// specification independently of the library's streaming version.
uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
uint64_t rd(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t xxh64(const uint8_t* p, size_t n) {
  const uint64_t P1 = 0x9E3779B185EBCA87ull, P2 = 0xC2B2AE3D27D4EB4Full, P3 = 0x165667B19E3779F9ull,
                 P4 = 0x85EBCA77C2B2AE63ull, P5 = 0x27D4EB2F165667C5ull;
  auto round = [&](uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; };
  const uint8_t* end = p + n;
  uint64_t h;
  if (n >= 32) {
    uint64_t v[4] = {P1 + P2, P2, 0, 0 - P1};
    for (; end - p >= 32; p += 32)
      for (int i = 0; i < 4; ++i) v[i] = round(v[i], rd(p + 8 * i, 8));
    h = rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18);
    for (uint64_t x : v) h = (h ^ round(0, x)) * P1 + P4;
  } else {
    h = P5;
  }
  h += n;
  for (; end - p >= 8; p += 8) h = rotl(h ^ round(0, rd(p, 8)), 27) * P1 + P4;
  if (end - p >= 4) {
    h = rotl(h ^ (rd(p, 4) * P1), 23) * P2 + P3;
    p += 4;
  }
  for (; p < end; ++p) h = rotl(h ^ (*p * P5), 11) * P1;
  h = (h ^ (h >> 33)) * P2;
  h = (h ^ (h >> 29)) * P3;
  return h ^ (h >> 32);
}
uint64_t doc_checksum(const uint8_t* p, size_t n) { return xxh64(p, n); }

void put_u32(std::vector<uint8_t>& f, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) f[off + i] = uint8_t(v >> (8 * i));
}
void put_u64(std::vector<uint8_t>& f, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) f[off + i] = uint8_t(v >> (8 * i));
}
uint64_t get_u64(const std::vector<uint8_t>& f, size_t off) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | f[off + i];
  return v;
}
// Recomputes the trailing checksum after a deliberate edit, so only the edited field is wrong.
void reseal(std::vector<uint8_t>& f) {
  put_u64(f, f.size() - 8, doc_checksum(f.data(), f.size() - 8));
}

// A valid file (100 x 8 f32, degree 4) as bytes, and where its parts start.
struct sample_file {
  std::vector<uint8_t> bytes;
  size_t vectors_at = 64, graph_at = 64 + 100 * 8 * 4;
};
sample_file valid_file() {
  std::string p = temp_path("valid_sample.cagra");
  cagra::save(random_index(cagra::dtype::f32, cagra::metric::l2, 100, 8, 4, 7), p);
  sample_file s;
  s.bytes = read_bytes(p);
  return s;
}

// Expects load(bytes) to throw cagra::error whose message names the file and contains `what`.
void expect_load_error(const std::vector<uint8_t>& bytes, const std::string& name,
                       const std::string& what) {
  std::string p = temp_path(name);
  write_bytes(p, bytes);
  try {
    cagra::load(p);
    ADD_FAILURE() << name << ": load succeeded, expected an error about '" << what << "'";
  } catch (const cagra::error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(p), std::string::npos) << "message does not name the file: " << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << "expected '" << what << "' in: " << msg;
  }
}

// Files in `dir` whose name contains ".tmp." (leftover temporaries of save).
int count_temp_files(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    n += e.path().filename().string().find(".tmp.") != std::string::npos;
  return n;
}

}  // namespace

// The reference XXH64 above against published values (so a wrong reference cannot hide a wrong
// library: the library's checksums are compared with it in the tests below).
TEST(Serialize, ChecksumReferenceVectors) {
  auto h = [](const std::string& s) { return xxh64((const uint8_t*)s.data(), s.size()); };
  EXPECT_EQ(h(""), 0xef46db3751d8e999ull);
  EXPECT_EQ(h("a"), 0xd24ec4f1a98c6e5bull);
  EXPECT_EQ(h("abcdefghijklmnopqrstuvwxyz0123456789"), 0x64f23ecf1609b766ull);
  std::vector<uint8_t> b(1027);
  for (size_t i = 0; i < b.size(); ++i) b[i] = uint8_t(i * 7 % 256);
  EXPECT_EQ(xxh64(b.data(), b.size()), 0xa09aa867ceb51fbeull);
}

TEST(Serialize, RoundTripEveryDtypeAndMetric) {
  const cagra::dtype types[] = {cagra::dtype::f32, cagra::dtype::f16, cagra::dtype::u8,
                                cagra::dtype::i8};
  const cagra::metric metrics[] = {cagra::metric::l2, cagra::metric::inner_product,
                                   cagra::metric::cosine};
  uint32_t seed = 1;
  for (cagra::dtype t : types) {
    for (cagra::metric m : metrics) {
      SCOPED_TRACE(std::string(cagra::to_string(t)) + "/" + cagra::to_string(m));
      // Odd sizes: the u8/i8 payload is not a whole number of 8-byte words.
      cagra::index a = random_index(t, m, 157, 13, 6, seed++);
      std::string p = temp_path("rt.cagra");
      cagra::save(a, p);
      cagra::index b = cagra::load(p);
      EXPECT_EQ(b.size(), a.size());
      EXPECT_EQ(b.dim(), a.dim());
      EXPECT_EQ(b.graph_degree(), a.graph_degree());
      EXPECT_EQ(b.metric(), m);
      EXPECT_EQ(b.storage_dtype(), t);
      ASSERT_EQ(b.vectors().size_bytes(), a.vectors().size_bytes());
      EXPECT_EQ(0, std::memcmp(b.vectors().data(), a.vectors().data(), a.vectors().size_bytes()));
      EXPECT_EQ(0, std::memcmp(b.graph().data, a.graph().data, a.graph().size() * 4));
      const std::vector<uint8_t> f = read_bytes(p);
      EXPECT_EQ(f.size(), 64 + a.vectors().size_bytes() + a.graph().size() * 4 + 8);
      // Streaming hash (parts of odd length) == the document's definition over the whole file.
      EXPECT_EQ(get_u64(f, f.size() - 8), doc_checksum(f.data(), f.size() - 8));
    }
  }
  EXPECT_EQ(count_temp_files(fs::path(temp_path("x")).parent_path().string()), 0);
}

TEST(Serialize, HeaderMatchesDocumentedLayout) {
  sample_file s = valid_file();
  const std::vector<uint8_t>& f = s.bytes;
  ASSERT_EQ(f.size(), size_t(64 + 100 * 8 * 4 + 100 * 4 * 4 + 8));
  EXPECT_EQ(0, std::memcmp(f.data(), "CAGRAIDX", 8));
  EXPECT_EQ(f[8], 1);                       // version 1
  EXPECT_EQ(f[12], 0x04);                   // endianness tag, little-endian
  EXPECT_EQ(f[16], 64);                     // header size
  EXPECT_EQ(get_u64(f, 32), 100u);          // rows
  EXPECT_EQ(get_u64(f, 48), 100u * 8 * 4);  // vector bytes
  EXPECT_EQ(get_u64(f, 56), 100u * 4 * 4);  // graph bytes
  EXPECT_EQ(get_u64(f, f.size() - 8), doc_checksum(f.data(), f.size() - 8));
}

TEST(Serialize, OverwriteReplacesExistingFile) {
  std::string p = temp_path("overwrite.cagra");
  cagra::save(random_index(cagra::dtype::u8, cagra::metric::l2, 50, 4, 3, 1), p);
  cagra::save(random_index(cagra::dtype::f32, cagra::metric::cosine, 80, 5, 7, 2), p);
  cagra::index b = cagra::load(p);
  EXPECT_EQ(b.size(), 80);
  EXPECT_EQ(b.storage_dtype(), cagra::dtype::f32);
  EXPECT_EQ(b.metric(), cagra::metric::cosine);
}

TEST(Serialize, MissingAndEmptyFiles) {
  EXPECT_THROW(cagra::load(temp_path("does_not_exist.cagra")), cagra::error);
  expect_load_error({}, "empty.cagra", "empty");
  EXPECT_THROW(cagra::load(fs::path(temp_path("x")).parent_path().string()), cagra::error);
}

TEST(Serialize, BadMagicVersionEndianness) {
  sample_file s = valid_file();
  std::vector<uint8_t> f = s.bytes;
  f[0] = 'X';
  expect_load_error(f, "magic.cagra", "magic");
  expect_load_error(std::vector<uint8_t>(s.bytes.begin(), s.bytes.begin() + 5), "short5.cagra",
                    "magic");

  f = s.bytes;
  put_u32(f, 8, 99);
  reseal(f);
  expect_load_error(f, "v99.cagra", "newer version");
  put_u32(f, 8, 0);
  reseal(f);
  expect_load_error(f, "v0.cagra", "version");

  f = s.bytes;
  put_u32(f, 12, 0x04030201);
  reseal(f);
  expect_load_error(f, "endian.cagra", "endianness");

  f = s.bytes;
  put_u32(f, 16, 72);
  reseal(f);
  expect_load_error(f, "hsize.cagra", "header_size");
}

TEST(Serialize, TruncatedHeaderPayloadAndTrailingBytes) {
  sample_file s = valid_file();
  const std::vector<uint8_t>& f = s.bytes;
  expect_load_error(std::vector<uint8_t>(f.begin(), f.begin() + 30), "hdr30.cagra",
                    "truncated header");
  expect_load_error(std::vector<uint8_t>(f.begin(), f.begin() + 10), "hdr10.cagra",
                    "truncated header");
  expect_load_error(std::vector<uint8_t>(f.begin(), f.begin() + 64), "hdr64.cagra",
                    "truncated payload");
  expect_load_error(std::vector<uint8_t>(f.begin(), f.end() - 100), "payload.cagra",
                    "truncated payload");
  expect_load_error(std::vector<uint8_t>(f.begin(), f.end() - 1), "nosum.cagra",
                    "truncated payload");
  std::vector<uint8_t> longer = f;
  longer.insert(longer.end(), {1, 2, 3, 4, 5});
  expect_load_error(longer, "trailing.cagra", "trailing");
}

TEST(Serialize, FlippedByteFailsChecksum) {
  sample_file s = valid_file();
  for (size_t at : {size_t(20), s.vectors_at + 333, s.graph_at + 17, s.bytes.size() - 3}) {
    std::vector<uint8_t> f = s.bytes;
    f[at] ^= 0x10;
    // A flip inside the header may hit a field that is validated first; that is fine too.
    std::string p = temp_path("flip.cagra");
    write_bytes(p, f);
    EXPECT_THROW(cagra::load(p), cagra::error) << "flip at " << at;
  }
  std::vector<uint8_t> f = s.bytes;
  f[s.vectors_at + 333] ^= 0x01;
  expect_load_error(f, "flipv.cagra", "checksum");
  f = s.bytes;
  f[s.graph_at + 5] ^= 0x80;
  expect_load_error(f, "flipg.cagra", "checksum");
}

TEST(Serialize, BadHeaderFields) {
  sample_file s = valid_file();
  struct field_case {
    const char* name;
    size_t off;
    uint64_t value;
    bool wide;
    const char* what;
  };
  const field_case cases[] = {
      {"dtype77", 20, 77, false, "dtype"},
      {"dtype_u32", 20, uint32_t(cagra::dtype::u32), false, "dtype"},
      {"metric9", 24, 9, false, "metric"},
      {"degree0", 28, 0, false, "graph_degree"},
      {"degree_rows", 28, 100, false, "graph_degree"},
      {"rows0", 32, 0, true, "rows"},
      {"rows_huge", 32, uint64_t(1) << 40, true, "rows"},
      {"dim0", 40, 0, false, "dim"},
      {"dim_huge", 40, 65537, false, "dim"},
      {"flags", 44, 1, false, "flags"},
      {"vbytes", 48, 12345, true, "vector_bytes"},
      {"gbytes", 56, ~uint64_t(0), true, "graph_bytes"},
  };
  for (const field_case& c : cases) {
    std::vector<uint8_t> f = s.bytes;
    if (c.wide) {
      put_u64(f, c.off, c.value);
    } else {
      put_u32(f, c.off, uint32_t(c.value));
    }
    reseal(f);
    expect_load_error(f, std::string(c.name) + ".cagra", c.what);
  }
  // A consistent but enormous header (rows x dim x 4 = 2^47 bytes) in a small file: the size
  // check must reject it before anything is allocated.
  std::vector<uint8_t> f = s.bytes;
  put_u64(f, 32, uint64_t(1) << 30);  // rows
  put_u32(f, 40, 32768);
  put_u64(f, 48, (uint64_t(1) << 30) * 32768 * 4);
  put_u64(f, 56, (uint64_t(1) << 30) * 4 * 4);
  reseal(f);
  expect_load_error(f, "huge.cagra", "truncated payload");
}

TEST(Serialize, GraphIdOutOfRangeWithValidChecksum) {
  sample_file s = valid_file();
  std::vector<uint8_t> f = s.bytes;
  put_u32(f, s.graph_at + 4 * (3 * 4 + 2), 100);  // row 3, slot 2 := rows
  reseal(f);
  expect_load_error(f, "badid.cagra", "row 3, slot 2");
  put_u32(f, s.graph_at + 4 * (3 * 4 + 2), 0xFFFFFFFFu);
  reseal(f);
  expect_load_error(f, "badid2.cagra", "not below rows");
}

// Issue 17, defect 6: vectors that are NaN or infinite under a valid checksum (a file written by
// another tool, or damaged before it was sealed) are refused, naming the row and column. Before,
// such an index loaded and every search returned only invalid ids.
TEST(Serialize, NonFiniteVectorsWithValidChecksum) {
  sample_file s = valid_file();  // 100 x 8 f32
  struct bad_value {
    const char* name;
    uint32_t bits;
    const char* what;
  };
  const bad_value f32_cases[] = {{"nan", 0x7FC00000u, "is NaN"},
                                 {"snan", 0x7F800001u, "is NaN"},
                                 {"neg_nan", 0xFFC00000u, "is NaN"},
                                 {"inf", 0x7F800000u, "is +Inf"},
                                 {"ninf", 0xFF800000u, "is -Inf"}};
  for (const bad_value& c : f32_cases) {
    SCOPED_TRACE(c.name);
    // The first and last elements (the edges of the scan) and one in the middle.
    for (const size_t at : {size_t{0}, size_t{37 * 8 + 5}, size_t{100 * 8 - 1}}) {
      std::vector<uint8_t> f = s.bytes;
      put_u32(f, s.vectors_at + 4 * at, c.bits);
      reseal(f);
      const std::string where =
          "row " + std::to_string(at / 8) + ", column " + std::to_string(at % 8) + " " + c.what;
      expect_load_error(f, std::string("f32_") + c.name + ".cagra", where);
    }
  }
  // f16: exponent all ones is Inf (mantissa 0) or NaN.
  std::string p = temp_path("finite_f16.cagra");
  cagra::save(random_index(cagra::dtype::f16, cagra::metric::l2, 60, 8, 4, 3), p);
  const std::vector<uint8_t> h = read_bytes(p);
  for (const auto& c : {std::pair<uint16_t, const char*>{0x7E00, "row 59, column 7 is NaN"},
                        {0x7C00, "row 59, column 7 is +Inf"},
                        {0xFC00, "row 59, column 7 is -Inf"}}) {
    std::vector<uint8_t> f = h;
    const size_t at = 64 + 2 * (59 * 8 + 7);
    f[at] = uint8_t(c.first);
    f[at + 1] = uint8_t(c.first >> 8);
    reseal(f);
    expect_load_error(f, "f16_bad.cagra", c.second);
  }
  // A damaged file is reported as corrupted (the checksum), not by the value it happens to hold.
  std::vector<uint8_t> f = s.bytes;
  put_u32(f, s.vectors_at, 0x7FC00000u);
  expect_load_error(f, "nan_unsealed.cagra", "checksum mismatch");
  // The extremes of the finite range still load: the largest values and subnormals.
  f = s.bytes;
  put_u32(f, s.vectors_at, 0x7F7FFFFFu);
  put_u32(f, s.vectors_at + 4, 0xFF7FFFFFu);
  put_u32(f, s.vectors_at + 8, 0x00000001u);
  reseal(f);
  p = temp_path("finite_extremes.cagra");
  write_bytes(p, f);
  EXPECT_EQ(cagra::load(p).size(), 100);
  // The input the fuzzer found (a valid checksum over NaN vectors), where the shared data has it
  // (/work/shared/data/regress; the same places as the data sets).
  std::vector<std::string> dirs = {std::string(CAGRA_SOURCE_DIR) + "/data/shared",
                                   std::string(CAGRA_SOURCE_DIR) + "/../shared/data"};
  if (const char* env = std::getenv("CAGRA_DATA_DIR")) dirs.insert(dirs.begin(), env);
  for (const std::string& d : dirs) {
    const std::string found = d + "/regress/vectors_nan.cagra";
    if (!fs::exists(found)) continue;
    try {
      cagra::load(found);
      ADD_FAILURE() << found << " loaded";
    } catch (const cagra::error& e) {
      EXPECT_NE(std::string(e.what()).find("is NaN"), std::string::npos) << e.what();
    }
    break;
  }
}

TEST(Serialize, SaveIntoMissingFolderThrows) {
  std::string dir = temp_path("no_such_folder");
  std::string p = dir + "/index.cagra";
  EXPECT_THROW(cagra::save(random_index(cagra::dtype::u8, cagra::metric::l2, 20, 4, 3, 1), p),
               cagra::error);
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_FALSE(fs::exists(p));
  EXPECT_THROW(cagra::save(cagra::index(), temp_path("empty_index.cagra")), cagra::error);
  EXPECT_FALSE(fs::exists(temp_path("empty_index.cagra")));
}

// A write error in the middle of the payload (here: the file-size limit, which also applies to
// root, standing in for a full disk) must leave the old file byte-identical and no temporary.
TEST(Serialize, FailedSaveKeepsExistingFile) {
  std::string dir = temp_path("failed_save");
  fs::create_directories(dir);
  std::string p = dir + "/index.cagra";
  cagra::save(random_index(cagra::dtype::u8, cagra::metric::l2, 30, 4, 3, 5), p);
  const std::vector<uint8_t> before = read_bytes(p);
  cagra::index big = random_index(cagra::dtype::f32, cagra::metric::l2, 2000, 32, 8, 6);

  rlimit old{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 4096;
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of being killed
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  try {
    cagra::save(big, p);
  } catch (const cagra::error& e) {
    threw = true;
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);

  EXPECT_TRUE(threw);
  EXPECT_EQ(read_bytes(p), before);
  EXPECT_EQ(count_temp_files(dir), 0);
  EXPECT_EQ(cagra::load(p).size(), 30);
}

// Issue 17, defect 8a: a writer killed mid-write (kill -9, a crash) leaves its temporary file; the
// next save to the same path removes it when its process is gone and it has not been touched for
// a minute. Live processes' temporaries, recent ones and other paths' are left alone.
TEST(Serialize, StaleTemporariesOfThePathAreRemoved) {
  const std::string dir = temp_path("stale_temps");
  fs::remove_all(dir);
  fs::create_directories(dir);
  // A pid that is certainly not running: a child that has exited and been reaped.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
  ASSERT_NE(kill(child, 0), 0);
  const std::string dead = std::to_string(child), self = std::to_string(getpid());

  const auto make = [&](const std::string& name, bool old) {
    write_bytes(dir + "/" + name, std::vector<uint8_t>(4096, 0xAB));
    if (old) {  // last written an hour ago
      const auto t = fs::last_write_time(dir + "/" + name) - std::chrono::hours(1);
      fs::last_write_time(dir + "/" + name, t);
    }
  };
  // save's temporaries: <path>.tmp.<pid>.<n>
  make("index.cagra.tmp." + dead + ".0", true);    // stale: removed
  make("index.cagra.tmp." + dead + ".17", true);   // stale: removed
  make("index.cagra.tmp." + dead + ".1", false);   // dead writer, but written just now: kept
  make("index.cagra.tmp." + self + ".3", true);    // a live process (this one): kept
  make("index.cagra.tmp.1.0", true);               // pid 1 is alive: kept
  make("other.cagra.tmp." + dead + ".0", true);    // another path's: kept
  make("index.cagra.tmp." + dead + ".0.x", true);  // not a temporary's name: kept
  make("index.cagra.tmp.x" + dead + ".0", true);   // not a temporary's name: kept
  // the dataset writers' temporaries: .<name>.tmp-<pid>-<n>
  make(".base.fbin.tmp-" + dead + "-2", true);   // stale: removed
  make(".base.fbin.tmp-" + self + "-2", true);   // live: kept
  make(".other.fbin.tmp-" + dead + "-2", true);  // another path's: kept

  cagra::save(random_index(cagra::dtype::f32, cagra::metric::l2, 30, 4, 3, 9),
              dir + "/index.cagra");
  cagra::host_matrix m(cagra::dtype::f32, 2, 2);
  cagra::io::write_matrix(dir + "/base.fbin", m.view());

  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  std::vector<std::string> want = {".base.fbin.tmp-" + self + "-2",
                                   ".other.fbin.tmp-" + dead + "-2",
                                   "base.fbin",
                                   "index.cagra",
                                   "index.cagra.tmp." + dead + ".0.x",
                                   "index.cagra.tmp." + dead + ".1",
                                   "index.cagra.tmp." + self + ".3",
                                   "index.cagra.tmp.1.0",
                                   "index.cagra.tmp.x" + dead + ".0",
                                   "other.cagra.tmp." + dead + ".0"};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(left, want);
  EXPECT_EQ(cagra::load(dir + "/index.cagra").size(), 30);
}

// Random damage (bytes changed anywhere, header fields mostly, checksum sometimes fixed up, file
// sometimes cut) must always end in a clean cagra::error or a valid index, never a crash.
TEST(Serialize, RandomCorruptionNeverCrashes) {
  sample_file s = valid_file();
  std::mt19937 rng(2024);
  std::string p = temp_path("fuzz.cagra");
  int rejected = 0;
  for (int it = 0; it < 400; ++it) {
    std::vector<uint8_t> f = s.bytes;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % 2 ? rng() % 64 : rng() % f.size();
      f[at] = uint8_t(rng());
    }
    if (rng() % 2) reseal(f);
    if (rng() % 8 == 0) f.resize(rng() % f.size());
    fs::remove(p);  // a fresh file: rewriting a truncated one makes ext4 flush it on close
    write_bytes(p, f);
    try {
      cagra::index idx = cagra::load(p);
      EXPECT_EQ(idx.size(), 100);  // only payload edits with a fixed-up checksum get here
    } catch (const cagra::error&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 200);
}
