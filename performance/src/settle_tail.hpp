// SPDX-License-Identifier: BSD-3-Clause
// The end of a performance brought to rest (docs/performance.md, "The end settles"): the motion's
// last state is a start like any plan's, swinging, and the contact-implicit transcription (the
// optimizer every plan ends at rest with) finds the rig's motion from its last inputs back to
// them with the puppet at rest, strings and contacts as complementarity; its inputs are appended
// to the performance's.  Where its tail is not kept, the performance's own receding horizon holds
// the puppet at rest instead (settleByTracking).
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "marionette/plan/plan.hpp"
#include "marionette/problem/motion_problem.hpp"
#include "marionette/trajopt/horizon_tracking.hpp"

namespace marionette::detail {

struct SettleTail {
  Eigen::MatrixXd inputs;  // the rows after the performance's last (empty: none found)
  std::string message;     // why none, or what the optimizer did
  int iterations = 0;
};

// `performance`: a verified plan of `request`'s model and collision model (its last two
// predicted samples give the start's velocity).  `tail_s`: the tail's length; `margin_m` kept
// from the stage.  Iterations bound it (the optimizer's 100); `time_limit_s` is a deadline that
// only stops it (0: none).
SettleTail settleTail(const MotionProblem& request, const Plan& performance, double tail_s,
                      double margin_m, double time_limit_s);

// Where the transcription's tail is not kept (at its fixed modes a swing the strings must catch
// has no motion to rest): the receding horizon, as the performance's dynamics step runs it, over
// `tail_s` after the last sample -- from the last state, the rig going on from its last steps --
// holding `points` (model point indices) where they rest at the last inputs, the rig near them.
// `like`: the dynamics step's setup (model, collision, rate, weights, margin, held inputs, input
// scales, deadline); its start, reference and targets are replaced.  Its windows' iterations bound
// it; a deadline that stops it, or windows that all keep holding the last inputs, leave no tail
// (the message says why).
SettleTail settleByTracking(HorizonTracking like, const Plan& performance, double tail_s,
                            const std::vector<int>& points);

}  // namespace marionette::detail
