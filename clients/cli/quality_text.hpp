// SPDX-License-Identifier: BSD-3-Clause
// A plan's quality and stage verdict in words, as `plan`, `optimize` and `perform` print them:
//   quality: input jerk rms 440 /s^3; 18 string catches, 3 snaps; peak tension x39 (...); ...
//   not stage-worthy: 3 snaps (the first: leg_r_front at 0.62 s); ...
#pragma once

#include <ostream>

#include "marionette/plan/plan.hpp"
#include "marionette/problem/plan_quality.hpp"

namespace marionette::cli {

// Both lines when the plan's quality was measured, nothing otherwise.  A performance's verdict
// leaves its outcome out (`with_outcome` false): the headline says whether its targets were
// followed, this line how the motion stages.
void printQuality(const Plan& plan, std::ostream& os, const StageThresholds& limits = {},
                  bool with_outcome = true);

}  // namespace marionette::cli
