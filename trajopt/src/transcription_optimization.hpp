// SPDX-License-Identifier: BSD-3-Clause
// optimizePlan's transcription engine.  The warm start is the best of the smooth motions near
// the plan (warm_starts.hpp), held at its end for the settle time; the contact-implicit
// transcription (transcription_problem.hpp) of it, on knots at 25 Hz or more, is solved by Ipopt
// at fixed modes (each loaded string taut throughout, the others as the warm start has them; no
// string pulling more than 2.5 times its load; the stops the warm start does not near held off as
// bounds), stopped when converged for a plan's purposes (its rows met and its objective flat, or
// an iterate re-simulated, checked every ten iterations, found stage-worthy) or out of
// iterations; the plan's inputs interpolate its knots and are re-simulated and verified as every
// plan is.
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>

#include "marionette/common/clock.hpp"
#include "marionette/models/simulation.hpp"
#include "marionette/trajopt/trajectory_optimization.hpp"
#include "transcription_problem.hpp"
#include "warm_starts.hpp"

namespace marionette::detail {

// The knots of the first solve: every this many plan steps, at no less than 25 Hz.
int coarseKnotFactor(double rate_hz);

// One solve's transcription before it is solved: the problem (its modes set, its objective
// scaled at the start), the start, and what the report says of it.
struct PreparedTranscription {
  std::unique_ptr<TranscriptionProblem> problem;
  Eigen::VectorXd z0;
  std::string method;  // "contact-implicit transcription ..., 88 steps of 0.04 s, from ..."
};
// The transcription of `plan` on knots every factor-th plan step, from the best warm start; its
// knots kept the stage-worthy distance from anything when `stage_worthy_distance`
// (PlanMargins), else 2 mm.
PreparedTranscription prepareTranscription(const MotionProblem& request,
                                           const CollisionModelPtr& collision, const Plan& plan,
                                           const OptimizationOptions& options,
                                           const WarmStarts& warm, const StartState& start,
                                           int factor, bool stage_worthy_distance = false);

// Fills out (whose plan is `plan`) as optimizePlan does; out.report.improved when the result
// replaced the plan.  `progress` (if set) hears of every solver iteration (phase "optimize").
// Throws PlanCancelled when `cancelled` says stop.
void transcribePlan(const MotionProblem& request, const CollisionModelPtr& collision,
                    const Plan& plan, const OptimizationOptions& options,
                    SteadyClock::time_point t0, const ProgressFn& progress,
                    const CancelFn& cancelled, OptimizedPlan& out);

}  // namespace marionette::detail
