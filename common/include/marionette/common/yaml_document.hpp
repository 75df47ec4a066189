// SPDX-License-Identifier: BSD-3-Clause
// Internal (not installed): one YAML document from text, checked for what yaml-cpp lets pass.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// The largest description (model, scene, rig file) read: yaml-cpp takes ~250 bytes of memory per
// byte of a dense document, so this bounds one at ~64 MB.  The largest built-in is 16 KB.
constexpr std::size_t kMaxDescriptionBytes = 256 << 10;

// What loadYamlDocument refuses: the line (1-based; 0 = the whole text), the field path of the
// key at fault ("" for the document) and the problem.
class YamlDocumentError : public std::runtime_error {
 public:
  YamlDocumentError(int line, std::string field, const std::string& problem)
      : std::runtime_error(problem), line_(line), field_(std::move(field)) {}
  int line() const { return line_; }
  const std::string& field() const { return field_; }

 private:
  int line_;
  std::string field_;
};

// Parses exactly one YAML document of at most max_bytes.  A leading UTF-8 byte-order mark is
// skipped.  Refused: a longer text, a syntax error, a second document, and a key repeated within
// one mapping (yaml-cpp would keep the first silently: `gravity: 9.81` then `gravity: 1.0`
// simulated 9.81), and aliases that expand beyond 4 x max_bytes nodes.
YAML::Node loadYamlDocument(const std::string& text, std::size_t max_bytes = kMaxDescriptionBytes);

}  // namespace marionette

#pragma GCC visibility pop
