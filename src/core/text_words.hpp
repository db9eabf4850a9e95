// The library's small text files (a sharded index's manifest, a shard checkpoint's fingerprint)
// are written and read with std::string, std::to_string and <charconv> only, never with iostream
// formatting (`ostream << int`, `istream >> int`). Those consult the stream's locale facets, and a
// library whose libstdc++ is linked statically (some toolchains do that to every shared object)
// crashes there when the process loaded another libstdc++ first: the Python module after numpy.
// Header-only; used by core/multi_gpu/sharded_io.cpp and core/multi_gpu/checkpoint.cpp.
#pragma once

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <cagra/error.hpp>

namespace cagra::core {

/** The whole of the regular file `path`, which the caller has checked is at most `max_bytes`. */
inline std::string read_small_text(const std::string& path, size_t max_bytes) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  CAGRA_EXPECTS(f != nullptr, "cannot open '%s': %s", path.c_str(), std::strerror(errno));
  std::string text(max_bytes + 1, '\0');
  const size_t got = std::fread(text.data(), 1, text.size(), f);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  CAGRA_EXPECTS(!failed, "cannot read '%s'", path.c_str());
  CAGRA_EXPECTS(got <= max_bytes, "'%s' is larger than %zu bytes", path.c_str(), max_bytes);
  text.resize(got);
  return text;
}

/** The words of `text` separated by spaces, tabs, carriage returns and newlines. */
inline std::vector<std::string> split_words(std::string_view text) {
  std::vector<std::string> words;
  size_t i = 0;
  const auto space = [&](size_t k) {
    return text[k] == ' ' || text[k] == '\t' || text[k] == '\r' || text[k] == '\n';
  };
  while (i < text.size()) {
    while (i < text.size() && space(i)) ++i;
    const size_t start = i;
    while (i < text.size() && !space(i)) ++i;
    if (i > start) words.emplace_back(text.substr(start, i - start));
  }
  return words;
}

/** `text` cut at each '\n' (a last line without one included; no empty line after a final one). */
inline std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

/** True when `word` is a decimal number (digits only) that fits `out`'s type; stored in `out`. */
template <typename T>
bool parse_decimal(std::string_view word, T& out) {
  if (word.empty() || word[0] == '-' || word[0] == '+') return false;
  T v{};
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || end != word.data() + word.size()) return false;
  out = v;
  return true;
}

}  // namespace cagra::core
