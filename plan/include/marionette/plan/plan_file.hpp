// SPDX-License-Identifier: BSD-3-Clause
// The plan file (JSON, docs/plan-format.md) and the inputs CSV that `marionette simulate
// --inputs` reads, written and read back.
//
// Contents
//   writePlanJson / writeInputsCsv   the two formats.
//   PlanFileError                    a file that is not a readable plan; names file and field.
//   readPlanJson / readPlanFile      a plan file back into a Plan (everything the file holds).
#pragma once

#include <cstddef>
#include <ostream>
#include <stdexcept>
#include <string>

#include "marionette/models/error.hpp"
#include "marionette/plan/plan.hpp"

#pragma GCC visibility push(default)  // the library's API (docs/design.md, layout)

namespace marionette {

// The JSON plan format (docs/plan-format.md).
void writePlanJson(const Plan& plan, std::ostream& out);
// "t,<input names>" rows: the format `marionette simulate --inputs` reads.
void writeInputsCsv(const Plan& plan, std::ostream& out);

// The largest plan file read (yaml-cpp takes ~250 bytes of memory per byte of JSON): a plan of
// 60 s at 50 Hz for marionette25 is ~1 MB.
constexpr std::size_t kMaxPlanFileBytes = 32 << 20;

// What a plan file that cannot be read throws: what() reads "SOURCE: FIELD: problem" (or
// "SOURCE:LINE: not a plan file (...)" when the JSON itself is broken, e.g. truncated).
class PlanFileError : public ErrorOf<std::invalid_argument> {
 public:
  using ErrorOf<std::invalid_argument>::ErrorOf;
};

// Parses plan JSON text as writePlanJson writes it; `source` names it in messages.  Checks the
// format and that every matrix is rectangular, finite and as long as the inputs; it does not
// judge the plan (collisions, limits): callers decide.  Statistics are not read back.
Plan readPlanJson(const std::string& text, const std::string& source);
Plan readPlanFile(const std::string& path);  // the same from a file

}  // namespace marionette

#pragma GCC visibility pop
