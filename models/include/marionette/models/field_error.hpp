// SPDX-License-Identifier: BSD-3-Clause
// What the libraries throw for an argument that is wrong: the field, named as the library's own
// types name it, and the problem.  Front ends say it in their words -- the CLI as its flag
// ("--start: ..."), the service as its proto field ("start.position_values[theta9]: ...") --
// so that no library text speaks of a flag a gRPC client never typed.
//
// Field paths: a struct member by its name ("dt_s", "options.time_limit_s"), a list entry by
// its index ("goal.points[1]"), a named entry in quotes ("start.positions[\"theta9\"]").  The
// first component is the argument: "start", "goal", "options", "dt_s", "duration_s", ...
#pragma once

#include <stdexcept>
#include <string>

#include "marionette/models/error.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

class FieldError : public ErrorOf<std::invalid_argument> {
 public:
  FieldError(std::string field, std::string problem)
      : ErrorOf<std::invalid_argument>(field + ": " + problem, field),
        problem_(std::move(problem)) {}
  const std::string& problem() const { return problem_; }
  // The field's first component ("start" of "start.positions[\"theta9\"]").
  std::string argument() const { return field().substr(0, field().find_first_of(".[")); }
  // The rest after the argument ("positions[\"theta9\"]"; "" when the field is the argument).
  std::string member() const {
    const std::size_t end = field().find_first_of(".[");
    if (end == std::string::npos) return "";
    return field().substr(field()[end] == '.' ? end + 1 : end);
  }

 private:
  std::string problem_;
};

// Whether `field` is `prefix` or lies under it ("start" covers "start.positions[\"x\"]" and
// "start[0]", not "start_inputs"): how front ends find the words for a field.
inline bool fieldWithin(const std::string& field, const std::string& prefix) {
  return field.compare(0, prefix.size(), prefix) == 0 &&
         (field.size() == prefix.size() || field[prefix.size()] == '.' ||
          field[prefix.size()] == '[');
}

// "name" -> "[\"name\"]": a named entry of a field path.
inline std::string fieldKey(const std::string& name) {
  return "[\"" + name + "\"]";
}

}  // namespace marionette

#pragma GCC visibility pop
