/**
 * @file error.hpp
 * @brief The one exception type of the library and the check macro that throws it.
 *
 * Every failure (bad parameters, a malformed file, an out-of-memory device) is reported by
 * throwing cagra::error; the library never aborts. The message names the place in the source
 * (file:line) so that a user report can be traced back, and it is meant to be printed as is.
 */
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

namespace cagra {

/** Exception thrown by every function of the library on invalid input or failure. */
class error : public std::runtime_error {
 public:
  explicit error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
/** printf-style formatting into a std::string (used by CAGRA_EXPECTS / CAGRA_FAIL). */
template <typename... Args>
std::string format(const char* fmt, Args... args) {
  if constexpr (sizeof...(Args) == 0) {
    return std::string(fmt);
  } else {
    int n = std::snprintf(nullptr, 0, fmt, args...);
    std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
    if (n > 0) std::snprintf(s.data(), s.size() + 1, fmt, args...);
    return s;
  }
}
[[noreturn]] inline void throw_error(const char* file, int line, const std::string& msg) {
  const char* base = file;
  for (const char* p = file; *p; ++p)
    if (*p == '/') base = p + 1;
  throw error(msg + " (" + base + ":" + std::to_string(line) + ")");
}
}  // namespace detail

}  // namespace cagra

/** Throws cagra::error with a printf-style message unless `cond` holds. */
#define CAGRA_EXPECTS(cond, ...)                                                              \
  do {                                                                                        \
    if (!(cond))                                                                              \
      ::cagra::detail::throw_error(__FILE__, __LINE__, ::cagra::detail::format(__VA_ARGS__)); \
  } while (0)

/** Throws cagra::error with a printf-style message. */
#define CAGRA_FAIL(...) \
  ::cagra::detail::throw_error(__FILE__, __LINE__, ::cagra::detail::format(__VA_ARGS__))
