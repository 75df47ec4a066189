// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/common/text.hpp"

#include <algorithm>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace marionette {

std::string joinNames(const std::vector<std::string>& names, const std::string& separator) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? separator : "") + names[i];
  return out;
}

std::vector<std::string> splitCommas(const std::string& text) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    if (end > begin) out.push_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

std::string trimmed(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

std::vector<std::string> splitFields(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    out.push_back(trimmed(text.substr(begin, end == std::string::npos ? end : end - begin)));
    if (end == std::string::npos) return out;
    begin = end + 1;
  }
}

bool splitNameValue(const std::string& item, std::string& name, std::string& value) {
  const auto eq = item.find('=');
  if (eq == std::string::npos) return false;
  name = trimmed(item.substr(0, eq));
  value = trimmed(item.substr(eq + 1));
  return !name.empty();
}

bool parseFiniteNumber(const std::string& text, double& value) {
  // The grammar: [+-] digits [. digits] [(e|E) [+-] digits], or [+-] . digits [exponent] -- no
  // blanks, no hexadecimal, no inf or nan (strtod alone takes all three).
  std::size_t i = 0;
  const std::size_t n = text.size();
  auto digits = [&] {
    const std::size_t from = i;
    while (i < n && text[i] >= '0' && text[i] <= '9') ++i;
    return i - from;
  };
  if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
  std::size_t mantissa = digits();
  if (i < n && text[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  if (i != n) return false;
  char* end = nullptr;
  const double x = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(x)) return false;
  value = x;
  return true;
}

std::string formatNumber(double x, int digits) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return buf;
}

std::string printableBytes(const std::string& bytes, std::size_t max_bytes) {
  std::string out;
  const std::size_t n = std::min(bytes.size(), max_bytes);
  out.reserve(n + 8);
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c <= 0x7e) {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    }
  }
  if (n < bytes.size()) out += "...";
  return out;
}

std::string formatted(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

}  // namespace marionette
