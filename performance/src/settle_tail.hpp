// SPDX-License-Identifier: BSD-3-Clause
// The end of a performance brought to rest (docs/performance.md, "The end settles"): the motion's
// last state is a start like any plan's, swinging, and the contact-implicit transcription (the
// optimizer every plan ends at rest with) finds the rig's motion from its last inputs back to
// them with the puppet at rest, strings and contacts as complementarity; its inputs are appended
// to the performance's.  Where its tail is not kept, the performance's own receding horizon holds
// the puppet at rest instead (settleByTracking).
//
// Contents
//   SettleTail        a tail's inputs, or why none
//   settleTail        the transcription's tail
//   settleByTracking  the windows' tail
//   EndSettling       what settling a performance's end needs of its planning
//   settleEnd         the two tried in turn, the first kept appended
#pragma once

#include <Eigen/Core>
#include <functional>
#include <string>
#include <vector>

#include "marionette/environments/collision.hpp"
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

struct EndSettling {
  const MotionProblem* request = nullptr;  // the performance's plan request (its end's goal)
  const CollisionModel* collision = nullptr;
  double settle_s = 1.0;         // the hold after the end that is measured
  double margin_m = 0.0;         // kept from the stage
  std::vector<int> disabled;     // rig inputs held at start_inputs throughout
  Eigen::VectorXd start_inputs;  // n_k
  std::function<Plan(const Eigen::MatrixXd&)> plan_of;  // the verified plan of these inputs
  HorizonTracking windows;  // the dynamics step's setup (settleByTracking's `like`)
  // The caller's deadline: the time left, > 0 (0: none; one already passed is the caller's to
  // say, settleEnd is not called), and in_time (set with it), false once it has passed or the
  // call is cancelled; how the plan's message names it.
  double time_left_s = 0.0;
  std::function<bool()> in_time;
  std::string deadline;
};

// The end of `out` (a performance measured with settle_s, exact, and swinging after its end)
// brought to rest: the transcription's tail over max(settle_s, 1.5 s) (settleTail); where that
// one is not kept, the windows over max(settle_s, 2.5 s) holding every point of the puppet where
// it rests at the last inputs (settleByTracking; free points too: settling is of the whole
// puppet, not a performance's calm).  A tail is appended, and `out` replaced by the settled plan,
// only when the whole plan, re-simulated, stays exact, leaves less swing after the end and snaps
// no more (not "pulls no harder": a plan's tension ratios are to the loads at its start and at
// rest after its end, which a tail moves).  Disabled inputs stay where they are.  Iterations
// decide both (the transcription's 100 a solve, 20 a window); the windows are not tried once the
// deadline has passed.  Returns the note for the plan's message: what settled it, or why nothing
// did.
std::string settleEnd(const EndSettling& end, Plan& out);

}  // namespace marionette::detail
