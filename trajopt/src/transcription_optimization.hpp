// SPDX-License-Identifier: BSD-3-Clause
// optimizePlan's transcription engine: the plan's motion, held at its end for the settle time, as
// the warm start of the contact-implicit transcription (transcription_problem.hpp), solved by
// Ipopt within an iteration budget, its inputs re-simulated and verified as every plan is.
#pragma once

#include "marionette/common/clock.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"

namespace marionette::detail {

// Fills out (whose plan is `plan`) as optimizePlan does; out.report.improved when the result
// replaced the plan.  Throws PlanCancelled when `cancelled` says stop.
void transcribePlan(const MotionProblem& request, const CollisionModelPtr& collision,
                    const Plan& plan, const OptimizationOptions& options,
                    SteadyClock::time_point t0, const CancelFn& cancelled, OptimizedPlan& out);

}  // namespace marionette::detail
