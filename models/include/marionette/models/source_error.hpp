// SPDX-License-Identifier: BSD-3-Clause
// Errors in description files (models, scenes): each names the file, the 1-based line and the
// field, so that "models/x.yaml:12: masses[2].mass: must be > 0 kg (got -0.1)" points at the
// mistake.
#pragma once

#include <stdexcept>
#include <string>

#include "marionette/models/error.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// A description error. what() reads "file:line: field: message" with the parts known.
class SourceError : public ErrorOf<std::runtime_error> {
 public:
  SourceError(std::string file, int line, std::string field, const std::string& message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }  // 1-based; 0 when unknown
  const std::string& message() const { return message_; }

 private:
  std::string file_, message_;
  int line_;
};

// Where a description item came from, for error messages.
struct SourceRef {
  std::string field;  // e.g. "masses[2].mass"
  int line = 0;       // 1-based line in the source file, 0 if built in code
};

}  // namespace marionette

#pragma GCC visibility pop
