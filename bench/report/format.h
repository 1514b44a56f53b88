// Small text and JSON helpers shared by the RESULTS.md renderer's files:
// printf-style formatting, lenient JSON field reads, percentages.
//
//   std::string s = fmt("%.1f GFLOP/s", num(doc, "gflops")) + " " + pct(0.42);  // "42%"
//
// Thread-safety: pure functions.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

namespace zerotrain::bench::report_format {

inline std::string fmt(const char* format, ...) {
  va_list args, copy;
  va_start(args, format);
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  std::string out(n > 0 ? n : 0, '\0');
  std::vsnprintf(out.data(), out.size() + 1, format, args);
  va_end(args);
  return out;
}

// j[key] when it is a number, else fallback (missing sections render as 0).
inline double num(const nlohmann::json& j, const char* key, double fallback = 0) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

inline std::string str(const nlohmann::json& j, const char* key,
                       const std::string& fallback = "?") {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>()
                                                                : fallback;
}

// "42%", or "n/a" for a ratio that could not be formed.
inline std::string pct(double ratio) { return ratio > 0 ? fmt("%.0f%%", 100 * ratio) : "n/a"; }

}  // namespace zerotrain::bench::report_format
