// SPDX-License-Identifier: BSD-3-Clause
// Internal: a request's OMPL parameters, checked and set on a planner.  OMPL checks none of
// their values (goal_bias = 2 or range = -1 were taken; nan, or kpiece's bad_score_factor = 0,
// broke the search), so the ranges of the parameters the built-in planners have are kept here
// (from OMPL's range suggestions and documentation: the score factors are in (0, 1]).
#pragma once

#include <ompl/base/Planner.h>

#include <map>
#include <string>

namespace marionette::detail {

// Sets `params` on `planner`; FieldError("options.parameters[\"NAME\"]") when the planner has no such
// parameter, the value is outside its range, or OMPL refuses it.  `name`: the planner's, for
// the message.
void applyParameters(ompl::base::Planner& planner, const std::string& name,
                     const std::map<std::string, std::string>& params);

}  // namespace marionette::detail
