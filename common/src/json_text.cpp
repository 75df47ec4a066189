// SPDX-License-Identifier: BSD-3-Clause
#include "marionette/common/json_text.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace marionette {

namespace {

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  out.reserve(s.size() + 2);
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + '"';
}

}  // namespace

void writeJsonString(std::ostream& os, const std::string& s) {
  os << jsonString(s);
}

void writeJsonNumber(std::ostream& os, double v) {
  if (std::isfinite(v))
    os << v;
  else
    os << "null";
}

JsonMembers::JsonMembers(std::ostream& os, std::string separator)
    : os_(os), separator_(std::move(separator)) {}

std::ostream& JsonMembers::key(const std::string& name) {
  writeJsonString(os_ << (first_ ? "" : separator_.c_str()), name);
  first_ = false;
  return os_ << ": ";
}

void JsonMembers::text(const char* name, const std::string& v) {
  writeJsonString(key(name), v);
}

void JsonMembers::number(const char* name, double v) {
  writeJsonNumber(key(name), v);
}

void JsonMembers::numbers(std::initializer_list<std::pair<const char*, double>> named) {
  for (const auto& [name, v] : named) number(name, v);
}

void JsonMembers::counts(std::initializer_list<std::pair<const char*, long long>> named) {
  for (const auto& [name, v] : named) key(name) << v;
}

void JsonMembers::names(const char* name, const std::vector<std::string>& items) {
  std::ostream& os = key(name);
  os << '[';
  for (std::size_t i = 0; i < items.size(); ++i) writeJsonString(os << (i ? ", " : ""), items[i]);
  os << ']';
}

void JsonMembers::numbers(const char* name, const double* values, std::size_t count) {
  std::ostream& os = key(name);
  os << '[';
  for (std::size_t i = 0; i < count; ++i) writeJsonNumber(os << (i ? ", " : ""), values[i]);
  os << ']';
}

JsonLine::JsonLine(std::ostream& os, const char* end)
    : members((os << '{', os), ", "), os_(os), end_(end), precision_(os.precision(10)) {}

JsonLine::~JsonLine() {
  os_ << '}' << end_;
  os_.precision(precision_);
}

}  // namespace marionette
