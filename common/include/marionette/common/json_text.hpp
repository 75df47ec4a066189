// SPDX-License-Identifier: BSD-3-Clause
// Internal (not installed): JSON text for what the project writes (plan files, the viewer's
// documents, the CLI's --json output, the server's request log).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// A JSON string literal.  Besides quotes, backslashes and control characters, '<', '>' and '&'
// are escaped (\u003c ...), so that the text is also safe inside an HTML <script> element.
void writeJsonString(std::ostream& os, const std::string& s);

// A number as the stream formats it, or null when it is not finite (JSON has no inf or NaN).
void writeJsonNumber(std::ostream& os, double v);

// The members of one JSON object, written one after the other: each after a separator (",\n" and
// an indent, or ", " on one line), as "name": value.  The caller writes the braces.
class JsonMembers {
 public:
  JsonMembers(std::ostream& os, std::string separator);
  std::ostream& key(const std::string& name);  // "name": , then the caller writes the value
  void text(const char* name, const std::string& v);
  void number(const char* name, double v);
  void numbers(std::initializer_list<std::pair<const char*, double>> named);  // number() each
  void counts(std::initializer_list<std::pair<const char*, long long>> named);  // integers
  void names(const char* name, const std::vector<std::string>& items);
  void numbers(const char* name, const double* values, std::size_t count);

 private:
  std::ostream& os_;
  std::string separator_;
  bool first_ = true;
};

// A JSON object on one line: '{' when made, its members, then '}' and `end` when it goes out of
// scope.  Numbers are written with 10 significant digits (the stream's precision is restored).
class JsonLine {
 public:
  explicit JsonLine(std::ostream& os, const char* end = "\n");
  ~JsonLine();
  JsonLine(const JsonLine&) = delete;
  JsonLine& operator=(const JsonLine&) = delete;

  JsonMembers members;

 private:
  std::ostream& os_;
  const char* end_;
  std::streamsize precision_;
};

}  // namespace marionette

#pragma GCC visibility pop
