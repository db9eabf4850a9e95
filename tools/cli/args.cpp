// Command-line parsing for the `cagra` tool: a small table-driven parser (no dependency) that
// knows each subcommand's options, so every mistake (unknown option, missing or malformed value,
// wrong number of arguments) becomes one clear usage_error before any file is touched. Numbers
// are parsed strictly: "-k abc", "-k -3", "-k 1e3" and out-of-range values are refused rather
// than silently read as 0 or wrapped around, as atoi/strtoul would do.
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "cli.hpp"

namespace cagra::cli {

namespace {

const option_spec* find_option(const command_spec& spec, const std::string& name) {
  for (const auto& o : spec.options)
    if (name == o.name || (o.alias != nullptr && name == o.alias)) return &o;
  return nullptr;
}

std::string see_help(const command_spec& spec) {
  return std::string(" (see 'cagra ") + spec.name + " --help')";
}

// "--x" (long) or "-k" (short); a lone "-" or a negative number is not an option.
bool looks_like_option(const std::string& t) {
  if (t.size() < 2 || t[0] != '-') return false;
  return !(t[1] >= '0' && t[1] <= '9') && t[1] != '.';
}

std::string range_text(uint64_t lo, uint64_t hi) {
  std::string s = lo == 0   ? "a non-negative integer"
                  : lo == 1 ? "a positive integer"
                            : "an integer >= " + std::to_string(lo);
  if (hi != UINT32_MAX && hi != UINT64_MAX) s += " <= " + std::to_string(hi);
  return s;
}

// Strict decimal parse: digits only, no sign, no overflow.
bool parse_uint(const std::string& s, uint64_t& out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  out = v;
  return true;
}

}  // namespace

args::args(const command_spec& spec, int argc, char** argv, int first) : spec_(&spec) {
  // --help wins over everything else, so a half-typed command line still shows the help.
  for (int i = first; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) break;
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      help_ = true;
      return;
    }
  }
  bool options_done = false;
  for (int i = first; i < argc; ++i) {
    std::string tok = argv[i];
    if (options_done || !looks_like_option(tok)) {
      positional_.push_back(tok);
      continue;
    }
    if (tok == "--") {
      options_done = true;
      continue;
    }
    std::string name = tok;
    std::string value;
    bool inline_value = false;
    if (tok.rfind("--", 0) == 0) {
      size_t eq = tok.find('=');
      if (eq != std::string::npos) {
        name = tok.substr(0, eq);
        value = tok.substr(eq + 1);
        inline_value = true;
      }
    } else if (tok.size() > 2) {  // "-k10"
      name = tok.substr(0, 2);
      value = tok.substr(2);
      inline_value = true;
    }
    const option_spec* o = find_option(spec, name);
    if (o == nullptr) {
      throw usage_error("unknown option '" + tok + "' for 'cagra " + spec.name + "'" +
                        see_help(spec));
    }
    if (o->value == nullptr) {
      if (inline_value) throw usage_error(std::string("option ") + o->name + " takes no value");
      values_[o->name] = "";
      continue;
    }
    if (!inline_value) {
      // The next word is the value, even "-3" (so it is reported as malformed, not as an
      // unknown option); a following "--option" means the value was forgotten.
      if (i + 1 >= argc || std::strncmp(argv[i + 1], "--", 2) == 0) {
        throw usage_error(std::string("option ") + o->name + " needs a value (" + o->value + ")" +
                          see_help(spec));
      }
      value = argv[++i];
    }
    if (value.empty()) throw usage_error(std::string("option ") + o->name + " has an empty value");
    values_[o->name] = value;
  }
  const size_t want = spec.positionals.size();
  if (positional_.size() < want) {
    throw usage_error(std::string("missing argument ") + spec.positionals[positional_.size()] +
                      " (usage: cagra " + spec.name + " " + spec.usage + ")");
  }
  if (positional_.size() > want) {
    throw usage_error("unexpected argument '" + positional_[want] + "'" + see_help(spec));
  }
  for (const auto& o : spec.options) {
    if (o.required && !has(o.name)) {
      throw usage_error(std::string("missing option ") + o.name + " " + o.value + see_help(spec));
    }
  }
}

std::string args::str(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

uint64_t args::uint(const std::string& name, uint64_t fallback, uint64_t lo, uint64_t hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  uint64_t v = 0;
  if (!parse_uint(it->second, v) || v < lo || v > hi) {
    throw usage_error(name + ": expected " + range_text(lo, hi) + ", got '" + it->second + "'");
  }
  return v;
}

uint64_t args::bytes(const std::string& name, uint64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  const auto bad = [&](const std::string& why) {
    return usage_error(name +
                       ": expected a size in bytes, plain or with a suffix KiB, MiB, GiB "
                       "or TiB (e.g. 8GiB), got '" +
                       s + "'" + why);
  };
  size_t digits = 0;
  while (digits < s.size() && ((s[digits] >= '0' && s[digits] <= '9') || s[digits] == '.'))
    ++digits;
  std::string number = s.substr(0, digits), unit = s.substr(digits);
  if (!unit.empty() && unit[0] == ' ') unit.erase(0, 1);
  static const std::pair<const char*, int> units[] = {{"", 0},     {"B", 0},    {"KiB", 10},
                                                      {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
  int shift = -1;
  for (const auto& u : units)
    if (unit == u.first) shift = u.second;
  if (shift < 0) {
    const bool decimal = unit == "KB" || unit == "MB" || unit == "GB" || unit == "TB" ||
                         unit == "K" || unit == "M" || unit == "G" || unit == "T";
    throw bad(decimal ? " (binary units only: KiB = 1024 bytes, ...)" : "");
  }
  if (number.empty() || number.find('.') != number.rfind('.') || number == ".") throw bad("");
  uint64_t v = 0;
  if (number.find('.') == std::string::npos) {
    if (!parse_uint(number, v) || (shift && v > (UINT64_MAX >> shift))) throw bad(" (too large)");
    return v << shift;
  }
  if (shift == 0) throw bad(" (whole bytes)");
  const double x = std::strtod(number.c_str(), nullptr) * double(uint64_t{1} << shift);
  if (!(x < 18446744073709551616.0)) throw bad(" (too large)");
  return static_cast<uint64_t>(x);
}

double args::real(const std::string& name, double fallback, double lo, double hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const char* s = it->second.c_str();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (end == s || *end != '\0' || errno != 0 || !std::isfinite(v) || v < lo || v > hi) {
    throw usage_error(name + ": expected a number in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "], got '" + it->second + "'");
  }
  return v;
}

std::vector<uint32_t> args::uint_list(const std::string& name, std::vector<uint32_t> fallback,
                                      uint64_t lo, uint64_t hi) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  std::vector<uint32_t> out;
  const std::string& s = it->second;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    std::string item =
        s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    uint64_t v = 0;
    if (!parse_uint(item, v) || v < lo || v > hi) {
      throw usage_error(name + ": expected a comma-separated list of " + range_text(lo, hi) +
                        " values, got '" + s + "'");
    }
    out.push_back(static_cast<uint32_t>(v));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void print_command_help(const command_spec& spec, FILE* out) {
  std::fprintf(out, "usage: cagra %s %s\n\n%s\n", spec.name, spec.usage, spec.description);
  std::fprintf(out, "\noptions:\n");
  auto print_one = [out](const std::string& left, const char* help) {
    if (left.size() <= 26) {
      std::fprintf(out, "  %-26s %s\n", left.c_str(), help);
    } else {
      std::fprintf(out, "  %s\n  %-26s %s\n", left.c_str(), "", help);
    }
  };
  for (const auto& o : spec.options) {
    std::string left = o.alias != nullptr ? std::string(o.alias) + ", " + o.name : o.name;
    if (o.value != nullptr) left += std::string(" ") + o.value;
    print_one(left, o.help);
  }
  print_one("-h, --help", "show this help");
}

}  // namespace cagra::cli
