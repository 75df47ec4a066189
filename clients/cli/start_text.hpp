// SPDX-License-Identifier: BSD-3-Clause
// The CLI's --start text: "rest", "q:NAME=V,..." (joints set, the rest pose of the inputs
// otherwise) or "rest-of:VAR=V,..." (the rest pose of those inputs, the others at their
// defaults) -- for a plan or simulation in-process, or as the service's v1::Start.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "marionette/models/simulation.hpp"
#include "marionette/planner/planner.hpp"
#include "marionette/v1/planner.pb.h"

namespace marionette::cli {

struct StartText {
  std::string text;
  std::vector<std::pair<std::string, double>> input_values;  // rest-of: kinematic variables
  StartSpec spec;                                            // rest / q:
};

// Throws std::invalid_argument naming --start.
StartText parseStartText(const std::string& text);
// For `model`, in-process: the request's start_inputs (defaults with the named ones), start and
// start_text.  Throws std::invalid_argument naming --start and the variable.
void applyStartText(const Model& model, const StartText& start, PlanRequest& request);
// As the service takes it.
v1::Start startToProto(const StartText& start);

}  // namespace marionette::cli
