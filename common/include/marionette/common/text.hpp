// SPDX-License-Identifier: BSD-3-Clause
// Internal (not installed): small text helpers shared by the libraries and front ends.
#pragma once

#include <string>
#include <vector>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// "a, b, c" (or with another separator).
std::string joinNames(const std::vector<std::string>& names, const std::string& separator = ", ");

// The `name` member of each item, in order.
template <class T>
std::vector<std::string> itemNames(const std::vector<T>& items) {
  std::vector<std::string> out;
  out.reserve(items.size());
  for (const auto& x : items) out.push_back(x.name);
  return out;
}

// "a,b,,c" -> {"a", "b", "c"}: the non-empty items between commas.
std::vector<std::string> splitCommas(const std::string& text);

// `text` without leading and trailing blanks (spaces, tabs, CR, LF).
std::string trimmed(const std::string& text);
// "NAME=VALUE" split at its first '=', both trimmed: false when there is no '=' or the name is
// empty (what every NAME=VALUE list of the project's texts and flags is made of).
bool splitNameValue(const std::string& item, std::string& name, std::string& value);

// Every field between separators, each trimmed: "a, b,,c," -> {"a", "b", "", "c", ""}.
std::vector<std::string> splitFields(const std::string& text, char separator);

// Whether the whole of `text` is one finite decimal number -- [+-] digits [. digits]
// [e [+-] digits] (or [+-] . digits ...), no blanks, hexadecimal, inf or nan: the one number
// grammar of every flag, model, scene and rig file -- and if so, it is in `value`.
bool parseFiniteNumber(const std::string& text, double& value);

// printf into a string (at most 511 characters).
std::string formatted(const char* format, ...) __attribute__((format(printf, 1, 2)));

// A number with up to `digits` significant digits ("%.*g").
std::string formatNumber(double x, int digits = 10);

// Bytes from outside (a device's reply, a peer's line) as printable ASCII for a log or a
// message: every byte outside 0x20..0x7e as \xNN, and at most `max_bytes` of the input (then
// "...").
std::string printableBytes(const std::string& bytes, std::size_t max_bytes = 256);

}  // namespace marionette

#pragma GCC visibility pop
