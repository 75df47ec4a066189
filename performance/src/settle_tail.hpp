// SPDX-License-Identifier: BSD-3-Clause
// The end of a performance brought to rest (docs/performance.md, "The end settles"): the motion's
// last state is a start like any plan's, swinging, and the contact-implicit transcription (the
// optimizer every plan ends at rest with) finds the rig's motion from its last inputs back to
// them with the puppet at rest, strings and contacts as complementarity; its inputs are appended
// to the performance's.
#pragma once

#include <Eigen/Core>
#include <string>

#include "marionette/plan/plan.hpp"
#include "marionette/problem/motion_problem.hpp"

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

}  // namespace marionette::detail
