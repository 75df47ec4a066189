// SPDX-License-Identifier: BSD-3-Clause
// What every optimizer's result goes through before it replaces a plan: the exact re-simulation
// and checks of planMotion's verification, and a ranking against the plan it would replace.
#pragma once

#include <string>

#include "marionette/common/clock.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"

namespace marionette::detail {

// `candidate` (a plan's request with new inputs at its rate_hz) re-simulated, verified and
// classified as every plan is, keeping options.margin_m, its input limits checked across the
// join with options.rig_history; false with `why` when its re-simulation fails.
bool verifyCandidate(const MotionProblem& request, const CollisionModelPtr& collision,
                     Plan& candidate, const OptimizationOptions& options, std::string& why);

// Whether `candidate` (verified by verifyCandidate), measured with the judge's 1 s hold, is
// exact and stage-worthy (stageShortfalls, with the stage margin at least margin_m).
bool stageWorthy(const MotionProblem& request, const CollisionModel& collision, Plan candidate,
                 double margin_m);

// `candidate` (plan's request with new inputs at plan.rate_hz) verified as every plan is. It
// replaces out.plan when it ranks no lower (exact and keeping options.margin_m, above exact
// short of the margin only, above anything else) -- but never, both short of the margin, when it
// is nearer the stage than the plan.  Sets out.report's improved, message and time_s (since t0).
void acceptCandidate(const MotionProblem& request, const CollisionModelPtr& collision,
                     const Plan& plan, Plan candidate, const OptimizationOptions& options,
                     SteadyClock::time_point t0, OptimizedPlan& out);

}  // namespace marionette::detail
